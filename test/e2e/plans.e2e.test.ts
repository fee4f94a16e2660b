import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { suspensionCommands, type Caller } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import type { BodyOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected, UNKNOWN_ID } from "../support/e2e-helpers";

/**
 * RFC 0012 tasks and plans as the official clients call them: the Python client's create_task
 * (POST /tasks with capabilities_required, depends_on, plan_id, priority), create_plan / get_plan /
 * list_plans / update_plan, and the MCP server's openintent_create_plan, openintent_decompose_task
 * and openintent_get_plan (docs/plans.md).
 */

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const coordinator = () => cluster.sdk("coordinator");
type TaskFields = Omit<BodyOf<"tasksCreateWithIntentId">, "intent_id" | "name">;
type PlanFields = Omit<BodyOf<"plansCreate">, "intent_id">;

/** The Python client's create_task: POST /tasks {intent_id, name, **kwargs}. */
async function clientCreateTask(intentId: string, name: string, kwargs: TaskFields = {}) {
  const res = await coordinator().send("tasksCreateWithIntentId", { body: { intent_id: intentId, name, ...kwargs } });
  expect(res.status).toBe(201);
  return res.data;
}

/** The tasks of an intent: with an offset the route answers the bare list (the client's form), not a page. */
async function tasksOf(intentId: string) {
  const list = await cluster.sdk().ops.tasksList({ intent_id: intentId, query: { offset: 0 } });
  if (!Array.isArray(list)) throw new Error(`expected the bare list of tasks, got ${JSON.stringify(list)}`);
  return list;
}
const getPlan = (planId: string) => cluster.sdk().ops.plansGet({ plan_id: planId });
const plansOf = (intentId: string, query: { limit?: number; offset?: number } = {}) => cluster.sdk().ops.plansList({ intent_id: intentId, query });
const createPlan = async (intentId: string, body: PlanFields = {}) => coordinator().ops.plansCreate({ body: { intent_id: intentId, ...body } });

describe("create_task with the client's fields", () => {
  it("stores and answers capabilities_required, depends_on, priority and metadata; defaults priority to normal", async () => {
    const intent = await createIntent(cluster);
    const first = await clientCreateTask(intent.id, "fetch_financials", { capabilities_required: ["data_access", "finance"], priority: "high", input: { quarter: "Q1" } });
    expect(first).toMatchObject({ name: "fetch_financials", capabilities_required: ["data_access", "finance"], priority: "high", plan_id: null, depends_on: [], status: "ready", metadata: {} });
    const second = await clientCreateTask(intent.id, "run_analysis", { depends_on: [first.id], metadata: { owner: "x" } });
    expect(second).toMatchObject({ priority: "normal", capabilities_required: [], depends_on: [first.id], status: "pending", metadata: { owner: "x" } });
    expect(await cluster.sdk().ops.tasksGet({ task_id: second.id })).toMatchObject({ depends_on: [first.id], priority: "normal" });
    const created = (await allEvents(cluster, intent.id)).find((e) => e.event_type === "task.created" && e.payload.task_id === first.id)!;
    expect(created.payload).toMatchObject({ capabilities_required: ["data_access", "finance"], priority: "high", plan_id: null });
  });

  it("refuses a malformed priority or capability with 400 and writes nothing", async () => {
    const intent = await createIntent(cluster);
    for (const bad of [{ priority: "" }, { priority: "Very High!" }, { capabilities_required: [""] }]) {
      await expectRejected(coordinator().ops.tasksCreateWithIntentId({ body: { intent_id: intent.id, name: "x", ...bad } }), 400, "VALIDATION_FAILED");
    }
    // Raw on purpose: a capability list that is not a list, which the typed body forbids.
    expectError(await cluster.api("/tasks", { body: { intent_id: intent.id, name: "x", capabilities_required: "finance" }, key: "coordinator" }), 400, "VALIDATION_FAILED");
    expect(await tasksOf(intent.id)).toEqual([]);
  });

  it("a task whose dependencies are unfinished cannot be claimed or started: 409 TASK_DEPENDENCIES_PENDING", async () => {
    const intent = await createIntent(cluster);
    const a = await clientCreateTask(intent.id, "a");
    const b = await clientCreateTask(intent.id, "b", { depends_on: [a.id] });
    const admin = cluster.sdk();
    const claim = (id: string) => admin.send("tasksClaim", { task_id: id, body: {} });
    const refused = await expectRejected(claim(b.id), 409, "TASK_DEPENDENCIES_PENDING");
    expect(refused.details.pending_dependencies).toEqual([{ task_id: a.id, status: "ready" }]);
    await expectRejected(admin.ops.tasksStart({ task_id: b.id, body: {} }), 409, "TASK_DEPENDENCIES_PENDING");
    await expectRejected(admin.ops.tasksPatch({ task_id: b.id, ifMatch: 1, body: { status: "claimed" } }), 409, "TASK_DEPENDENCIES_PENDING");
    expect(await admin.ops.tasksGet({ task_id: b.id })).toMatchObject({ status: "pending", version: 1 });
    expect((await claim(a.id)).status).toBe(200);
    expect((await admin.send("tasksStart", { task_id: a.id, body: {} })).status).toBe(200);
    expect((await admin.send("tasksComplete", { task_id: a.id, body: { output: {} } })).status).toBe(200);
    expect((await claim(b.id)).status).toBe(200);
  });
});

const run = async (taskId: string) => {
  expect((await cluster.sdk().send("tasksClaim", { task_id: taskId, body: {} })).status).toBe(200);
  expect((await cluster.sdk().send("tasksStart", { task_id: taskId, body: {} })).status).toBe(200);
};
const complete = async (taskId: string) => expect((await cluster.sdk().send("tasksComplete", { task_id: taskId, body: { output: {} } })).status).toBe(200);
const planEvents = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type.startsWith("plan."));

describe("the Python client's plans: create_plan, get_plan, list_plans, update_plan", () => {
  it("create_plan over existing tasks: draft, the tasks join it, plan.created; get_plan and list_plans (bare list) answer it with progress", async () => {
    const intent = await createIntent(cluster);
    const a = await clientCreateTask(intent.id, "a");
    const b = await clientCreateTask(intent.id, "b", { depends_on: [a.id] });
    const res = await coordinator().send("plansCreate", {
      body: { intent_id: intent.id, tasks: [a.id, b.id], checkpoints: [{ name: "review", after_task: a.id, approvers: ["lead"] }], conditions: [{ task_id: b.id, when: "true" }], on_failure: "fail", metadata: { k: 1 } },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    const plan = res.data;
    // The fields the client's Plan.from_dict reads.
    expect(plan).toMatchObject({
      intent_id: intent.id,
      version: 1,
      state: "draft",
      tasks: [a.id, b.id],
      checkpoints: [{ id: "cp_1", name: "review", after_task: a.id, requires_approval: true, approvers: ["lead"], on_timeout: "escalate", status: "pending" }],
      conditions: [{ id: "cond_1", task_id: b.id, when: "true", otherwise: "skip" }],
      on_failure: "fail",
      on_complete: "notify",
      metadata: { k: 1 },
      progress: { total: 2, done: 0, percent_complete: 0, suspended_tasks: [] },
    });
    expect(plan.steps.map((s) => [s.task_id, s.status])).toEqual([
      [a.id, "ready"],
      [b.id, "pending"],
    ]);
    expect(await cluster.sdk().ops.tasksGet({ task_id: a.id })).toMatchObject({ plan_id: plan.id, version: 2 });
    expect(await getPlan(plan.id)).toEqual(plan);
    const listed = await cluster.sdk().send("plansList", { intent_id: intent.id });
    expect(listed.status).toBe(200);
    expect(listed.data).toEqual([plan]);
    expect((await planEvents(intent.id)).map((e) => [e.event_type, e.payload.task_count])).toEqual([["plan.created", 2]]);
  });

  it("update_plan with If-Match: activate, stale 409, missing 428, an unknown state move 409; a task created with plan_id joins the list", async () => {
    const intent = await createIntent(cluster);
    const plan = await createPlan(intent.id);
    expect(plan).toMatchObject({ state: "draft", tasks: [] });
    const t = await clientCreateTask(intent.id, "joins", { plan_id: plan.id, priority: "low" });
    expect(t).toMatchObject({ plan_id: plan.id, priority: "low" });
    const joined = await getPlan(plan.id);
    expect(joined).toMatchObject({ version: 2, tasks: [t.id] });
    const patch = (body: BodyOf<"plansUpdate">, version: number) => coordinator().send("plansUpdate", { plan_id: plan.id, ifMatch: version, body });
    // Raw on purpose: a PATCH without If-Match, which the typed request forbids.
    expectError(await cluster.api(`/plans/${plan.id}`, { method: "PATCH", key: "coordinator", body: { state: "active" } }), 428, "PRECONDITION_REQUIRED");
    await expectRejected(patch({ state: "active" }, 1), 409, "VERSION_MISMATCH");
    await expectRejected(patch({ state: "completed" }, 2), 409, "INVALID_PLAN_TRANSITION");
    const active = await patch({ state: "active" }, 2);
    expect(active.status).toBe(200);
    expect(active.data).toMatchObject({ state: "active", version: 3 });
    expect(active.headers.get("etag")).toBe('"3"');
    expect((await planEvents(intent.id)).map((e) => e.event_type)).toEqual(["plan.created", "plan.updated", "plan.activated"]);
    // A task naming a plan of another intent, or no plan, is refused and nothing is written.
    const other = await createIntent(cluster);
    await expectRejected(coordinator().ops.tasksCreateWithIntentId({ body: { intent_id: other.id, name: "x", plan_id: plan.id } }), 422, "UNKNOWN_PLAN_REFERENCE");
    expect(await tasksOf(other.id)).toEqual([]);
  });

  it("a task belongs to one plan; tasks of another intent are unknown; nothing is written on refusal", async () => {
    const intent = await createIntent(cluster);
    const t = await clientCreateTask(intent.id, "t");
    const first = await createPlan(intent.id, { tasks: [t.id] });
    await expectRejected(createPlan(intent.id, { tasks: [t.id] }), 409, "TASK_IN_ANOTHER_PLAN");
    await expectRejected(createPlan(intent.id, { tasks: [UNKNOWN_ID] }), 422, "UNKNOWN_TASK_REFERENCE");
    expect((await plansOf(intent.id)).map((p) => p.id)).toEqual([first.id]);
    await expectRejected(getPlan(UNKNOWN_ID), 404, "PLAN_NOT_FOUND");
    await expectRejected(plansOf(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
    // Replacing the list: the task that leaves has its plan_id cleared.
    const left = await coordinator().ops.plansUpdate({ plan_id: first.id, ifMatch: 1, body: { tasks: [] } });
    expect(left).toMatchObject({ tasks: [], version: 2 });
    expect(await cluster.sdk().ops.tasksGet({ task_id: t.id })).toMatchObject({ plan_id: null });
  });

  it("an active plan completes when its last task completes, in the task's transaction; on_failure fail fails it", async () => {
    const intent = await createIntent(cluster);
    const a = await clientCreateTask(intent.id, "a");
    const b = await clientCreateTask(intent.id, "b", { depends_on: [a.id] });
    const plan = await createPlan(intent.id, { tasks: [a.id, b.id], state: "active" });
    await run(a.id);
    await complete(a.id);
    expect(await getPlan(plan.id)).toMatchObject({ state: "active", progress: { done: 1, percent_complete: 50 } });
    await run(b.id);
    await complete(b.id);
    const done = await getPlan(plan.id);
    expect(done).toMatchObject({ state: "completed", progress: { done: 2, percent_complete: 100 } });
    const log = await allEvents(cluster, intent.id);
    const completedAt = log.findIndex((e) => e.event_type === "plan.completed");
    expect(log[completedAt]!.payload).toMatchObject({ plan_id: plan.id, tasks_completed: 2, tasks_skipped: 0, from: "active", state: "completed" });
    // Written with b's completion, in its commit: the event right before is b's task.completed.
    expect(log[completedAt - 1]).toMatchObject({ event_type: "task.completed", payload: { task_id: b.id } });
    // A finished plan takes no more tasks; nothing is written.
    await expectRejected(coordinator().ops.tasksCreateWithIntentId({ body: { intent_id: intent.id, name: "late", plan_id: plan.id } }), 409, "INVALID_PLAN_TRANSITION");
    expect((await tasksOf(intent.id)).map((t) => t.name)).toEqual(["a", "b"]);

    const c = await clientCreateTask(intent.id, "c");
    const failing = await createPlan(intent.id, { tasks: [c.id], state: "active", on_failure: "fail" });
    await run(c.id);
    expect((await cluster.sdk().send("tasksFail", { task_id: c.id, body: { error: "boom" } })).status).toBe(200);
    expect(await getPlan(failing.id)).toMatchObject({ state: "failed", progress: { by_status: { failed: 1 } } });
    expect((await planEvents(intent.id)).at(-1)).toMatchObject({ event_type: "plan.failed", payload: { failed_task_id: c.id, error: "boom" } });
  });

  it("progress lists suspended_tasks while the intent is suspended awaiting input, and drops them on resume", async () => {
    const intent = await createIntent(cluster);
    const t = await clientCreateTask(intent.id, "t");
    const plan = await createPlan(intent.id, { tasks: [t.id], state: "active" });
    await run(t.id);
    const governance: Caller = { principal: "governance", roles: ["admin"], actor: "governance", agent_id: null };
    const suspended = (await cluster.client.request(suspensionCommands.begin, governance, {
      intent_id: intent.id,
      suspension: { question: "Go?", response_type: "confirm", fallback_policy: "fail", timeout_seconds: 600 } as never,
    })) as any;
    const during = await getPlan(plan.id);
    expect(during.progress.suspended_tasks).toEqual([
      { task_id: t.id, intent_id: intent.id, suspended_since: suspended.state._suspension.suspended_at, expires_at: suspended.state._suspension.expires_at },
    ]);
    expect(during.progress.by_status.blocked).toBe(1);
    await cluster.client.request(suspensionCommands.end, governance, { intent_id: intent.id, suspension_id: suspended.state._suspension.id, resolution: "responded", response: "yes" } as never);
    expect((await getPlan(plan.id)).progress).toMatchObject({ suspended_tasks: [], by_status: { running: 1, blocked: 0 } });
  });
});

describe("the MCP server's plans: openintent_create_plan, openintent_get_plan, openintent_decompose_task", () => {
  it("create_plan with steps: each step a new task in order, depends_on by title; get_plan under the intent", async () => {
    const intent = await createIntent(cluster);
    const res = await coordinator().send("plansCreateForIntent", {
      intent_id: intent.id,
      body: { title: "Launch", steps: [{ title: "draft", description: "write it" }, { title: "review", depends_on: ["draft"] }, { title: "publish", depends_on: ["review"] }], created_by: "mcp-agent" },
    });
    expect(res.status).toBe(201);
    const plan = res.data;
    expect(plan).toMatchObject({ title: "Launch", state: "active", progress: { total: 3 } });
    expect(plan.steps.map((s) => [s.title, s.status])).toEqual([
      ["draft", "ready"],
      ["review", "pending"],
      ["publish", "pending"],
    ]);
    expect(plan.steps[1]!.depends_on).toEqual([plan.steps[0]!.task_id]);
    expect(plan.tasks).toEqual(plan.steps.map((s) => s.task_id));
    const got = await cluster.sdk().ops.plansGetOfIntent({ intent_id: intent.id, plan_id: plan.id });
    expect(got).toEqual(plan);
    const elsewhere = await createIntent(cluster);
    await expectRejected(cluster.sdk().ops.plansGetOfIntent({ intent_id: elsewhere.id, plan_id: plan.id }), 404, "PLAN_NOT_FOUND");
    // A step naming a later or unknown step is refused; nothing is written.
    await expectRejected(
      coordinator().ops.plansCreateForIntent({ intent_id: elsewhere.id, body: { title: "x", steps: [{ title: "a", depends_on: ["b"] }, { title: "b" }] } }),
      422,
      "UNKNOWN_TASK_REFERENCE",
    );
    expect(await tasksOf(elsewhere.id)).toEqual([]);
    expect(await plansOf(elsewhere.id)).toEqual([]);
  });

  it("decompose_task: the description becomes a plan of subtasks with dependencies, nested to max_depth", async () => {
    const intent = await createIntent(cluster);
    const res = await coordinator().send("plansDecompose", {
      intent_id: intent.id,
      body: { task_description: "Ship the release\n1. Build\n   - backend\n   - frontend\n2. Test\n3. Publish", max_depth: 2, requested_by: "mcp-agent" },
    });
    expect(res.status).toBe(201);
    const plan = res.data;
    expect(plan).toMatchObject({ title: "Ship the release", state: "active", progress: { total: 6 } });
    const byTitle = Object.fromEntries(plan.steps.map((s) => [s.title, s]));
    expect(Object.keys(byTitle)).toEqual(["Ship the release", "Build", "backend", "frontend", "Test", "Publish"]);
    const step = (title: string) => byTitle[title]!;
    expect(step("backend")).toMatchObject({ parent_task_id: step("Build").task_id, status: "ready" });
    expect(step("frontend")).toMatchObject({ depends_on: [step("backend").task_id], status: "pending" });
    expect(step("Test")).toMatchObject({ depends_on: [step("Build").task_id], parent_task_id: step("Ship the release").task_id });
    // Doing the subtasks in order completes the plan.
    for (const title of ["backend", "frontend", "Build", "Test", "Publish", "Ship the release"]) {
      await run(step(title).task_id);
      await complete(step(title).task_id);
    }
    expect(await getPlan(plan.id)).toMatchObject({ state: "completed", progress: { percent_complete: 100 } });
    await expectRejected(coordinator().ops.plansDecompose({ intent_id: intent.id, body: { task_description: "  " } }), 400, "VALIDATION_FAILED");
  });
});

describe("GET /intents/{id}/plans is bounded", () => {
  it("pages by limit (default 100, at most 500) and offset, oldest first; the client's bare call gets the first page", async () => {
    const intent = await createIntent(cluster);
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.push((await createPlan(intent.id, { title: `p${n}` })).id);
    expect((await plansOf(intent.id)).map((p) => p.id)).toEqual(ids);
    expect((await plansOf(intent.id, { limit: 2 })).map((p) => p.id)).toEqual(ids.slice(0, 2));
    expect((await plansOf(intent.id, { limit: 2, offset: 2 })).map((p) => p.id)).toEqual(ids.slice(2));
    await expectRejected(plansOf(intent.id, { limit: 501 }), 400, "VALIDATION_FAILED");
    await expectRejected(plansOf(intent.id, { limit: 0 }), 400, "VALIDATION_FAILED");
  });
});
