import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError } from "../support/e2e-helpers";

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

/** The Python client's create_task: POST /tasks {intent_id, name, **kwargs}. */
async function clientCreateTask(intentId: string, name: string, kwargs: Record<string, unknown> = {}): Promise<any> {
  const res = await cluster.api("/tasks", { body: { intent_id: intentId, name, ...kwargs }, key: "coordinator" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

describe("create_task with the client's fields", () => {
  it("stores and answers capabilities_required, depends_on, priority and metadata; defaults priority to normal", async () => {
    const intent = await createIntent(cluster);
    const first = await clientCreateTask(intent.id, "fetch_financials", { capabilities_required: ["data_access", "finance"], priority: "high", input: { quarter: "Q1" } });
    expect(first).toMatchObject({ name: "fetch_financials", capabilities_required: ["data_access", "finance"], priority: "high", plan_id: null, depends_on: [], status: "ready", metadata: {} });
    const second = await clientCreateTask(intent.id, "run_analysis", { depends_on: [first.id], metadata: { owner: "x" } });
    expect(second).toMatchObject({ priority: "normal", capabilities_required: [], depends_on: [first.id], status: "pending", metadata: { owner: "x" } });
    expect((await cluster.api(`/tasks/${second.id}`)).body).toMatchObject({ depends_on: [first.id], priority: "normal" });
    const created = (await allEvents(cluster, intent.id)).find((e) => e.event_type === "task.created" && e.payload.task_id === first.id);
    expect(created.payload).toMatchObject({ capabilities_required: ["data_access", "finance"], priority: "high", plan_id: null });
  });

  it("refuses a malformed priority or capability with 400 and writes nothing", async () => {
    const intent = await createIntent(cluster);
    for (const bad of [{ priority: "" }, { priority: "Very High!" }, { capabilities_required: [""] }, { capabilities_required: "finance" }]) {
      const res = await cluster.api("/tasks", { body: { intent_id: intent.id, name: "x", ...bad }, key: "coordinator" });
      expectError(res, 400, "VALIDATION_FAILED");
    }
    expect((await cluster.api(`/intents/${intent.id}/tasks?offset=0`)).body).toEqual([]);
  });

  it("a task whose dependencies are unfinished cannot be claimed or started: 409 TASK_DEPENDENCIES_PENDING", async () => {
    const intent = await createIntent(cluster);
    const a = await clientCreateTask(intent.id, "a");
    const b = await clientCreateTask(intent.id, "b", { depends_on: [a.id] });
    const claim = (id: string) => cluster.api(`/tasks/${id}/claim`, { body: {}, key: "admin" });
    const refused = await claim(b.id);
    expectError(refused, 409, "TASK_DEPENDENCIES_PENDING");
    expect(refused.body.details.pending_dependencies).toEqual([{ task_id: a.id, status: "ready" }]);
    expectError(await cluster.api(`/tasks/${b.id}/start`, { body: {}, key: "admin" }), 409, "TASK_DEPENDENCIES_PENDING");
    expectError(await cluster.api(`/tasks/${b.id}`, { method: "PATCH", body: { status: "claimed" }, headers: { "If-Match": "1" }, key: "admin" }), 409, "TASK_DEPENDENCIES_PENDING");
    expect((await cluster.api(`/tasks/${b.id}`)).body).toMatchObject({ status: "pending", version: 1 });
    expect((await claim(a.id)).status).toBe(200);
    expect((await cluster.api(`/tasks/${a.id}/start`, { body: {}, key: "admin" })).status).toBe(200);
    expect((await cluster.api(`/tasks/${a.id}/complete`, { body: { output: {} }, key: "admin" })).status).toBe(200);
    expect((await claim(b.id)).status).toBe(200);
  });
});
