import { parse as parseYaml } from "yaml";
import { AppError, appError, MAX_WORKFLOW_PHASES, type WorkflowPhase } from "@intentmesh/contracts";

/**
 * The pure rules of workflow I/O contracts (RFC 0024, docs/workflows.md): named types
 * (`state._io_types`), values checked against a type, a phase's outputs checked on completion,
 * its inputs resolved from upstream outputs on claim, and a YAML definition parsed and checked
 * (RFC 0024 8).
 */

export const PRIMITIVE_TYPES = ["string", "number", "boolean", "object", "array"] as const;
/** A field: a type reference, or {type, required}. */
export type FieldSpec = string | { type: string; required?: boolean };
export type IoTypes = Record<string, Record<string, FieldSpec>>;

const TYPE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
const KEY = /^[A-Za-z_][A-Za-z0-9_-]{0,199}$/;
/** Names that mean something to every JavaScript object: refused as type and phase names. */
const OBJECT_NAMES = new Set(["__proto__", "constructor", "prototype", "hasOwnProperty", "toString", "valueOf"]);
const MAX_TYPES = 200;
const MAX_FIELDS = 200;
const MAX_DEPTH = 32;

export interface Issue {
  path: (string | number)[];
  message: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const typeOfSpec = (spec: FieldSpec) => (typeof spec === "string" ? spec : spec.type);
const isRequired = (spec: FieldSpec) => (typeof spec === "string" ? true : spec.required !== false);

/** The problems of a field declaration: a primitive or a named type of `names`, or {type, required?}. */
function fieldIssues(spec: unknown, names: ReadonlySet<string>, path: (string | number)[]): Issue[] {
  if (isObject(spec)) {
    const extra = Object.keys(spec).filter((k) => k !== "type" && k !== "required");
    if (extra.length) return [{ path, message: `a field is a type name or {type, required}; ${extra.join(", ")} is not allowed` }];
    if (spec.required !== undefined && typeof spec.required !== "boolean") return [{ path: [...path, "required"], message: "required must be true or false" }];
    return fieldIssues(spec.type, names, [...path, "type"]);
  }
  if (typeof spec !== "string") return [{ path, message: "a field's type is a type name (string, number, boolean, object, array, or a named type)" }];
  if (!(PRIMITIVE_TYPES as readonly string[]).includes(spec) && (!names.has(spec) || OBJECT_NAMES.has(spec))) {
    return [{ path, message: `unknown type "${spec}": use string, number, boolean, object, array or a type named in _io_types` }];
  }
  return [];
}

/**
 * `state._io_types` (spec 2.1, RFC 0024 1): an object of named types, each an object of fields.
 * Answers every problem with its path under `_io_types`; empty when it is well formed.
 */
export function ioTypesIssues(value: unknown): Issue[] {
  const root = ["_io_types"];
  if (!isObject(value)) return [{ path: root, message: "_io_types must be an object of named types" }];
  const names = Object.keys(value);
  if (names.length > MAX_TYPES) return [{ path: root, message: `_io_types holds at most ${MAX_TYPES} types` }];
  const known = new Set(names);
  const issues: Issue[] = [];
  for (const name of names) {
    if (!TYPE_NAME.test(name) || OBJECT_NAMES.has(name)) issues.push({ path: [...root, name], message: "a type name starts with a letter or _ and has letters, digits and _ only" });
    else if ((PRIMITIVE_TYPES as readonly string[]).includes(name)) issues.push({ path: [...root, name], message: `${name} is a primitive type and cannot be redefined` });
    const fields = value[name];
    if (!isObject(fields)) {
      issues.push({ path: [...root, name], message: "a type is an object of fields (name: type)" });
      continue;
    }
    if (Object.keys(fields).length > MAX_FIELDS) issues.push({ path: [...root, name], message: `a type has at most ${MAX_FIELDS} fields` });
    for (const [field, spec] of Object.entries(fields)) issues.push(...fieldIssues(spec, known, [...root, name, field]));
  }
  return issues;
}

/** Throws 400 VALIDATION_FAILED naming the first problem of `state._io_types` (with every issue in details) when it is not well formed. */
export function assertIoTypes(state: Record<string, unknown>, where = "state"): void {
  if (!("_io_types" in state)) return;
  const issues = ioTypesIssues(state._io_types);
  if (!issues.length) return;
  const first = issues[0]!;
  throw new AppError("VALIDATION_FAILED", `${where}.${first.path.join(".")}: ${first.message}`, {
    issues: issues.map((i) => ({ path: [where, ...i.path], message: i.message })),
  });
}

/** The JSON type of a value as the errors name it. */
export function actualType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** The first place `value` does not match `type` (a primitive or a named type of `types`): its path, the expected and the actual type; null when it matches. */
export function typeMismatch(value: unknown, type: string, types: IoTypes, path: string, depth = 0): { path: string; expected: string; actual: string; missing?: boolean } | null {
  switch (type) {
    case "string":
    case "boolean":
      return typeof value === type ? null : { path, expected: type, actual: actualType(value) };
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : { path, expected: type, actual: actualType(value) };
    case "object":
      return isObject(value) ? null : { path, expected: type, actual: actualType(value) };
    case "array":
      return Array.isArray(value) ? null : { path, expected: type, actual: actualType(value) };
  }
  const fields = Object.hasOwn(types, type) ? types[type] : undefined;
  // An unknown name cannot be checked: declarations are checked where they are written.
  if (!fields) return null;
  if (!isObject(value)) return { path, expected: type, actual: actualType(value) };
  if (depth >= MAX_DEPTH) return null;
  for (const [field, spec] of Object.entries(fields)) {
    const inner = value[field];
    if (inner === undefined) {
      if (isRequired(spec)) return { path: `${path}.${field}`, expected: typeOfSpec(spec), actual: "missing", missing: true };
      continue;
    }
    const mismatch = typeMismatch(inner, typeOfSpec(spec), types, `${path}.${field}`, depth + 1);
    if (mismatch) return mismatch;
  }
  return null;
}

/**
 * RFC 0024 3.3: a phase's output against its declared outputs. Every required key must be there
 * (422 MISSING_OUTPUT naming them), and each present key must match its type (422
 * OUTPUT_TYPE_MISMATCH naming the field, the expected and the actual type). Keys not declared
 * are accepted (RFC 0024 9). No declaration (null): nothing is checked.
 */
export function assertOutputs(taskId: string, phaseName: string, outputs: Record<string, FieldSpec> | null, output: Record<string, unknown> | null, types: IoTypes): void {
  if (!outputs) return;
  const value = output ?? {};
  const missing = Object.entries(outputs)
    .filter(([key, spec]) => isRequired(spec) && value[key] === undefined)
    .map(([key]) => key);
  if (missing.length) {
    throw appError(
      "MISSING_OUTPUT",
      `task ${taskId} (phase ${phaseName}) cannot complete: declared output ${missing.map((k) => `'${k}'`).join(", ")} ${missing.length === 1 ? "is" : "are"} not in its output`,
      { error: "MissingOutputError", task_id: taskId, phase_name: phaseName, missing_keys: missing },
    );
  }
  for (const [key, spec] of Object.entries(outputs)) {
    if (value[key] === undefined) continue;
    const mismatch = typeMismatch(value[key], typeOfSpec(spec), types, `output.${key}`);
    if (mismatch) {
      throw appError(
        "OUTPUT_TYPE_MISMATCH",
        `task ${taskId} (phase ${phaseName}) cannot complete: ${mismatch.path} ${mismatch.missing ? "is missing" : `is ${mismatch.actual}`}, declared ${mismatch.expected}`,
        { error: "OutputTypeMismatchError", task_id: taskId, phase_name: phaseName, key, field: mismatch.path, expected_type: mismatch.expected, actual_type: mismatch.actual },
      );
    }
  }
}

/** What a phase's inputs resolve from: upstream phases' outputs (absent: not completed), the trigger's inputs, the initial state. */
export interface InputSources {
  upstream: ReadonlyMap<string, { output: Record<string, unknown> | null; completed: boolean; outputs: Record<string, FieldSpec> | null }>;
  trigger: Record<string, unknown>;
  initialState: Record<string, unknown>;
}

/**
 * RFC 0024 2, 3.1: each input is `phase.key` (the upstream phase's recorded output, which must be
 * completed and hold the key, and match its declared type), `$trigger.key` or
 * `$initial_state.key` (non-null). Answers the resolved input, or the refs that cannot resolve.
 */
export function resolveInputs(inputs: Record<string, string>, sources: InputSources, types: IoTypes): { resolved: Record<string, unknown>; unresolvable: string[]; mismatched: { input: string; ref: string; expected: string; actual: string }[] } {
  const resolved: Record<string, unknown> = {};
  const unresolvable: string[] = [];
  const mismatched: { input: string; ref: string; expected: string; actual: string }[] = [];
  for (const [name, ref] of Object.entries(inputs)) {
    const parsed = parseRef(ref);
    let value: unknown;
    if (parsed?.kind === "trigger") value = sources.trigger[parsed.key];
    else if (parsed?.kind === "initial_state") value = sources.initialState[parsed.key];
    else if (parsed?.kind === "phase") {
      const up = sources.upstream.get(parsed.phase);
      value = up?.completed ? up.output?.[parsed.key] : undefined;
      const spec = up?.outputs?.[parsed.key];
      if (value !== undefined && value !== null && spec) {
        const mismatch = typeMismatch(value, typeOfSpec(spec), types, `input.${name}`);
        if (mismatch) mismatched.push({ input: name, ref, expected: mismatch.expected, actual: mismatch.actual });
      }
    }
    if (value === undefined || value === null) unresolvable.push(ref);
    else resolved[name] = value;
  }
  return { resolved, unresolvable, mismatched };
}

type Ref = { kind: "phase"; phase: string; key: string } | { kind: "trigger" | "initial_state"; key: string };

/** `phase.key`, `$trigger.key` or `$initial_state.key` (RFC 0024 8 check 4); null otherwise. */
export function parseRef(ref: string): Ref | null {
  const stat = /^\$(trigger|initial_state)\.([A-Za-z0-9_-]+)$/.exec(ref);
  if (stat) return { kind: stat[1] as "trigger" | "initial_state", key: stat[2]! };
  const phase = /^([A-Za-z_][A-Za-z0-9_-]*)\.([A-Za-z0-9_-]+)$/.exec(ref);
  if (phase) return { kind: "phase", phase: phase[1]!, key: phase[2]! };
  return null;
}

export interface ParsedWorkflow {
  name: string | null;
  types: IoTypes;
  /** The workflow's `initial_state` mapping: the run intent's state starts with it; `$initial_state.key` reads it. */
  initialState: Record<string, unknown>;
  phases: WorkflowPhase[];
}

const wiring = (phase: string, invalid: string[], suggestion: string, message: string) =>
  appError("INPUT_WIRING_ERROR", message, { error: "InputWiringError", phase_name: phase, invalid_refs: invalid, suggestion });

/**
 * A workflow's YAML (RFC 0024 10: `info.name`, `types`, `workflow: {phase: {title, assign,
 * depends_on, inputs, outputs}}`), checked as RFC 0024 8 says, plus: depends_on names phases of
 * the workflow and has no cycle; types are well formed (the rule of `_io_types`); outputs name
 * known types. Any problem is 422 INPUT_WIRING_ERROR naming the phase and what is wrong.
 */
export function parseWorkflow(yamlText: string): ParsedWorkflow {
  let doc: unknown;
  try {
    doc = parseYaml(yamlText, { maxAliasCount: 100 });
  } catch (error) {
    throw wiring("", [], "check the YAML syntax", `yaml_spec is not valid YAML: ${(error as Error).message.split("\n")[0]}`);
  }
  if (!isObject(doc)) throw wiring("", [], "a workflow is a mapping with a `workflow:` section", "yaml_spec must be a YAML mapping");
  const types = (doc.types ?? {}) as unknown;
  const typeIssues = ioTypesIssues(types).map((i) => ({ ...i, path: ["types", ...i.path.slice(1)] }));
  if (typeIssues.length) throw wiring("", [typeIssues[0]!.path.join(".")], "declare each type as a mapping of field: type", `${typeIssues[0]!.path.join(".")}: ${typeIssues[0]!.message}`);
  const section = doc.workflow;
  if (!isObject(section) || !Object.keys(section).length) throw wiring("", [], "add a `workflow:` mapping of phases", "yaml_spec must have a `workflow:` mapping with at least one phase");
  const names = Object.keys(section);
  if (names.length > MAX_WORKFLOW_PHASES) throw wiring("", [], `split the workflow`, `a workflow has at most ${MAX_WORKFLOW_PHASES} phases`);
  const typeNames = new Set(Object.keys(types as object));
  const phases: WorkflowPhase[] = names.map((name) => {
    if (!KEY.test(name) || OBJECT_NAMES.has(name)) throw wiring(name, [], "name phases with letters, digits, _ and -", `phase name "${name}" is not allowed`);
    const raw = section[name];
    if (!isObject(raw)) throw wiring(name, [], "a phase is a mapping (title, depends_on, inputs, outputs, ...)", `phase ${name} must be a mapping`);
    const dependsOn = raw.depends_on ?? [];
    if (!Array.isArray(dependsOn) || dependsOn.some((d) => typeof d !== "string")) throw wiring(name, [], "depends_on is a list of phase names", `phase ${name}: depends_on must be a list of phase names`);
    const unknownDeps = (dependsOn as string[]).filter((d) => !names.includes(d) || d === name);
    if (unknownDeps.length) throw wiring(name, unknownDeps, `depend on phases of this workflow: ${names.join(", ")}`, `phase ${name}: depends_on names ${unknownDeps.join(", ")}, not another phase of the workflow`);
    const inputs = raw.inputs ?? {};
    if (!isObject(inputs) || Object.values(inputs).some((v) => typeof v !== "string")) throw wiring(name, [], "inputs map an input name to phase.key, $trigger.key or $initial_state.key", `phase ${name}: inputs must map names to strings`);
    const outputs = raw.outputs === undefined || raw.outputs === null ? null : raw.outputs;
    if (outputs !== null) {
      if (!isObject(outputs)) throw wiring(name, [], "outputs map an output key to a type", `phase ${name}: outputs must map keys to types`);
      const issues = Object.entries(outputs).flatMap(([key, spec]) => fieldIssues(spec, typeNames, ["workflow", name, "outputs", key]));
      if (issues.length) throw wiring(name, [issues[0]!.path.at(-1) as string], "use string, number, boolean, object, array or a type of `types`", `${issues[0]!.path.join(".")}: ${issues[0]!.message}`);
    }
    const str = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim() : null);
    return {
      name,
      title: (str(raw.title) ?? name).slice(0, 500),
      description: str(raw.description),
      assign: str(raw.assign),
      depends_on: [...new Set(dependsOn as string[])],
      inputs: inputs as Record<string, string>,
      outputs: outputs as Record<string, FieldSpec> | null,
    };
  });
  const byName = new Map(phases.map((p) => [p.name, p]));
  for (const phase of phases) {
    const invalid: string[] = [];
    const notDeps: string[] = [];
    const undeclared: string[] = [];
    for (const ref of Object.values(phase.inputs)) {
      const parsed = parseRef(ref);
      if (!parsed) invalid.push(ref);
      else if (parsed.kind === "phase") {
        const up = byName.get(parsed.phase);
        if (!up) invalid.push(ref);
        else if (!phase.depends_on.includes(parsed.phase)) notDeps.push(ref);
        else if (up.outputs && !(parsed.key in up.outputs)) undeclared.push(ref);
      }
    }
    if (invalid.length) throw wiring(phase.name, invalid, "write phase.key (a phase of this workflow), $trigger.key or $initial_state.key", `phase ${phase.name}: input ${invalid.join(", ")} is not phase.key of a phase of the workflow, $trigger.key or $initial_state.key`);
    if (notDeps.length) throw wiring(phase.name, notDeps, `add the phase to depends_on of ${phase.name}`, `phase ${phase.name}: input ${notDeps.join(", ")} reads a phase it does not depend on`);
    if (undeclared.length) throw wiring(phase.name, undeclared, "declare the key in the upstream phase's outputs", `phase ${phase.name}: input ${undeclared.join(", ")} reads an output the upstream phase does not declare`);
  }
  assertAcyclic(phases);
  const info = isObject(doc.info) ? doc.info : {};
  const initialState = doc.initial_state ?? {};
  if (!isObject(initialState)) throw wiring("", [], "initial_state is a mapping", "initial_state must be a mapping");
  if ("_io_types" in initialState || "_suspension" in initialState || "_workflow" in initialState) throw wiring("", [], "use `types:` for types", "initial_state must not set _io_types, _workflow or _suspension");
  return { initialState, name: typeof info.name === "string" ? info.name : typeof doc.name === "string" ? doc.name : null, types: types as IoTypes, phases: topological(phases) };
}

/** Phases in an order where each comes after its dependencies (declaration order otherwise kept). */
function topological(phases: WorkflowPhase[]): WorkflowPhase[] {
  const done = new Set<string>();
  const out: WorkflowPhase[] = [];
  while (out.length < phases.length) {
    for (const p of phases) {
      if (!done.has(p.name) && p.depends_on.every((d) => done.has(d))) {
        done.add(p.name);
        out.push(p);
      }
    }
  }
  return out;
}

function assertAcyclic(phases: WorkflowPhase[]): void {
  const byName = new Map(phases.map((p) => [p.name, p]));
  const state = new Map<string, "visiting" | "done">();
  const visit = (name: string, trail: string[]): void => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") {
      const cycle = [...trail.slice(trail.indexOf(name)), name];
      throw wiring(name, cycle, "remove one of the dependencies", `the phases depend on each other in a cycle: ${cycle.join(" -> ")}`);
    }
    state.set(name, "visiting");
    for (const dep of byName.get(name)!.depends_on) visit(dep, [...trail, name]);
    state.set(name, "done");
  };
  for (const p of phases) visit(p.name, []);
}
