import { describe, expect, it } from "vitest";
import type { AppError } from "@intentmesh/contracts";
import { assertIoTypes, assertOutputs, ioTypesIssues, parseRef, parseWorkflow, resolveInputs, typeMismatch, type IoTypes } from "./rules";

const thrown = (fn: () => unknown): AppError => {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error("did not throw");
};

const TYPES: IoTypes = { Finding: { source: "string", confidence: "number", note: { type: "string", required: false } }, Report: { findings: "array", top: "Finding" } };

describe("_io_types: named workflow types (spec 2.1)", () => {
  it("accepts objects of fields typed by primitives, named types (in any order) or {type, required}", () => {
    expect(ioTypesIssues(TYPES)).toEqual([]);
    expect(ioTypesIssues({})).toEqual([]);
  });
  it("names each problem by its path", () => {
    expect(ioTypesIssues([])).toEqual([{ path: ["_io_types"], message: expect.stringContaining("object") }]);
    expect(ioTypesIssues({ A: { x: "numbr" } })[0]).toMatchObject({ path: ["_io_types", "A", "x"], message: expect.stringContaining('unknown type "numbr"') });
    expect(ioTypesIssues({ A: "string" })[0]!.path).toEqual(["_io_types", "A"]);
    expect(ioTypesIssues({ string: { x: "number" } })[0]!.message).toContain("primitive");
    expect(ioTypesIssues({ A: { x: { type: "string", required: "no" } } })[0]!.path).toEqual(["_io_types", "A", "x", "required"]);
    expect(ioTypesIssues({ A: { x: { type: "string", extra: 1 } } })[0]!.message).toContain("extra");
    expect(ioTypesIssues(JSON.parse('{"__proto__": {"x": "string"}}'))[0]!.path).toEqual(["_io_types", "__proto__"]);
    expect(ioTypesIssues({ A: { x: "constructor" } })[0]!.message).toContain("unknown type");
  });
  it("assertIoTypes: 400 VALIDATION_FAILED naming the field; a state without _io_types passes", () => {
    expect(() => assertIoTypes({ other: 1 })).not.toThrow();
    const err = thrown(() => assertIoTypes({ _io_types: { A: { x: "nope" } } }));
    expect(err).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    expect(err.message).toContain("state._io_types.A.x");
  });
});

describe("values against types", () => {
  it("checks primitives structurally, never coercing", () => {
    expect(typeMismatch(1, "number", {}, "v")).toBeNull();
    expect(typeMismatch("1", "number", {}, "v")).toEqual({ path: "v", expected: "number", actual: "string" });
    expect(typeMismatch([], "object", {}, "v")).toMatchObject({ actual: "array" });
    expect(typeMismatch(null, "string", {}, "v")).toMatchObject({ actual: "null" });
  });
  it("checks named types field by field, optional fields may be absent", () => {
    expect(typeMismatch({ findings: [], top: { source: "s", confidence: 0.5 } }, "Report", TYPES, "out")).toBeNull();
    expect(typeMismatch({ findings: [], top: { source: "s", confidence: "high" } }, "Report", TYPES, "out")).toEqual({ path: "out.top.confidence", expected: "number", actual: "string" });
    expect(typeMismatch({ findings: [] }, "Report", TYPES, "out")).toMatchObject({ path: "out.top", missing: true });
  });
});

describe("outputs on completion (RFC 0024 3.3)", () => {
  const outputs = { summary: "string", top: "Finding", warnings: { type: "array", required: false } };
  it("passes with every required key of the right type; extra keys are accepted", () => {
    expect(() => assertOutputs("t", "p", outputs, { summary: "s", top: { source: "a", confidence: 1 }, extra: true }, TYPES)).not.toThrow();
    expect(() => assertOutputs("t", "p", null, null, TYPES)).not.toThrow();
  });
  it("422 MISSING_OUTPUT names the missing keys", () => {
    expect(thrown(() => assertOutputs("t", "p", outputs, { top: { source: "a", confidence: 1 } }, TYPES))).toMatchObject({
      code: "MISSING_OUTPUT",
      details: { task_id: "t", phase_name: "p", missing_keys: ["summary"] },
    });
  });
  it("422 OUTPUT_TYPE_MISMATCH names the field, the expected and the actual type", () => {
    const err = thrown(() => assertOutputs("t", "p", outputs, { summary: "s", top: { source: "a", confidence: "x" } }, TYPES));
    expect(err).toMatchObject({ code: "OUTPUT_TYPE_MISMATCH", details: { key: "top", field: "output.top.confidence", expected_type: "number", actual_type: "string" } });
    expect(err.message).toContain("output.top.confidence is string, declared number");
  });
});

describe("inputs on claim (RFC 0024 2, 3.1)", () => {
  it("resolves phase.key from completed upstream outputs, $trigger and $initial_state; names what cannot resolve", () => {
    const sources = {
      upstream: new Map([
        ["research", { output: { findings: [1], n: "x" }, completed: true, outputs: { findings: "array", n: "number" } }],
        ["later", { output: null, completed: false, outputs: null }],
      ]),
      trigger: { quarter: "Q1" },
      initialState: { source: "api" },
    };
    const result = resolveInputs({ f: "research.findings", q: "$trigger.quarter", s: "$initial_state.source", l: "later.x", m: "$trigger.missing", n: "research.n" }, sources, {});
    expect(result.resolved).toEqual({ f: [1], q: "Q1", s: "api", n: "x" });
    expect(result.unresolvable).toEqual(["later.x", "$trigger.missing"]);
    expect(result.mismatched).toEqual([{ input: "n", ref: "research.n", expected: "number", actual: "string" }]);
  });
  it("parses the three reference forms only", () => {
    expect(parseRef("a.b")).toEqual({ kind: "phase", phase: "a", key: "b" });
    expect(parseRef("$trigger.q")).toEqual({ kind: "trigger", key: "q" });
    expect(parseRef("$initial_state.s")).toEqual({ kind: "initial_state", key: "s" });
    for (const bad of ["a", "a.b.c", "$env.x", ""]) expect(parseRef(bad)).toBeNull();
  });
});

const YAML = `
info:
  name: Compliance
types:
  Finding:
    source: string
workflow:
  report:
    title: Report
    depends_on: [research]
    inputs:
      f: research.findings
    outputs:
      url: string
  research:
    title: Research
    assign: researcher
    inputs:
      q: $trigger.quarter
    outputs:
      findings: array
      top: Finding
`;

describe("a workflow's YAML (RFC 0024 8)", () => {
  it("parses info.name, types and phases, dependencies first", () => {
    const wf = parseWorkflow(YAML);
    expect(wf.name).toBe("Compliance");
    expect(wf.types).toEqual({ Finding: { source: "string" } });
    expect(wf.phases.map((p) => p.name)).toEqual(["research", "report"]);
    expect(wf.phases[0]).toMatchObject({ title: "Research", assign: "researcher", inputs: { q: "$trigger.quarter" }, outputs: { findings: "array", top: "Finding" }, depends_on: [] });
  });
  const wiringError = (yaml: string) => thrown(() => parseWorkflow(yaml));
  it("refuses with 422 INPUT_WIRING_ERROR naming the phase and the refs", () => {
    expect(wiringError(YAML.replace("f: research.findings", "f: nowhere.findings"))).toMatchObject({ code: "INPUT_WIRING_ERROR", details: { phase_name: "report", invalid_refs: ["nowhere.findings"] } });
    expect(wiringError(YAML.replace("depends_on: [research]", "depends_on: []"))).toMatchObject({ details: { phase_name: "report", invalid_refs: ["research.findings"] } });
    expect(wiringError(YAML.replace("f: research.findings", "f: research.nothing"))).toMatchObject({ details: { invalid_refs: ["research.nothing"] } });
    expect(wiringError(YAML.replace("f: research.findings", "f: bad-syntax"))).toMatchObject({ details: { invalid_refs: ["bad-syntax"] } });
    expect(wiringError(YAML.replace("top: Finding", "top: Nope"))).toMatchObject({ code: "INPUT_WIRING_ERROR", details: { phase_name: "research" } });
    expect(wiringError(YAML.replace("source: string", "source: strng")).message).toContain("types.Finding.source");
    expect(wiringError(YAML.replace("    assign: researcher", "    depends_on: [report]")).message).toContain("cycle");
    expect(wiringError("a: [").code).toBe("INPUT_WIRING_ERROR");
    expect(wiringError("just text").message).toContain("mapping");
    expect(wiringError("workflow:\n  __proto__:\n    title: x\n").message).toContain("not allowed");
  });
});
