import { appError } from "@intentmesh/contracts";

/**
 * The expressions of plan conditions (RFC 0012 2.4, `when`): a small, safe subset parsed here and
 * evaluated over plain data, never handed to eval or Function. docs/plans.md lists the grammar:
 *
 *   expr    := or
 *   or      := and (("or" | "||") and)*
 *   and     := not (("and" | "&&") not)*
 *   not     := ("not" | "!") not | compare
 *   compare := operand (("==" | "!=" | ">" | ">=" | "<" | "<=" | "in") operand)?
 *   operand := number | 'string' | "string" | true | false | null | path | "(" expr ")"
 *   path    := ("tasks" | "intent" | "plan") ("." name | "[" (string | integer) "]")*
 *
 * (Python's True, False and None are accepted as well: the RFC writes Python-style examples.)
 * A path that leads nowhere is null. Comparisons never throw: < > <= >= hold only between two
 * numbers or two strings; `in` holds for an element of an array, a substring of a string or a
 * key of an object. Truthiness is Python's: null, false, 0, "", [] and {} are false.
 */

export type Expression =
  | { kind: "literal"; value: unknown }
  | { kind: "path"; root: "tasks" | "intent" | "plan"; keys: (string | number)[] }
  | { kind: "not"; operand: Expression }
  | { kind: "logic"; op: "and" | "or"; left: Expression; right: Expression }
  | { kind: "compare"; op: CompareOp; left: Expression; right: Expression };

type CompareOp = "==" | "!=" | ">" | ">=" | "<" | "<=" | "in";

export const MAX_EXPRESSION_DEPTH = 32;
const ROOTS = ["tasks", "intent", "plan"] as const;
const LITERALS = new Map<string, unknown>([
  ["true", true],
  ["True", true],
  ["false", false],
  ["False", false],
  ["null", null],
  ["None", null],
]);

type Token = { type: "num"; value: number } | { type: "str"; value: string } | { type: "word"; value: string } | { type: "op"; value: string };

const OPERATORS = ["==", "!=", ">=", "<=", "&&", "||", ">", "<", "!", "(", ")", "[", "]", "."];

function invalid(source: string, why: string): never {
  throw appError("VALIDATION_FAILED", `the condition ${JSON.stringify(source.slice(0, 200))} is not a valid expression: ${why}`, { when: source.slice(0, 200), reason: why });
}

function tokenize(source: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i += 1;
      continue;
    }
    if (c === "'" || c === '"') {
      let value = "";
      let j = i + 1;
      for (; j < source.length && source[j] !== c; j += 1) {
        if (source[j] === "\\" && j + 1 < source.length) j += 1;
        value += source[j];
      }
      if (j >= source.length) invalid(source, "a string is not closed");
      out.push({ type: "str", value });
      i = j + 1;
      continue;
    }
    const number = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(source.slice(i));
    // A minus sign starts a number only where an operand may start.
    if (number && (c !== "-" || !out.length || (out.at(-1)!.type === "op" && !["]", ")"].includes(String(out.at(-1)!.value))))) {
      out.push({ type: "num", value: Number(number[0]) });
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(i));
    if (word) {
      out.push({ type: "word", value: word[0] });
      i += word[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => source.startsWith(o, i));
    if (!op) invalid(source, `unexpected character ${JSON.stringify(c)} at ${i}`);
    out.push({ type: "op", value: op });
    i += op.length;
  }
  return out;
}

/** Parses a condition; throws 400 VALIDATION_FAILED naming what is wrong. */
export function parseExpression(source: string): Expression {
  const tokens = tokenize(source);
  let pos = 0;
  const peek = () => tokens[pos];
  const isOp = (value: string) => peek()?.type === "op" && peek()!.value === value;
  const isWord = (value: string) => peek()?.type === "word" && peek()!.value === value;
  const expect = (value: string) => {
    if (!isOp(value)) invalid(source, `expected ${value}`);
    pos += 1;
  };
  const guard = (depth: number) => {
    if (depth > MAX_EXPRESSION_DEPTH) invalid(source, `nested deeper than ${MAX_EXPRESSION_DEPTH}`);
  };

  const parseOr = (depth: number): Expression => {
    guard(depth);
    let left = parseAnd(depth + 1);
    while (isWord("or") || isOp("||")) {
      pos += 1;
      left = { kind: "logic", op: "or", left, right: parseAnd(depth + 1) };
    }
    return left;
  };
  const parseAnd = (depth: number): Expression => {
    let left = parseNot(depth + 1);
    while (isWord("and") || isOp("&&")) {
      pos += 1;
      left = { kind: "logic", op: "and", left, right: parseNot(depth + 1) };
    }
    return left;
  };
  const parseNot = (depth: number): Expression => {
    guard(depth);
    if (isWord("not") || isOp("!")) {
      pos += 1;
      return { kind: "not", operand: parseNot(depth + 1) };
    }
    return parseCompare(depth + 1);
  };
  const parseCompare = (depth: number): Expression => {
    const left = parseOperand(depth + 1);
    const token = peek();
    const op = token && ((token.type === "op" && ["==", "!=", ">", ">=", "<", "<="].includes(token.value)) || (token.type === "word" && token.value === "in")) ? (token.value as CompareOp) : null;
    if (!op) return left;
    pos += 1;
    return { kind: "compare", op, left, right: parseOperand(depth + 1) };
  };
  const parseOperand = (depth: number): Expression => {
    guard(depth);
    const token = peek();
    if (!token) invalid(source, "it ends where a value is expected");
    pos += 1;
    if (token.type === "num" || token.type === "str") return { kind: "literal", value: token.value };
    if (token.type === "op" && token.value === "(") {
      const inner = parseOr(depth + 1);
      expect(")");
      return inner;
    }
    if (token.type === "word") {
      if (LITERALS.has(token.value)) return { kind: "literal", value: LITERALS.get(token.value) };
      if ((ROOTS as readonly string[]).includes(token.value)) return parsePath(token.value as (typeof ROOTS)[number]);
      invalid(source, `unknown name ${JSON.stringify(token.value)}; a path starts with tasks, intent or plan`);
    }
    invalid(source, `unexpected ${JSON.stringify(token.value)}`);
  };
  const parsePath = (root: (typeof ROOTS)[number]): Expression => {
    const keys: (string | number)[] = [];
    for (;;) {
      if (isOp(".")) {
        pos += 1;
        const name = peek();
        if (name?.type !== "word") invalid(source, "a name must follow a dot");
        keys.push(name.value);
        pos += 1;
      } else if (isOp("[")) {
        pos += 1;
        const key = peek();
        if (key?.type === "str") keys.push(key.value);
        else if (key?.type === "num" && Number.isInteger(key.value)) keys.push(key.value);
        else invalid(source, "an index is a string or an integer");
        pos += 1;
        expect("]");
      } else return { kind: "path", root, keys };
    }
  };

  if (!tokens.length) invalid(source, "it is empty");
  const expression = parseOr(0);
  if (pos < tokens.length) invalid(source, `unexpected ${JSON.stringify(String(tokens[pos]!.value))} after the end`);
  return expression;
}

/** The tasks a condition names: the first key after `tasks` (an id or a title). */
export function namedTasks(expression: Expression): string[] {
  switch (expression.kind) {
    case "literal":
      return [];
    case "path":
      return expression.root === "tasks" && expression.keys.length ? [String(expression.keys[0])] : [];
    case "not":
      return namedTasks(expression.operand);
    case "logic":
    case "compare":
      return [...new Set([...namedTasks(expression.left), ...namedTasks(expression.right)])];
  }
}

/** What a condition reads: tasks by id and by title, the intent and the plan. */
export interface ExpressionScope {
  tasks: Record<string, unknown>;
  intent: unknown;
  plan: unknown;
}

export function truthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

function lookup(value: unknown, key: string | number): unknown {
  if (value === null || typeof value !== "object") return null;
  if (Array.isArray(value)) return typeof key === "number" ? (value[key < 0 ? value.length + key : key] ?? null) : null;
  return Object.hasOwn(value, String(key)) ? (value as Record<string, unknown>)[String(key)] : null;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

function compare(op: CompareOp, a: unknown, b: unknown): boolean {
  switch (op) {
    case "==":
      return equal(a, b);
    case "!=":
      return !equal(a, b);
    case "in":
      if (Array.isArray(b)) return b.some((item) => equal(item, a));
      if (typeof b === "string") return typeof a === "string" && b.includes(a);
      if (b !== null && typeof b === "object") return (typeof a === "string" || typeof a === "number") && Object.hasOwn(b, String(a));
      return false;
    default: {
      const ordered = (typeof a === "number" && typeof b === "number") || (typeof a === "string" && typeof b === "string");
      if (!ordered) return false;
      const x = a as number | string;
      const y = b as number | string;
      return op === ">" ? x > y : op === ">=" ? x >= y : op === "<" ? x < y : x <= y;
    }
  }
}

/** The value of an expression over the scope; never throws. */
export function evaluate(expression: Expression, scope: ExpressionScope): unknown {
  switch (expression.kind) {
    case "literal":
      return expression.value;
    case "path":
      return expression.keys.reduce<unknown>((value, key) => lookup(value, key), scope[expression.root] ?? null);
    case "not":
      return !truthy(evaluate(expression.operand, scope));
    case "logic": {
      const left = truthy(evaluate(expression.left, scope));
      if (expression.op === "and") return left && truthy(evaluate(expression.right, scope));
      return left || truthy(evaluate(expression.right, scope));
    }
    case "compare":
      return compare(expression.op, evaluate(expression.left, scope), evaluate(expression.right, scope));
  }
}
