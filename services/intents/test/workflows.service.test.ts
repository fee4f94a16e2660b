import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BodyOf } from "@intentmesh/sdk";
import { createIntent, expectError, expectRejected } from "../../../test/support/e2e-helpers";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { IntentsService } from "../src/service";
import type { GovernanceService } from "../../governance/src/service";

/**
 * RFC 0024 workflow I/O contracts (docs/workflows.md): named types in state._io_types checked on
 * write, and the MCP server's /workflows calls (create, trigger, get, list) with outputs checked
 * on completion and inputs wired on claim. Workflows, their runs' plans and tasks are the intents
 * service's own; the registry runs beside it because the gateway asks it whom an X-Agent-ID is
 * bound to, and governance because a run's phases are suspended through it (suspended_phases);
 * sweeps and timers run only when a test calls them.
 */
let harness: ServiceHarness<{ intents: IntentsService; governance: GovernanceService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({
      registry: QUIET.registry,
      intents: QUIET.intents,
      governance: QUIET.governance,
    }),
  );
});
afterAll(async () => {
  await harness?.stop();
});

describe("state._io_types holds named workflow types, checked on write (spec 2.1)", () => {
  it("accepts well-formed types at creation and by patch; refuses a malformed one with 400 naming the field, writing nothing", async () => {
    const types = { Finding: { source: "string", confidence: "number", note: { type: "string", required: false } } };
    const intent = await createIntent(harness, { state: { _io_types: types } });
    expect(intent.state._io_types).toEqual(types);
    const bad = await expectRejected(harness.sdk().ops.intentsCreate({ body: { title: "t", state: { _io_types: { Finding: { confidence: "numbr" } } } } }), 400, "VALIDATION_FAILED");
    expect(bad.message).toContain("state._io_types.Finding.confidence");
    const patch = (path: string, value: unknown, version: number) =>
      harness.sdk().send("intentsPatchState", { intent_id: intent.id, ifMatch: version, body: [{ op: "set", path, value }] });
    const refused = await expectRejected(patch("/_io_types/Report", { top: "Nope" }, intent.version), 400, "VALIDATION_FAILED");
    expect(refused.message).toContain("state._io_types.Report.top");
    expect(await harness.sdk().ops.intentsGet({ intent_id: intent.id })).toMatchObject({ version: intent.version, state: { _io_types: types } });
    const ok = await patch("/_io_types/Report", { top: "Finding", items: "array" }, intent.version);
    expect(ok.status).toBe(200);
    expect(ok.data.state._io_types).toHaveProperty("Report", { top: "Finding", items: "array" });
    // Patches elsewhere in the state are not concerned.
    expect((await patch("/notes", "x", ok.data.version)).status).toBe(200);
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

const admin = () => harness.sdk();
const coordinator = () => harness.sdk("coordinator");
const createWorkflow = (body: BodyOf<"workflowsCreate">) => coordinator().ops.workflowsCreate({ body });
const trigger = (workflowId: string, body: BodyOf<"workflowsTrigger"> = {}) => coordinator().ops.workflowsTrigger({ workflow_id: workflowId, body });
const listWorkflows = (query: { limit?: number; offset?: number }) => admin().ops.workflowsList({ query });
const getTask = (taskId: string) => admin().ops.tasksGet({ task_id: taskId });
const getPlan = (planId: string) => admin().ops.plansGet({ plan_id: planId });

describe("the MCP server's workflows: create, list, get, trigger", () => {
  it("create_workflow parses and checks the YAML; list and get answer it", async () => {
    const res = await coordinator().send("workflowsCreate", { body: { name: "report", yaml_spec: YAML, description: "quarterly", created_by: "mcp-agent" } });
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ name: "report", description: "quarterly", yaml_spec: YAML, types: { Finding: { source: "string", confidence: "number" } }, version: 1 });
    expect(res.data.phases.map((p) => [p.name, p.depends_on])).toEqual([
      ["fetch", []],
      ["analyse", ["fetch"]],
    ]);
    const got = await admin().ops.workflowsGet({ workflow_id: res.data.id });
    expect(got).toMatchObject({ id: res.data.id, runs: [] });
    const listed = await admin().send("workflowsList", { query: { limit: 200, offset: 0 } });
    expect(listed.status).toBe(200);
    expect(listed.data.map((w) => w.id)).toContain(res.data.id);
    await expectRejected(admin().ops.workflowsGet({ workflow_id: "00000000-0000-4000-8000-000000000000" }), 404, "WORKFLOW_NOT_FOUND");
  });

  it("a workflow whose wiring is wrong is refused with 422 INPUT_WIRING_ERROR naming the phase; nothing is stored", async () => {
    const before = (await listWorkflows({ limit: 200 })).length;
    const bad = await expectRejected(createWorkflow({ name: "bad", yaml_spec: YAML.replace("rev: fetch.revenue", "rev: fetch.profit") }), 422, "INPUT_WIRING_ERROR");
    expect(bad.details).toMatchObject({ phase_name: "analyse", invalid_refs: ["fetch.profit"] });
    await expectRejected(createWorkflow({ name: "bad", yaml_spec: "workflow: [" }), 422, "INPUT_WIRING_ERROR");
    expect((await listWorkflows({ limit: 200 })).length).toBe(before);
  });

  it("trigger_workflow: a run (intent + active plan, a task per phase); outputs checked on completion, inputs wired on claim; progress with suspended_phases", async () => {
    const workflow = await createWorkflow({ name: "report", yaml_spec: YAML });
    const res = await coordinator().send("workflowsTrigger", { workflow_id: workflow.id, body: { inputs: { quarter: "Q1" }, triggered_by: "mcp-agent" } });
    expect(res.status).toBe(201);
    const run = res.data;
    expect(run).toMatchObject({ workflow_id: workflow.id, state: "active", inputs: { quarter: "Q1" }, progress: { total: 2, suspended_phases: [] } });
    const [fetch, analyse] = run.phases;
    expect(fetch).toMatchObject({ phase_name: "fetch", status: "ready", input: { quarter: "Q1", source: "accounting_api" } });
    expect(analyse).toMatchObject({ phase_name: "analyse", status: "pending" });
    const fetchTask = fetch!.task_id;
    const analyseTask = analyse!.task_id;
    const intent = await admin().ops.intentsGet({ intent_id: run.intent_id });
    expect(intent).toMatchObject({ title: "report", status: "active", state: { source: "accounting_api", _io_types: workflow.types, _workflow: { workflow_id: workflow.id } } });
    expect((await getPlan(run.plan_id)).tasks).toEqual([fetchTask, analyseTask]);
    expect((await getTask(analyseTask)).io_contract).toEqual({
      workflow_id: workflow.id,
      phase_name: "analyse",
      inputs: { rev: "fetch.revenue", finding: "fetch.top" },
      outputs: { summary: "string" },
      static_inputs: {},
    });

    expect((await admin().send("tasksClaim", { task_id: fetchTask, body: {} })).status).toBe(200);
    expect((await admin().send("tasksStart", { task_id: fetchTask, body: {} })).status).toBe(200);
    // Outputs: a missing key, then a wrong type deep in a named type, each refused; the task stays running.
    const completeFetch = (output: Record<string, unknown>) => admin().send("tasksComplete", { task_id: fetchTask, body: { output } });
    const missing = await expectRejected(completeFetch({ top: { source: "ledger", confidence: 0.9 } }), 422, "MISSING_OUTPUT");
    expect(missing.details).toMatchObject({ phase_name: "fetch", missing_keys: ["revenue"] });
    const mismatch = await expectRejected(completeFetch({ revenue: 10, top: { source: "ledger", confidence: "high" } }), 422, "OUTPUT_TYPE_MISMATCH");
    expect(mismatch.details).toMatchObject({ field: "output.top.confidence", expected_type: "number", actual_type: "string" });
    expect(await getTask(fetchTask)).toMatchObject({ status: "running", output: null });
    // PATCH to completed is held to the same contract.
    const task = await getTask(fetchTask);
    await expectRejected(admin().ops.tasksPatch({ task_id: fetchTask, ifMatch: task.version, body: { status: "completed", output: { revenue: "ten" } } }), 422, "MISSING_OUTPUT");
    const done = await completeFetch({ revenue: 10, top: { source: "ledger", confidence: 0.9 }, extra: true });
    expect(done.status).toBe(200);
    // The recorded output of a completed phase cannot be patched out of its contract either.
    const rewrite = await expectRejected(
      admin().ops.tasksPatch({ task_id: fetchTask, ifMatch: done.data.version, body: { output: { revenue: "ten", top: { source: "ledger", confidence: 0.9 } } } }),
      422,
      "OUTPUT_TYPE_MISMATCH",
    );
    expect(rewrite.details).toMatchObject({ field: "output.revenue", expected_type: "number", actual_type: "string" });
    // The downstream phase is ready; claiming it wires its inputs from fetch's output.
    const claimed = await admin().send("tasksClaim", { task_id: analyseTask, body: {} });
    expect(claimed.status).toBe(200);
    expect(claimed.data.input).toEqual({ rev: 10, finding: { source: "ledger", confidence: 0.9 } });

    // Suspension of the run's intent: the running phase shows in suspended_phases.
    expect((await admin().send("tasksStart", { task_id: analyseTask, body: {} })).status).toBe(200);
    const current = await admin().ops.intentsGet({ intent_id: run.intent_id });
    const suspended = await admin().send("governanceSuspend", {
      intent_id: run.intent_id,
      ifMatch: current.version,
      body: { question: "ok?", response_type: "confirm", fallback_policy: "fail", timeout_seconds: 600 },
    });
    expect(suspended.status).toBeLessThan(300);
    const wf = await admin().ops.workflowsGet({ workflow_id: workflow.id });
    expect(wf.runs![0]!.progress.suspended_phases).toEqual([
      { phase_name: "analyse", task_id: analyseTask, intent_id: run.intent_id, suspended_since: expect.any(String), expires_at: expect.any(String) },
    ]);
  });

  it("claiming a phase whose input does not resolve is 409 UNRESOLVABLE_INPUT naming the refs", async () => {
    const yaml = `
workflow:
  fetch:
    inputs:
      quarter: $trigger.quarter
`;
    const workflow = await createWorkflow({ name: "needs quarter", yaml_spec: yaml });
    const run = await trigger(workflow.id);
    const taskId = run.phases[0]!.task_id;
    const refused = await expectRejected(admin().ops.tasksClaim({ task_id: taskId, body: {} }), 409, "UNRESOLVABLE_INPUT");
    expect(refused.details).toMatchObject({ phase_name: "fetch", unresolvable_refs: ["$trigger.quarter"] });
    expect(await getTask(taskId)).toMatchObject({ status: "ready", version: 1 });
  });

  it("a list page stops before 768 KiB of JSON; offset continues it", async () => {
    const all = await listWorkflows({ limit: 200 });
    const big = `# ${"x".repeat(200 * 1024)}\nworkflow:\n  only:\n    title: Only\n`;
    const made: string[] = [];
    for (let i = 0; i < 4; i++) made.push((await createWorkflow({ name: `big ${i}`, yaml_spec: big })).id);
    const page = await listWorkflows({ limit: 200, offset: all.length });
    expect(page.map((w) => w.id)).toEqual(made.slice(0, 3));
    const rest = await listWorkflows({ limit: 200, offset: all.length + page.length });
    expect(rest.map((w) => w.id)).toEqual(made.slice(3));
  });
});

describe("changing and deleting a workflow definition (docs/workflows.md)", () => {
  const ONE = "workflow:\n  fetch:\n    title: Fetch\n    outputs:\n      revenue: number\n";
  const TWO = "workflow:\n  fetch:\n    title: Fetch\n  publish:\n    title: Publish\n    depends_on: [fetch]\n";
  it("PATCH needs If-Match, checks the YAML as create does, and leaves runs already started as they were", async () => {
    const created = await createWorkflow({ name: "report", yaml_spec: ONE });
    const run = await trigger(created.id, { inputs: {} });
    const patch = (body: BodyOf<"workflowsUpdate">, version: number) => coordinator().send("workflowsUpdate", { workflow_id: created.id, ifMatch: version, body });
    // Raw on purpose: a PATCH without If-Match, which the typed request forbids.
    expectError(await harness.rawApi(`/workflows/${created.id}`, { method: "PATCH", key: "coordinator", body: { name: "x" } }), 428, "PRECONDITION_REQUIRED");
    await expectRejected(patch({ name: "x" }, 7), 409, "VERSION_MISMATCH");
    await expectRejected(patch({ yaml_spec: "workflow:\n  a:\n    title: A\n    depends_on: [nope]\n" }, 1), 422, "INPUT_WIRING_ERROR");
    await expectRejected(patch({}, 1), 400, "VALIDATION_FAILED");
    expect(await admin().ops.workflowsGet({ workflow_id: created.id })).toMatchObject({ version: 1, name: "report", yaml_spec: ONE });
    const changed = await patch({ name: "report v2", yaml_spec: TWO }, 1);
    expect(changed.status).toBe(200);
    expect(changed.data).toMatchObject({ version: 2, name: "report v2", yaml_spec: TWO });
    expect(changed.data.phases.map((p) => p.name)).toEqual(["fetch", "publish"]);
    expect(changed.headers.get("etag")).toBe('"2"');
    // The run started before keeps its one phase; a new run has two.
    expect((await getPlan(run.plan_id)).progress.total).toBe(1);
    const next = await trigger(created.id, { inputs: {} });
    expect(next.phases.map((p) => p.phase_name)).toEqual(["fetch", "publish"]);
  });

  it("DELETE removes the definition (a stale If-Match is 409); its runs stay readable and go on", async () => {
    const created = await createWorkflow({ name: "gone", yaml_spec: ONE });
    const run = await trigger(created.id, { inputs: {} });
    const remove = (ifMatch?: number) => coordinator().send("workflowsDelete", { workflow_id: created.id, ifMatch });
    await expectRejected(remove(5), 409, "VERSION_MISMATCH");
    const deleted = await remove();
    expect(deleted.status).toBe(200);
    expect(deleted.data).toEqual({ status: "deleted", workflow_id: created.id });
    await expectRejected(admin().ops.workflowsGet({ workflow_id: created.id }), 404, "WORKFLOW_NOT_FOUND");
    await expectRejected(remove(), 404, "WORKFLOW_NOT_FOUND");
    await expectRejected(trigger(created.id, { inputs: {} }), 404, "WORKFLOW_NOT_FOUND");
    expect((await listWorkflows({ limit: 200 })).map((w) => w.id)).not.toContain(created.id);
    const task = run.phases[0]!.task_id;
    expect((await admin().send("tasksClaim", { task_id: task, body: {} })).status).toBe(200);
    expect((await admin().send("tasksStart", { task_id: task, body: {} })).status).toBe(200);
    expect((await admin().send("tasksComplete", { task_id: task, body: { output: { revenue: 3 } } })).status).toBe(200);
    expect(await getPlan(run.plan_id)).toMatchObject({ state: "completed" });
  });
});
