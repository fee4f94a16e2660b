import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, uniqueTag } from "../support/e2e-helpers";

/**
 * The coordinator's guardrails beyond its decisions (RFC-0013 3, docs/coordinators.md
 * "Guardrails"): scope guardrails on the tasks and plans the lease holder creates, on_exceed,
 * the temporal and failure timers, the guardrail and lease routes, and the supervisor's actions.
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const advance = (seconds: number) => clock().advance(seconds * 1000);
/** The agent key acting as `agentId`. */
const as = (agentId: string) => ({ key: null, headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": agentId } });
/** The coordinator key acting as `agentId`: tasks and plans are created by coordinator keys. */
const coordinatorAs = (agentId: string) => ({ key: null, headers: { "X-API-Key": TEST_KEYS.coordinator, "X-Agent-ID": agentId } });

const take = (intentId: string, agentId: string, extra: Record<string, unknown> = {}) =>
  cluster.api("/coordinators", { ...as(agentId), body: { agent_id: agentId, intent_id: intentId, heartbeat_interval_seconds: 3600, ...extra } });
const createTask = (intentId: string, agentId: string | null, body: Record<string, unknown>) =>
  cluster.api(`/intents/${intentId}/tasks`, agentId ? { ...coordinatorAs(agentId), body } : { body });
const taskCount = async (intentId: string) => (await cluster.api(`/intents/${intentId}/tasks`)).body.tasks.length;
const violations = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type === "coordinator.guardrail_violation").map((e) => e.payload);
const decideAs = (intentId: string, agentId: string, decisionType: string) =>
  cluster.api("/decisions", { ...as(agentId), body: { coordinator_id: agentId, intent_id: intentId, decision_type: decisionType, summary: decisionType, rationale: "r" } });

describe("scope guardrails (RFC-0013 3.2, 3.4) on the tasks and plans the holder creates", () => {
  it("allowed_capabilities and require_human_for_capabilities: the holder's task is refused (403, logged, not created); a human key creates the human one", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { guardrails: { scope: { allowed_capabilities: ["analytics", "legal_review"] }, review: { require_human_for_capabilities: ["legal_review"] } } })).body;
    expect((await createTask(intent.id, holder, { title: "ok", capabilities_required: ["analytics"] })).status).toBe(201);
    const outside = await createTask(intent.id, holder, { title: "pay", capabilities_required: ["payments", "analytics"] });
    expectError(outside, 403, "GUARDRAIL_VIOLATION");
    expect(outside.body.details).toMatchObject({ guardrail: "allowed_capabilities", attempted_value: ["payments"], limit: ["analytics", "legal_review"] });
    const human = await createTask(intent.id, holder, { title: "legal", capabilities_required: ["legal_review"] });
    expectError(human, 403, "GUARDRAIL_VIOLATION");
    expect(human.body.details).toMatchObject({ guardrail: "require_human_for_capabilities", attempted_value: ["legal_review"] });
    expect(await taskCount(intent.id)).toBe(1);
    expect(await violations(intent.id)).toEqual([
      expect.objectContaining({ lease_id: lease.id, coordinator_id: holder, guardrail: "allowed_capabilities", action: "task_created", decision_type: null }),
      expect.objectContaining({ guardrail: "require_human_for_capabilities", action: "task_created" }),
    ]);
    // Not the coordinator's act: an admin (a human's key) creates the task needing a human.
    expect((await createTask(intent.id, null, { title: "legal", capabilities_required: ["legal_review"] })).status).toBe(201);
  });

  it("max_delegation_depth (sub-task nesting), max_concurrent_tasks (open tasks) and max_tasks_per_plan (tasks and plan steps)", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await take(intent.id, holder, { guardrails: { max_delegation_depth: 1, max_concurrent_tasks: 4, max_tasks_per_plan: 2 } });
    const root = (await createTask(intent.id, holder, { title: "root" })).body;
    const child = await createTask(intent.id, holder, { title: "child", parent_task_id: root.id });
    expect(child.status, JSON.stringify(child.body)).toBe(201);
    const grandchild = await createTask(intent.id, holder, { title: "grandchild", parent_task_id: child.body.id });
    expectError(grandchild, 403, "GUARDRAIL_VIOLATION");
    expect(grandchild.body.details).toMatchObject({ guardrail: "max_delegation_depth", attempted_value: 2, limit: 1 });

    const tooBig = await cluster.api(`/intents/${intent.id}/plans`, { ...coordinatorAs(holder), body: { steps: [{ title: "a" }, { title: "b" }, { title: "c" }] } });
    expectError(tooBig, 403, "GUARDRAIL_VIOLATION");
    expect(tooBig.body.details).toMatchObject({ guardrail: "max_tasks_per_plan", attempted_value: 3, limit: 2 });
    expect((await cluster.api(`/intents/${intent.id}/plans`)).body).toEqual([]);
    const plan = await cluster.api(`/intents/${intent.id}/plans`, { ...coordinatorAs(holder), body: { steps: [{ title: "a" }, { title: "b" }] } });
    expect(plan.status, JSON.stringify(plan.body)).toBe(201);
    // Four open tasks now (root, child, a, b): a fifth is refused, whichever plan.
    const third = await createTask(intent.id, holder, { title: "c", plan_id: plan.body.id });
    expectError(third, 403, "GUARDRAIL_VIOLATION");
    expect(third.body.details).toMatchObject({ guardrail: "max_tasks_per_plan", attempted_value: 3, limit: 2 });
    const fifth = await createTask(intent.id, holder, { title: "fifth" });
    expectError(fifth, 403, "GUARDRAIL_VIOLATION");
    expect(fifth.body.details).toMatchObject({ guardrail: "max_concurrent_tasks", attempted_value: 5, limit: 4 });
    // A cancelled task is no longer open: room for one more.
    expect((await cluster.api(`/tasks/${root.id}/cancel`, { key: "coordinator", body: {} })).status).toBe(200);
    expect((await createTask(intent.id, holder, { title: "fifth" })).status).toBe(201);
    expect((await violations(intent.id)).map((v) => [v.guardrail, v.action])).toEqual([
      ["max_delegation_depth", "task_created"],
      ["max_tasks_per_plan", "plan_created"],
      ["max_tasks_per_plan", "task_created"],
      ["max_concurrent_tasks", "task_created"],
    ]);
  });

  it("an agent that is not the holder (or whose lease is unresponsive) is not held to the lease's guardrails", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await take(intent.id, holder, { heartbeat_interval_seconds: 30, guardrails: { max_concurrent_tasks: 0 } });
    expectError(await createTask(intent.id, holder, { title: "t" }), 403, "GUARDRAIL_VIOLATION");
    expect((await createTask(intent.id, uniqueTag("other"), { title: "t" })).status).toBe(201);
    advance(61);
    expect((await createTask(intent.id, holder, { title: "t2" })).status).toBe(201);
  });
});

describe("on_exceed (RFC-0013 3.1)", () => {
  it("pause: the refusal pauses the lease; the paused holder's work is refused (409) while it may still escalate", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { guardrails: { scope: { max_concurrent_tasks: 1 }, budget: { on_exceed: "pause" } } })).body;
    expect((await createTask(intent.id, holder, { title: "one" })).status).toBe(201);
    expectError(await createTask(intent.id, holder, { title: "two" }), 403, "GUARDRAIL_VIOLATION");
    const paused = (await cluster.api(`/coordinators/${lease.id}`)).body;
    expect(paused).toMatchObject({ status: "paused", paused_by: "system" });
    expect(paused.pause_reason).toContain("max_concurrent_tasks");
    expectError(await createTask(intent.id, holder, { title: "three" }), 409, "COORDINATOR_PAUSED");
    expectError(await decideAs(intent.id, holder, "plan_created"), 409, "COORDINATOR_PAUSED");
    expect((await decideAs(intent.id, holder, "escalation_initiated")).status).toBe(201);
    const types = (await allEvents(cluster, intent.id)).map((e) => e.event_type).filter((t) => t.startsWith("coordinator."));
    expect(types.filter((t) => t === "coordinator.paused")).toHaveLength(1);
  });

  it("escalate: each refusal opens one escalation to a human through governance, resolvable as any escalation", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { supervisor_id: "lead", guardrails: { max_concurrent_tasks: 0, on_exceed: "escalate" } })).body;
    expectError(await createTask(intent.id, holder, { title: "t" }), 403, "GUARDRAIL_VIOLATION");
    const escalations = await vi.waitFor(
      async () => {
        const listed = (await cluster.api(`/escalations?intent_id=${intent.id}`)).body.escalations;
        expect(listed).toHaveLength(1);
        return listed;
      },
      { timeout: 5000, interval: 50 },
    );
    expect(escalations[0]).toMatchObject({ intent_id: intent.id, escalated_by: holder, status: "pending", priority: "high", context: { guardrail: "max_concurrent_tasks", lease_id: lease.id, escalated_to: "lead" } });
    const initiated = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.escalation_initiated");
    expect(initiated.map((e) => e.id)).toEqual([escalations[0].id]);
    expect((await cluster.api(`/coordinators/${lease.id}`)).body.status).toBe("active");
    const resolved = await cluster.api(`/escalations/${escalations[0].id}/resolve`, { key: "operator", body: { resolution: "raise the limit" } });
    expect(resolved.status, JSON.stringify(resolved.body)).toBe(200);
  });

  it("an on_exceed the server does not serve (fail) is refused when the lease is taken (400)", async () => {
    const intent = await createIntent(cluster);
    expectError(await take(intent.id, uniqueTag("coord"), { guardrails: { on_exceed: "fail" } }), 400, "VALIDATION_FAILED");
    expectError(await take(intent.id, uniqueTag("coord"), { guardrails: { scope: { allowed_capabilities: "all" } } }), 400, "VALIDATION_FAILED");
  });
});

describe("temporal and failure timers (RFC-0013 3.3, 3.4)", () => {
  const stalls = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type === "coordinator.stalled");
  const sweep = () => cluster.intents.coordinatorStallSweeper.sweep();

  it("require_progress_every_minutes: one coordinator.stalled per stall on the server clock, even with sweeps racing; progress starts a new window", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { supervisor_id: "lead", guardrails: { temporal: { require_progress_every_minutes: 30 } } })).body;
    advance(29 * 60);
    await sweep();
    expect(await stalls(intent.id)).toEqual([]);
    advance(2 * 60);
    await Promise.all([sweep(), sweep(), sweep()]);
    const first = await stalls(intent.id);
    expect(first.map((e) => e.payload)).toEqual([
      { lease_id: lease.id, coordinator_id: holder, supervisor_id: "lead", last_progress_at: lease.granted_at, require_progress_every_minutes: 30 },
    ]);
    // Heartbeats are not progress; the same stall is not reported again.
    expect((await cluster.api(`/coordinators/${lease.id}/heartbeat`, { ...as(holder), method: "POST" })).status).toBe(200);
    advance(40 * 60);
    await sweep();
    expect(await stalls(intent.id)).toHaveLength(1);
    expect((await decideAs(intent.id, holder, "task_assigned")).status).toBe(201);
    advance(29 * 60);
    await sweep();
    expect(await stalls(intent.id)).toHaveLength(1);
    advance(60);
    await Promise.all([sweep(), sweep()]);
    expect(await stalls(intent.id)).toHaveLength(2);
  });

  it("auto_escalate_after_failures: the failure that reaches the limit opens one escalation; a completion starts the count again", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await take(intent.id, holder, { supervisor_id: "lead", guardrails: { review: { auto_escalate_after_failures: 2 } } });
    const admin = (path: string, body: unknown = {}) => cluster.api(path, { key: "admin", body });
    const finish = async (action: "fail" | "complete") => {
      const task = (await createTask(intent.id, null, { title: action })).body;
      for (const step of ["claim", "start"]) expect((await admin(`/tasks/${task.id}/${step}`)).status).toBe(200);
      expect((await admin(`/tasks/${task.id}/${action}`, action === "fail" ? { error: "boom" } : { output: {} })).status).toBe(200);
      advance(1);
    };
    const initiated = async () => (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.escalation_initiated");
    await finish("fail");
    await finish("complete");
    await finish("fail");
    expect(await initiated()).toEqual([]);
    await finish("fail");
    await finish("fail");
    const events = await initiated();
    expect(events.map((e) => e.payload)).toEqual([expect.objectContaining({ coordinator_id: holder, escalated_to: "lead", guardrail: "auto_escalate_after_failures" })]);
    await vi.waitFor(
      async () => {
        const listed = (await cluster.api(`/escalations?intent_id=${intent.id}`)).body.escalations;
        expect(listed.map((e: any) => e.id)).toEqual([events[0].id]);
      },
      { timeout: 5000, interval: 50 },
    );
  });
});
