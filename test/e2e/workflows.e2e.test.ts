import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { createIntent, expectError } from "../support/e2e-helpers";

/**
 * RFC 0024 workflow I/O contracts (docs/workflows.md): named types in state._io_types checked on
 * write, and the MCP server's /workflows calls (create, trigger, get, list) with outputs checked
 * on completion and inputs wired on claim.
 */

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe("state._io_types holds named workflow types, checked on write (spec 2.1)", () => {
  it("accepts well-formed types at creation and by patch; refuses a malformed one with 400 naming the field, writing nothing", async () => {
    const types = { Finding: { source: "string", confidence: "number", note: { type: "string", required: false } } };
    const intent = await createIntent(cluster, { state: { _io_types: types } });
    expect(intent.state._io_types).toEqual(types);
    const bad = await cluster.api("/intents", { key: "admin", body: { title: "t", state: { _io_types: { Finding: { confidence: "numbr" } } } } });
    expectError(bad, 400, "VALIDATION_FAILED");
    expect(bad.body.message).toContain("state._io_types.Finding.confidence");
    const patch = (path: string, value: unknown, version: number) =>
      cluster.api(`/intents/${intent.id}/state`, { key: "admin", body: { patches: [{ op: "set", path, value }] }, headers: { "If-Match": String(version) } });
    const refused = await patch("/_io_types/Report", { top: "Nope" }, intent.version);
    expectError(refused, 400, "VALIDATION_FAILED");
    expect(refused.body.message).toContain("state._io_types.Report.top");
    expect((await cluster.api(`/intents/${intent.id}`)).body).toMatchObject({ version: intent.version, state: { _io_types: types } });
    const ok = await patch("/_io_types/Report", { top: "Finding", items: "array" }, intent.version);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.state._io_types.Report).toEqual({ top: "Finding", items: "array" });
    // Patches elsewhere in the state are not concerned.
    expect((await patch("/notes", "x", ok.body.version)).status).toBe(200);
  });
});

const YAML = `
info:
  name: Quarterly report
types:
  Finding:
    source: string
    confidence: number
initial_state:
  source: accounting_api
workflow:
  fetch:
    title: Fetch financials
    inputs:
      quarter: $trigger.quarter
      source: $initial_state.source
    outputs:
      revenue: number
      top: Finding
      notes:
        type: string
        required: false
  analyse:
    title: Analyse
    depends_on: [fetch]
    inputs:
      rev: fetch.revenue
      finding: fetch.top
    outputs:
      summary: string
`;

const admin = (path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) => cluster.api(path, { key: "admin", ...init } as never);

describe("the MCP server's workflows: create, list, get, trigger", () => {
  it("create_workflow parses and checks the YAML; list and get answer it", async () => {
    const res = await cluster.api("/workflows", { key: "coordinator", body: { name: "report", yaml_spec: YAML, description: "quarterly", created_by: "mcp-agent" } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ name: "report", description: "quarterly", yaml_spec: YAML, types: { Finding: { source: "string", confidence: "number" } }, version: 1 });
    expect(res.body.phases.map((p: any) => [p.name, p.depends_on])).toEqual([
      ["fetch", []],
      ["analyse", ["fetch"]],
    ]);
    const got = await cluster.api(`/workflows/${res.body.id}`);
    expect(got.body).toMatchObject({ id: res.body.id, runs: [] });
    const listed = await cluster.api("/workflows?limit=200&offset=0");
    expect(listed.status).toBe(200);
    expect(listed.body.map((w: any) => w.id)).toContain(res.body.id);
    expectError(await cluster.api("/workflows/00000000-0000-4000-8000-000000000000"), 404, "WORKFLOW_NOT_FOUND");
  });

  it("a workflow whose wiring is wrong is refused with 422 INPUT_WIRING_ERROR naming the phase; nothing is stored", async () => {
    const before = (await cluster.api("/workflows?limit=200")).body.length;
    const bad = await cluster.api("/workflows", { key: "coordinator", body: { name: "bad", yaml_spec: YAML.replace("rev: fetch.revenue", "rev: fetch.profit") } });
    expectError(bad, 422, "INPUT_WIRING_ERROR");
    expect(bad.body.details).toMatchObject({ phase_name: "analyse", invalid_refs: ["fetch.profit"] });
    expectError(await cluster.api("/workflows", { key: "coordinator", body: { name: "bad", yaml_spec: "workflow: [" } }), 422, "INPUT_WIRING_ERROR");
    expect((await cluster.api("/workflows?limit=200")).body.length).toBe(before);
  });

  it("trigger_workflow: a run (intent + active plan, a task per phase); outputs checked on completion, inputs wired on claim; progress with suspended_phases", async () => {
    const workflow = (await cluster.api("/workflows", { key: "coordinator", body: { name: "report", yaml_spec: YAML } })).body;
    const res = await cluster.api(`/workflows/${workflow.id}/trigger`, { key: "coordinator", body: { inputs: { quarter: "Q1" }, triggered_by: "mcp-agent" } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const run = res.body;
    expect(run).toMatchObject({ workflow_id: workflow.id, state: "active", inputs: { quarter: "Q1" }, progress: { total: 2, suspended_phases: [] } });
    const [fetch, analyse] = run.phases;
    expect(fetch).toMatchObject({ phase_name: "fetch", status: "ready", input: { quarter: "Q1", source: "accounting_api" } });
    expect(analyse).toMatchObject({ phase_name: "analyse", status: "pending" });
    const intent = (await cluster.api(`/intents/${run.intent_id}`)).body;
    expect(intent).toMatchObject({ title: "report", status: "active", state: { source: "accounting_api", _io_types: workflow.types, _workflow: { workflow_id: workflow.id } } });
    expect((await cluster.api(`/plans/${run.plan_id}`)).body.tasks).toEqual([fetch.task_id, analyse.task_id]);
    expect((await cluster.api(`/tasks/${analyse.task_id}`)).body.io_contract).toEqual({
      workflow_id: workflow.id,
      phase_name: "analyse",
      inputs: { rev: "fetch.revenue", finding: "fetch.top" },
      outputs: { summary: "string" },
      static_inputs: {},
    });

    for (const action of ["claim", "start"]) expect((await admin(`/tasks/${fetch.task_id}/${action}`, { body: {} })).status).toBe(200);
    // Outputs: a missing key, then a wrong type deep in a named type, each refused; the task stays running.
    const missing = await admin(`/tasks/${fetch.task_id}/complete`, { body: { output: { top: { source: "ledger", confidence: 0.9 } } } });
    expectError(missing, 422, "MISSING_OUTPUT");
    expect(missing.body.details).toMatchObject({ phase_name: "fetch", missing_keys: ["revenue"] });
    const mismatch = await admin(`/tasks/${fetch.task_id}/complete`, { body: { output: { revenue: 10, top: { source: "ledger", confidence: "high" } } } });
    expectError(mismatch, 422, "OUTPUT_TYPE_MISMATCH");
    expect(mismatch.body.details).toMatchObject({ field: "output.top.confidence", expected_type: "number", actual_type: "string" });
    expect((await cluster.api(`/tasks/${fetch.task_id}`)).body).toMatchObject({ status: "running", output: null });
    // PATCH to completed is held to the same contract.
    const task = (await cluster.api(`/tasks/${fetch.task_id}`)).body;
    expectError(await admin(`/tasks/${fetch.task_id}`, { method: "PATCH", body: { status: "completed", output: { revenue: "ten" } }, headers: { "If-Match": String(task.version) } }), 422, "MISSING_OUTPUT");
    const done = await admin(`/tasks/${fetch.task_id}/complete`, { body: { output: { revenue: 10, top: { source: "ledger", confidence: 0.9 }, extra: true } } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    // The recorded output of a completed phase cannot be patched out of its contract either.
    const rewrite = await admin(`/tasks/${fetch.task_id}`, { method: "PATCH", body: { output: { revenue: "ten", top: { source: "ledger", confidence: 0.9 } } }, headers: { "If-Match": String(done.body.version) } });
    expectError(rewrite, 422, "OUTPUT_TYPE_MISMATCH");
    expect(rewrite.body.details).toMatchObject({ field: "output.revenue", expected_type: "number", actual_type: "string" });
    // The downstream phase is ready; claiming it wires its inputs from fetch's output.
    const claimed = await admin(`/tasks/${analyse.task_id}/claim`, { body: {} });
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    expect(claimed.body.input).toEqual({ rev: 10, finding: { source: "ledger", confidence: 0.9 } });

    // Suspension of the run's intent: the running phase shows in suspended_phases.
    expect((await admin(`/tasks/${analyse.task_id}/start`, { body: {} })).status).toBe(200);
    const current = (await cluster.api(`/intents/${run.intent_id}`)).body;
    const suspended = await admin(`/intents/${run.intent_id}/suspend`, { body: { question: "ok?", response_type: "confirm", fallback_policy: "fail", timeout_seconds: 600 }, headers: { "If-Match": String(current.version) } });
    expect(suspended.status, JSON.stringify(suspended.body)).toBeLessThan(300);
    const wf = (await cluster.api(`/workflows/${workflow.id}`)).body;
    expect(wf.runs[0].progress.suspended_phases).toEqual([
      { phase_name: "analyse", task_id: analyse.task_id, intent_id: run.intent_id, suspended_since: expect.any(String), expires_at: expect.any(String) },
    ]);
  });

  it("claiming a phase whose input does not resolve is 409 UNRESOLVABLE_INPUT naming the refs", async () => {
    const yaml = `
workflow:
  fetch:
    inputs:
      quarter: $trigger.quarter
`;
    const workflow = (await cluster.api("/workflows", { key: "coordinator", body: { name: "needs quarter", yaml_spec: yaml } })).body;
    const run = (await cluster.api(`/workflows/${workflow.id}/trigger`, { key: "coordinator", body: {} })).body;
    const refused = await admin(`/tasks/${run.phases[0].task_id}/claim`, { body: {} });
    expectError(refused, 409, "UNRESOLVABLE_INPUT");
    expect(refused.body.details).toMatchObject({ phase_name: "fetch", unresolvable_refs: ["$trigger.quarter"] });
    expect((await cluster.api(`/tasks/${run.phases[0].task_id}`)).body).toMatchObject({ status: "ready", version: 1 });
  });

  it("a list page stops before 768 KiB of JSON; offset continues it", async () => {
    const all = (await cluster.api("/workflows?limit=200")).body;
    const big = `# ${"x".repeat(200 * 1024)}\nworkflow:\n  only:\n    title: Only\n`;
    const made: string[] = [];
    for (let i = 0; i < 4; i++) made.push((await cluster.api("/workflows", { key: "coordinator", body: { name: `big ${i}`, yaml_spec: big } })).body.id);
    const page = (await cluster.api(`/workflows?limit=200&offset=${all.length}`)).body;
    expect(page.map((w: any) => w.id)).toEqual(made.slice(0, 3));
    const rest = (await cluster.api(`/workflows?limit=200&offset=${all.length + page.length}`)).body;
    expect(rest.map((w: any) => w.id)).toEqual(made.slice(3));
  });
});

describe("changing and deleting a workflow definition (docs/workflows.md)", () => {
  const ONE = "workflow:\n  fetch:\n    title: Fetch\n    outputs:\n      revenue: number\n";
  const TWO = "workflow:\n  fetch:\n    title: Fetch\n  publish:\n    title: Publish\n    depends_on: [fetch]\n";
  it("PATCH needs If-Match, checks the YAML as create does, and leaves runs already started as they were", async () => {
    const created = (await cluster.api("/workflows", { key: "coordinator", body: { name: "report", yaml_spec: ONE } })).body;
    const run = (await cluster.api(`/workflows/${created.id}/trigger`, { key: "coordinator", body: { inputs: {} } })).body;
    const patch = (body: unknown, version?: number) =>
      cluster.api(`/workflows/${created.id}`, { method: "PATCH", key: "coordinator", body, headers: version === undefined ? {} : { "If-Match": String(version) } });
    expectError(await patch({ name: "x" }), 428, "PRECONDITION_REQUIRED");
    expectError(await patch({ name: "x" }, 7), 409, "VERSION_MISMATCH");
    expectError(await patch({ yaml_spec: "workflow:\n  a:\n    title: A\n    depends_on: [nope]\n" }, 1), 422, "INPUT_WIRING_ERROR");
    expectError(await patch({}, 1), 400, "VALIDATION_FAILED");
    expect((await cluster.api(`/workflows/${created.id}`)).body).toMatchObject({ version: 1, name: "report", yaml_spec: ONE });
    const changed = await patch({ name: "report v2", yaml_spec: TWO }, 1);
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body).toMatchObject({ version: 2, name: "report v2", yaml_spec: TWO });
    expect(changed.body.phases.map((p: any) => p.name)).toEqual(["fetch", "publish"]);
    expect(changed.headers.get("etag")).toBe('"2"');
    // The run started before keeps its one phase; a new run has two.
    expect((await cluster.api(`/plans/${run.plan_id}`)).body.progress.total).toBe(1);
    const next = (await cluster.api(`/workflows/${created.id}/trigger`, { key: "coordinator", body: { inputs: {} } })).body;
    expect(next.phases.map((p: any) => p.phase_name)).toEqual(["fetch", "publish"]);
  });

  it("DELETE removes the definition (a stale If-Match is 409); its runs stay readable and go on", async () => {
    const created = (await cluster.api("/workflows", { key: "coordinator", body: { name: "gone", yaml_spec: ONE } })).body;
    const run = (await cluster.api(`/workflows/${created.id}/trigger`, { key: "coordinator", body: { inputs: {} } })).body;
    expectError(await cluster.api(`/workflows/${created.id}`, { method: "DELETE", key: "coordinator", headers: { "If-Match": "5" } }), 409, "VERSION_MISMATCH");
    const deleted = await cluster.api(`/workflows/${created.id}`, { method: "DELETE", key: "coordinator" });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(deleted.body).toEqual({ status: "deleted", workflow_id: created.id });
    expectError(await cluster.api(`/workflows/${created.id}`), 404, "WORKFLOW_NOT_FOUND");
    expectError(await cluster.api(`/workflows/${created.id}`, { method: "DELETE", key: "coordinator" }), 404, "WORKFLOW_NOT_FOUND");
    expectError(await cluster.api(`/workflows/${created.id}/trigger`, { key: "coordinator", body: { inputs: {} } }), 404, "WORKFLOW_NOT_FOUND");
    expect((await cluster.api("/workflows?limit=200")).body.map((w: any) => w.id)).not.toContain(created.id);
    const task = run.phases[0].task_id;
    for (const action of ["claim", "start"]) expect((await cluster.api(`/tasks/${task}/${action}`, { key: "admin", body: {} })).status).toBe(200);
    expect((await cluster.api(`/tasks/${task}/complete`, { key: "admin", body: { output: { revenue: 3 } } })).status).toBe(200);
    expect((await cluster.api(`/plans/${run.plan_id}`)).body).toMatchObject({ state: "completed" });
  });
});
