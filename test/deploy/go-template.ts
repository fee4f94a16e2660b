import { createHash } from "node:crypto";
import { stringify as yamlStringify } from "yaml";

/**
 * A Go text/template interpreter with the Sprig and Helm functions the intentmesh chart uses, so
 * the test suite renders the chart without a helm binary (none can be installed here). It follows
 * Go's semantics where the chart depends on them: `{{-`/`-}}` trimming, pipelines passing the
 * value as the last argument, truthiness, `$` and variable scopes, `range` over sorted map keys,
 * `define`/`include`/`template`, nil printing as "" (Helm's missingkey handling) and an error for
 * a field of nil. Anything outside the subset is an error, never a silent guess.
 */

type Value = unknown;
type Scope = Map<string, Value>[];

interface Node {
  kind: "text" | "action" | "if" | "range" | "with" | "template";
}
interface TextNode extends Node {
  kind: "text";
  text: string;
}
interface ActionNode extends Node {
  kind: "action";
  pipe: Pipeline;
}
interface BranchNode extends Node {
  kind: "if" | "range" | "with";
  pipe: Pipeline;
  body: Node[];
  otherwise: Node[];
}
interface TemplateNode extends Node {
  kind: "template";
  name: string;
  pipe: Pipeline | null;
}
interface Pipeline {
  decl: string[];
  assign: ":=" | "=" | null;
  commands: Operand[][];
}
type Operand =
  | { kind: "field"; base: "dot" | string; path: string[] }
  | { kind: "literal"; value: Value }
  | { kind: "fn"; name: string }
  | { kind: "sub"; pipe: Pipeline; path: string[] };

export class TemplateError extends Error {}

// ---- lexing -------------------------------------------------------------------------------

interface Piece {
  text?: string;
  action?: string;
}

function split(source: string): Piece[] {
  const pieces: Piece[] = [];
  let at = 0;
  for (;;) {
    const open = source.indexOf("{{", at);
    if (open < 0) {
      pieces.push({ text: source.slice(at) });
      return trimMarkers(pieces);
    }
    pieces.push({ text: source.slice(at, open) });
    const close = findClose(source, open + 2);
    pieces.push({ action: source.slice(open + 2, close) });
    at = close + 2;
  }
}

/** The `}}` closing an action, skipping strings and comments that may contain one. */
function findClose(source: string, from: number): number {
  let i = from;
  while (i < source.length) {
    const c = source[i]!;
    if (source.startsWith("/*", i)) {
      const end = source.indexOf("*/", i + 2);
      if (end < 0) throw new TemplateError("unclosed comment");
      i = end + 2;
    } else if (c === '"') {
      i++;
      while (i < source.length && source[i] !== '"') i += source[i] === "\\" ? 2 : 1;
      i++;
    } else if (c === "`") {
      i = source.indexOf("`", i + 1) + 1;
    } else if (source.startsWith("}}", i)) return i;
    else i++;
  }
  throw new TemplateError("unclosed action");
}

function trimMarkers(pieces: Piece[]): Piece[] {
  for (let i = 0; i < pieces.length; i++) {
    const action = pieces[i]!.action;
    if (action === undefined) continue;
    if (/^-\s/.test(action) || action === "-") {
      const before = pieces[i - 1];
      if (before?.text !== undefined) before.text = before.text.replace(/\s+$/, "");
      pieces[i]!.action = action.slice(1);
    }
    const current = pieces[i]!.action!;
    if (/\s-$/.test(current)) {
      const after = pieces[i + 1];
      if (after?.text !== undefined) after.text = after.text.replace(/^\s+/, "");
      pieces[i]!.action = current.slice(0, -1);
    }
  }
  return pieces;
}

/** `glued`: written right after the previous token, as in `(expr).Field` (a field of the result, not an argument). */
type Token = { t: "ident" | "field" | "var" | "string" | "number" | "(" | ")" | "|" | ":=" | "=" | ","; v: string; glued?: boolean };

function tokenize(action: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < action.length) {
    const c = action[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const rest = action.slice(i);
    let m: RegExpExecArray | null;
    if (rest.startsWith(":=")) {
      tokens.push({ t: ":=", v: ":=" });
      i += 2;
    } else if ("()|=,".includes(c)) {
      tokens.push({ t: c as Token["t"], v: c });
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < action.length && action[j] !== '"') j += action[j] === "\\" ? 2 : 1;
      tokens.push({ t: "string", v: JSON.parse(action.slice(i, j + 1)) as string });
      i = j + 1;
    } else if (c === "`") {
      const j = action.indexOf("`", i + 1);
      tokens.push({ t: "string", v: action.slice(i + 1, j) });
      i = j + 1;
    } else if ((m = /^\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*/.exec(rest))) {
      tokens.push({ t: "var", v: m[0] });
      i += m[0].length;
    } else if ((m = /^\.(?:[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)?/.exec(rest))) {
      tokens.push({ t: "field", v: m[0], glued: i > 0 && action[i - 1] === ")" });
      i += m[0].length;
    } else if ((m = /^-?\d+(?:\.\d+)?/.exec(rest))) {
      tokens.push({ t: "number", v: m[0] });
      i += m[0].length;
    } else if ((m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest))) {
      tokens.push({ t: "ident", v: m[0] });
      i += m[0].length;
    } else throw new TemplateError(`unexpected ${JSON.stringify(c)} in {{${action}}}`);
  }
  return tokens;
}

// ---- parsing ------------------------------------------------------------------------------

class Parser {
  private at = 0;
  constructor(private readonly tokens: Token[]) {}

  pipeline(): Pipeline {
    let decl: string[] = [];
    let assign: Pipeline["assign"] = null;
    const save = this.at;
    const vars: string[] = [];
    while (this.peek()?.t === "var") {
      vars.push(this.next().v);
      if (this.peek()?.t === ",") this.next();
      else break;
    }
    if (vars.length && (this.peek()?.t === ":=" || this.peek()?.t === "=")) {
      decl = vars;
      assign = this.next().t as ":=" | "=";
    } else this.at = save;
    const commands: Operand[][] = [[]];
    while (this.peek() && this.peek()!.t !== ")") {
      if (this.peek()!.t === "|") {
        this.next();
        commands.push([]);
        continue;
      }
      commands[commands.length - 1]!.push(this.operand());
    }
    if (commands.some((command) => command.length === 0)) throw new TemplateError("empty command in pipeline");
    return { decl, assign, commands };
  }

  private operand(): Operand {
    const token = this.next();
    switch (token.t) {
      case "field":
        return { kind: "field", base: "dot", path: token.v === "." ? [] : token.v.slice(1).split(".") };
      case "var": {
        const [name, ...path] = token.v.split(".");
        return { kind: "field", base: name!, path };
      }
      case "string":
        return { kind: "literal", value: token.v };
      case "number":
        return { kind: "literal", value: Number(token.v) };
      case "ident":
        if (token.v === "true" || token.v === "false") return { kind: "literal", value: token.v === "true" };
        if (token.v === "nil") return { kind: "literal", value: null };
        return { kind: "fn", name: token.v };
      case "(": {
        const pipe = this.pipeline();
        if (this.next().t !== ")") throw new TemplateError("missing )");
        let path: string[] = [];
        if (this.peek()?.t === "field" && this.peek()!.glued && this.peek()!.v !== ".") path = this.next().v.slice(1).split(".");
        return { kind: "sub", pipe, path };
      }
      default:
        throw new TemplateError(`unexpected ${token.v}`);
    }
  }

  done(): boolean {
    return this.at >= this.tokens.length;
  }
  peek(): Token | undefined {
    return this.tokens[this.at];
  }
  next(): Token {
    const token = this.tokens[this.at++];
    if (!token) throw new TemplateError("unexpected end of action");
    return token;
  }
}

interface Parsed {
  nodes: Node[];
  defines: Map<string, Node[]>;
}

function parse(source: string, name: string): Parsed {
  const defines = new Map<string, Node[]>();
  const pieces = split(source).filter((piece) => !(piece.action !== undefined && /^\s*\/\*[\s\S]*\*\/\s*$/.test(piece.action)));
  let index = 0;

  // Parses nodes until one of `stops` (else / end); answers the nodes and the stop's tokens.
  const list = (stops: string[]): { nodes: Node[]; stop: Token[] | null } => {
    const nodes: Node[] = [];
    while (index < pieces.length) {
      const piece = pieces[index++]!;
      if (piece.text !== undefined) {
        if (piece.text) nodes.push({ kind: "text", text: piece.text } as TextNode);
        continue;
      }
      const tokens = tokenize(piece.action!);
      const word = tokens[0]?.t === "ident" ? tokens[0].v : "";
      if (stops.includes(word)) return { nodes, stop: tokens };
      if (word === "if" || word === "range" || word === "with") {
        nodes.push(branch(word, tokens.slice(1)));
      } else if (word === "define") {
        const defined = tokens[1];
        if (defined?.t !== "string") throw new TemplateError(`${name}: define needs a name`);
        const body = list(["end"]);
        defines.set(defined.v, body.nodes);
      } else if (word === "template") {
        const parser = new Parser(tokens.slice(2));
        nodes.push({ kind: "template", name: tokens[1]!.v, pipe: parser.done() ? null : parser.pipeline() } as TemplateNode);
      } else if (word === "end" || word === "else") {
        throw new TemplateError(`${name}: unexpected {{${piece.action}}}`);
      } else {
        const parser = new Parser(tokens);
        const pipe = parser.pipeline();
        if (!parser.done()) throw new TemplateError(`${name}: unexpected ) in {{${piece.action}}}`);
        nodes.push({ kind: "action", pipe } as ActionNode);
      }
    }
    if (stops.length) throw new TemplateError(`${name}: missing {{end}}`);
    return { nodes, stop: null };
  };

  const branch = (kind: "if" | "range" | "with", tokens: Token[]): BranchNode => {
    const pipe = new Parser(tokens).pipeline();
    const body = list(["else", "end"]);
    let otherwise: Node[] = [];
    if (body.stop?.[0]?.v === "else") {
      const rest = body.stop.slice(1);
      if (rest[0]?.t === "ident" && (rest[0].v === "if" || rest[0].v === "with")) {
        // `else if` / `else with`: a nested branch that shares this one's end.
        otherwise = [branch(rest[0].v as "if" | "with", rest.slice(1))];
      } else otherwise = list(["end"]).nodes;
    }
    return { kind, pipe, body: body.nodes, otherwise };
  };

  const nodes = list([]).nodes;
  return { nodes, defines };
}

// ---- evaluation ---------------------------------------------------------------------------

const isMap = (value: Value): value is Record<string, Value> => typeof value === "object" && value !== null && !Array.isArray(value);

export function truthy(value: Value): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isMap(value)) return Object.keys(value).length > 0;
  return true;
}

function show(value: Value): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  throw new TemplateError(`cannot print ${JSON.stringify(value).slice(0, 80)}: use toYaml or toJson`);
}

/** JSON with map keys sorted, as Go's encoding/json writes maps. */
function sortedJson(value: Value): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  if (isMap(value)) return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${sortedJson(value[key])}`).join(",")}}`;
  return JSON.stringify(value ?? null);
}

function printf(format: string, args: Value[]): string {
  let i = 0;
  return format.replace(/%([sdvq%])/g, (_m, verb: string) => {
    if (verb === "%") return "%";
    const arg = args[i++];
    if (verb === "q") return JSON.stringify(show(arg));
    if (verb === "d") return String(Math.trunc(Number(arg)));
    return show(arg);
  });
}

export class Renderer {
  private readonly templates = new Map<string, Node[]>();

  /** Adds a file's defines, and the file itself under its name (for `include` of a file path). */
  add(name: string, source: string): void {
    const parsed = parse(source, name);
    for (const [defined, nodes] of parsed.defines) this.templates.set(defined, nodes);
    this.templates.set(name, parsed.nodes);
  }

  render(name: string, dot: Value): string {
    const nodes = this.templates.get(name);
    if (!nodes) throw new TemplateError(`no template ${name}`);
    return this.run(nodes, dot, [new Map([["$", dot]])]);
  }

  private run(nodes: Node[], dot: Value, scope: Scope): string {
    let out = "";
    for (const node of nodes) {
      switch (node.kind) {
        case "text":
          out += (node as TextNode).text;
          break;
        case "action": {
          const { pipe } = node as ActionNode;
          const value = this.pipe(pipe, dot, scope);
          if (!pipe.assign) out += show(value);
          break;
        }
        case "template": {
          const { name, pipe } = node as TemplateNode;
          out += this.render(name, pipe ? this.pipe(pipe, dot, scope) : null);
          break;
        }
        default:
          out += this.branch(node as BranchNode, dot, scope);
      }
    }
    return out;
  }

  private branch(node: BranchNode, dot: Value, scope: Scope): string {
    const inner: Scope = [...scope, new Map()];
    if (node.kind === "range") {
      const source = this.pipe({ ...node.pipe, decl: [], assign: null }, dot, inner);
      const entries: [Value, Value][] = Array.isArray(source)
        ? source.map((item, index) => [index, item])
        : isMap(source)
          ? Object.keys(source).sort().map((key) => [key, source[key]])
          : typeof source === "number"
            ? Array.from({ length: source }, (_v, index) => [index, index])
            : source === null || source === undefined
              ? []
              : (() => {
                  throw new TemplateError(`range over ${typeof source}`);
                })();
      if (!entries.length) return this.run(node.otherwise, dot, inner);
      let out = "";
      for (const [key, item] of entries) {
        const frame: Scope = [...scope, new Map()];
        if (node.pipe.decl.length === 1) frame[frame.length - 1]!.set(node.pipe.decl[0]!, item);
        if (node.pipe.decl.length === 2) {
          frame[frame.length - 1]!.set(node.pipe.decl[0]!, key);
          frame[frame.length - 1]!.set(node.pipe.decl[1]!, item);
        }
        out += this.run(node.body, item, frame);
      }
      return out;
    }
    const value = this.pipe(node.pipe, dot, inner);
    if (!truthy(value)) return this.run(node.otherwise, dot, scope);
    return this.run(node.body, node.kind === "with" ? value : dot, inner);
  }

  private pipe(pipe: Pipeline, dot: Value, scope: Scope): Value {
    let value: Value = undefined;
    let piped = false;
    for (const command of pipe.commands) {
      value = this.command(command, dot, scope, piped ? [value] : []);
      piped = true;
    }
    if (pipe.assign === ":=") scope[scope.length - 1]!.set(pipe.decl[0]!, value);
    if (pipe.assign === "=") {
      const frame = [...scope].reverse().find((f) => f.has(pipe.decl[0]!));
      if (!frame) throw new TemplateError(`undefined variable ${pipe.decl[0]}`);
      frame.set(pipe.decl[0]!, value);
    }
    return value;
  }

  private command(command: Operand[], dot: Value, scope: Scope, piped: Value[]): Value {
    const [head, ...rest] = command;
    if (head!.kind === "fn") {
      const args = [...rest.map((operand) => this.operand(operand, dot, scope)), ...piped];
      return this.call(head!.name, args, dot);
    }
    if (rest.length || piped.length) throw new TemplateError("a value cannot take arguments");
    return this.operand(head!, dot, scope);
  }

  private operand(operand: Operand, dot: Value, scope: Scope): Value {
    switch (operand.kind) {
      case "literal":
        return operand.value;
      case "fn":
        return this.call(operand.name, [], dot);
      case "sub":
        return this.walk(this.pipe(operand.pipe, dot, [...scope, new Map()]), operand.path, "(...)");
      case "field": {
        let base: Value = dot;
        if (operand.base !== "dot") {
          const frame = [...scope].reverse().find((f) => f.has(operand.base));
          if (!frame) throw new TemplateError(`undefined variable ${operand.base}`);
          base = frame.get(operand.base);
        }
        return this.walk(base, operand.path, operand.base === "dot" ? "." : operand.base);
      }
    }
  }

  private walk(base: Value, path: string[], from: string): Value {
    let value = base;
    for (const [i, key] of path.entries()) {
      if (value === null || value === undefined) throw new TemplateError(`nil pointer evaluating ${from}.${path.slice(0, i + 1).join(".")}`);
      if (!isMap(value)) throw new TemplateError(`can't evaluate field ${key} in ${typeof value}`);
      value = value[key];
    }
    return value;
  }

  private call(name: string, args: Value[], dot: Value): Value {
    const str = (value: Value) => (value === null || value === undefined ? "" : typeof value === "string" ? value : show(value));
    switch (name) {
      case "include":
        return this.render(String(args[0]), args[1]);
      case "required":
        if (args[1] === null || args[1] === undefined || args[1] === "") throw new TemplateError(String(args[0]));
        return args[1];
      case "fail":
        throw new TemplateError(String(args[0]));
      case "default":
        return truthy(args[1]) ? args[1] : args[0];
      case "empty":
        return !truthy(args[0]);
      case "dig": {
        const map = args[args.length - 1];
        const fallback = args[args.length - 2];
        let value: Value = map;
        for (const key of args.slice(0, -2)) {
          if (!isMap(value) || !(String(key) in value)) return fallback;
          value = value[String(key)];
        }
        return value;
      }
      case "dict": {
        const out: Record<string, Value> = {};
        for (let i = 0; i < args.length; i += 2) out[String(args[i])] = args[i + 1];
        return out;
      }
      case "list":
        return args;
      case "hasKey":
        return isMap(args[0]) && String(args[1]) in args[0];
      case "get":
        return isMap(args[0]) ? (args[0][String(args[1])] ?? "") : "";
      case "keys":
        return args.flatMap((map) => (isMap(map) ? Object.keys(map) : [])).sort();
      case "len":
        return Array.isArray(args[0]) || typeof args[0] === "string" ? args[0].length : isMap(args[0]) ? Object.keys(args[0]).length : 0;
      case "toYaml":
        return args[0] === null || args[0] === undefined ? "null" : yamlStringify(args[0], { sortMapEntries: true, lineWidth: 0 }).replace(/\n$/, "");
      case "toJson":
        return sortedJson(args[0]);
      case "indent":
        return str(args[1]).split("\n").map((line) => " ".repeat(Number(args[0])) + line).join("\n");
      case "nindent":
        return `\n${str(args[1]).split("\n").map((line) => " ".repeat(Number(args[0])) + line).join("\n")}`;
      case "quote":
        return args.map((arg) => JSON.stringify(str(arg))).join(" ");
      case "squote":
        return args.map((arg) => `'${str(arg)}'`).join(" ");
      case "toString":
        return str(args[0]);
      case "int":
        return Math.trunc(Number(args[0] ?? 0));
      case "trunc":
        return str(args[1]).slice(0, Number(args[0]));
      case "trimSuffix":
        return str(args[1]).endsWith(str(args[0])) ? str(args[1]).slice(0, -str(args[0]).length || undefined) : str(args[1]);
      case "trimPrefix":
        return str(args[1]).startsWith(str(args[0])) ? str(args[1]).slice(str(args[0]).length) : str(args[1]);
      case "trim":
        return str(args[0]).trim();
      case "replace":
        return str(args[2]).split(str(args[0])).join(str(args[1]));
      case "contains":
        return str(args[1]).includes(str(args[0]));
      case "hasPrefix":
        return str(args[1]).startsWith(str(args[0]));
      case "lower":
        return str(args[0]).toLowerCase();
      case "upper":
        return str(args[0]).toUpperCase();
      case "printf":
        return printf(str(args[0]), args.slice(1));
      case "print":
        return args.map(str).join("");
      case "b64enc":
        return Buffer.from(str(args[0])).toString("base64");
      case "sha256sum":
        return createHash("sha256").update(str(args[0])).digest("hex");
      case "eq":
        return args.slice(1).some((other) => other === args[0]);
      case "ne":
        return args[0] !== args[1];
      case "lt":
        return Number(args[0]) < Number(args[1]);
      case "le":
        return Number(args[0]) <= Number(args[1]);
      case "gt":
        return Number(args[0]) > Number(args[1]);
      case "ge":
        return Number(args[0]) >= Number(args[1]);
      case "and":
        return args.find((arg) => !truthy(arg)) ?? args[args.length - 1];
      case "or":
        return args.find((arg) => truthy(arg)) ?? args[args.length - 1];
      case "not":
        return !truthy(args[0]);
      default:
        void dot;
        throw new TemplateError(`function ${name} is not in this renderer's subset`);
    }
  }
}
