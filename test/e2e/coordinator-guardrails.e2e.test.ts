import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import type { BodyOf, Intentmesh } from "@intentmesh/sdk";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { knownAgentStatus } from "../../services/intents/src/agents/agent-status";
import { openGuardrailEscalation } from "../../services/governance/src/coordinator-escalations";
import { allEvents, createIntent, expectError, expectRejected, statusOf, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";

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
/** The agent key acting as `agentId`, on the wire (for the requests the typed client cannot send). */
const as = (agentId: string) => ({ key: null, headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": agentId } });
/** The typed client of the agent key acting as `agentId`. */
const agent = (agentId: string) => cluster.sdk("agent", agentId);
/** The coordinator key acting as `agentId`: tasks and plans are created by coordinator keys. */
const coordinatorAs = (agentId: string) => cluster.sdk("coordinator", agentId);
/** A key without an acting agent: admin (a human's key) unless named. */
const keyed = (key: "admin" | "coordinator" | "operator" = "admin") => cluster.sdk(key);

const take = (intentId: string, agentId: string, extra: Partial<BodyOf<"coordinatorsCreateLease">> = {}) =>
  agent(agentId).send("coordinatorsCreateLease", { body: { agent_id: agentId, intent_id: intentId, heartbeat_interval_seconds: 3600, ...extra } });
const createTask = (intentId: string, agentId: string | null, body: BodyOf<"tasksCreate">) =>
  (agentId ? coordinatorAs(agentId) : keyed()).send("tasksCreate", { intent_id: intentId, body });
const taskCount = async (intentId: string) => {
  const listed = await keyed().ops.tasksList({ intent_id: intentId });
  // Without offset the list is the page form {tasks, next_cursor, has_more}.
  if (Array.isArray(listed)) throw new Error("expected a page {tasks, next_cursor, has_more}, got a bare array");
  return listed.tasks.length;
};
const violations = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type === "coordinator.guardrail_violation").map((e) => e.payload);
const decideAs = (intentId: string, agentId: string, decisionType: BodyOf<"decisionsCreateRecord">["decision_type"]) =>
  agent(agentId).send("decisionsCreateRecord", { body: { coordinator_id: agentId, intent_id: intentId, decision_type: decisionType, summary: decisionType, rationale: "r" } });
const getLease = (leaseId: string) => keyed().ops.coordinatorsGetLease({ lease_id: leaseId });
const escalationsOf = async (intentId: string) => (await keyed().ops.escalationsList({ query: { intent_id: intentId } })).escalations;
/** Claims and starts a task with the admin key, each step answered 200. */
const claimAndStart = async (taskId: string) => {
  expect((await keyed().send("tasksClaim", { task_id: taskId, body: {} })).status).toBe(200);
  expect((await keyed().send("tasksStart", { task_id: taskId, body: {} })).status).toBe(200);
};

describe("scope guardrails (RFC-0013 3.2, 3.4) on the tasks and plans the holder creates", () => {
  it("allowed_capabilities and require_human_for_capabilities: the holder's task is refused (403, logged, not created); a human key creates the human one", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { guardrails: { scope: { allowed_capabilities: ["analytics", "legal_review"] }, review: { require_human_for_capabilities: ["legal_review"] } } })).data;
    expect((await createTask(intent.id, holder, { title: "ok", capabilities_required: ["analytics"] })).status).toBe(201);
    const outside = await expectRejected(createTask(intent.id, holder, { title: "pay", capabilities_required: ["payments", "analytics"] }), 403, "GUARDRAIL_VIOLATION");
    expect(outside.details).toMatchObject({ guardrail: "allowed_capabilities", attempted_value: ["payments"], limit: ["analytics", "legal_review"] });
    const human = await expectRejected(createTask(intent.id, holder, { title: "legal", capabilities_required: ["legal_review"] }), 403, "GUARDRAIL_VIOLATION");
    expect(human.details).toMatchObject({ guardrail: "require_human_for_capabilities", attempted_value: ["legal_review"] });
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
    const root = (await createTask(intent.id, holder, { title: "root" })).data;
    const child = await createTask(intent.id, holder, { title: "child", parent_task_id: root.id });
    expect(child.status, JSON.stringify(child.data)).toBe(201);
    const grandchild = await expectRejected(createTask(intent.id, holder, { title: "grandchild", parent_task_id: child.data.id }), 403, "GUARDRAIL_VIOLATION");
    expect(grandchild.details).toMatchObject({ guardrail: "max_delegation_depth", attempted_value: 2, limit: 1 });

    const createPlan = (body: BodyOf<"plansCreateForIntent">) => coordinatorAs(holder).send("plansCreateForIntent", { intent_id: intent.id, body });
    const tooBig = await expectRejected(createPlan({ steps: [{ title: "a" }, { title: "b" }, { title: "c" }] }), 403, "GUARDRAIL_VIOLATION");
    expect(tooBig.details).toMatchObject({ guardrail: "max_tasks_per_plan", attempted_value: 3, limit: 2 });
    expect(await keyed().ops.plansList({ intent_id: intent.id })).toEqual([]);
    const plan = await createPlan({ steps: [{ title: "a" }, { title: "b" }] });
    expect(plan.status, JSON.stringify(plan.data)).toBe(201);
    // Four open tasks now (root, child, a, b): a fifth is refused, whichever plan.
    const third = await expectRejected(createTask(intent.id, holder, { title: "c", plan_id: plan.data.id }), 403, "GUARDRAIL_VIOLATION");
    expect(third.details).toMatchObject({ guardrail: "max_tasks_per_plan", attempted_value: 3, limit: 2 });
    const fifth = await expectRejected(createTask(intent.id, holder, { title: "fifth" }), 403, "GUARDRAIL_VIOLATION");
    expect(fifth.details).toMatchObject({ guardrail: "max_concurrent_tasks", attempted_value: 5, limit: 4 });
    // A cancelled task is no longer open: room for one more.
    expect((await keyed("coordinator").send("tasksCancel", { task_id: root.id, body: {} })).status).toBe(200);
    expect((await createTask(intent.id, holder, { title: "fifth" })).status).toBe(201);
    expect((await violations(intent.id)).map((v) => [v.guardrail, v.action])).toEqual([
      ["max_delegation_depth", "task_created"],
      ["max_tasks_per_plan", "plan_created"],
      ["max_tasks_per_plan", "task_created"],
      ["max_concurrent_tasks", "task_created"],
    ]);
  });

  it("a decomposition by the holder: its subtask tree counts toward max_delegation_depth and max_tasks_per_plan", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await take(intent.id, holder, { guardrails: { scope: { max_delegation_depth: 1, max_tasks_per_plan: 4 } } });
    const decompose = (body: BodyOf<"plansDecompose">) => coordinatorAs(holder).send("plansDecompose", { intent_id: intent.id, body });
    const description = "Ship the release\n1. Build\n   - backend\n2. Test\n3. Publish";
    const deep = await expectRejected(decompose({ task_description: description, max_depth: 2 }), 403, "GUARDRAIL_VIOLATION");
    expect(deep.details).toMatchObject({ guardrail: "max_delegation_depth", attempted_value: 2, limit: 1 });
    expect(await keyed().ops.plansList({ intent_id: intent.id })).toEqual([]);
    const flat = await decompose({ task_description: description, max_depth: 1 });
    expect(flat.status, JSON.stringify(flat.data)).toBe(201);
    expect(flat.data.progress.total).toBe(4);
    const wide = await expectRejected(decompose({ task_description: "Do\n1. a\n2. b\n3. c\n4. d", max_depth: 1 }), 403, "GUARDRAIL_VIOLATION");
    expect(wide.details).toMatchObject({ guardrail: "max_tasks_per_plan", attempted_value: 5, limit: 4 });
    expect((await violations(intent.id)).map((v) => v.action)).toEqual(["plan_decomposed", "plan_decomposed"]);
  });

  it("an agent that is not the holder (or whose lease is unresponsive) is not held to the lease's guardrails", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await take(intent.id, holder, { heartbeat_interval_seconds: 30, guardrails: { max_concurrent_tasks: 0 } });
    await expectRejected(createTask(intent.id, holder, { title: "t" }), 403, "GUARDRAIL_VIOLATION");
    expect((await createTask(intent.id, uniqueTag("other"), { title: "t" })).status).toBe(201);
    advance(61);
    expect((await createTask(intent.id, holder, { title: "t2" })).status).toBe(201);
  });
});

describe("on_exceed (RFC-0013 3.1)", () => {
  it("pause: the refusal pauses the lease; the paused holder's work is refused (409) while it may still escalate", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { guardrails: { scope: { max_concurrent_tasks: 1 }, budget: { on_exceed: "pause" } } })).data;
    expect((await createTask(intent.id, holder, { title: "one" })).status).toBe(201);
    await expectRejected(createTask(intent.id, holder, { title: "two" }), 403, "GUARDRAIL_VIOLATION");
    const paused = await getLease(lease.id);
    expect(paused).toMatchObject({ status: "paused", paused_by: "system" });
    expect(paused.pause_reason).toContain("max_concurrent_tasks");
    await expectRejected(createTask(intent.id, holder, { title: "three" }), 409, "COORDINATOR_PAUSED");
    await expectRejected(decideAs(intent.id, holder, "plan_created"), 409, "COORDINATOR_PAUSED");
    expect((await decideAs(intent.id, holder, "escalation_initiated")).status).toBe(201);
    const types = (await allEvents(cluster, intent.id)).map((e) => e.event_type).filter((t) => t.startsWith("coordinator."));
    expect(types.filter((t) => t === "coordinator.paused")).toHaveLength(1);
  });

  it("escalate: each refusal opens one escalation to a human through governance, resolvable as any escalation", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { supervisor_id: "lead", guardrails: { max_concurrent_tasks: 0, on_exceed: "escalate" } })).data;
    await expectRejected(createTask(intent.id, holder, { title: "t" }), 403, "GUARDRAIL_VIOLATION");
    const escalations = await vi.waitFor(
      async () => {
        const listed = await escalationsOf(intent.id);
        expect(listed).toHaveLength(1);
        return listed;
      },
      { timeout: 5000, interval: 50 },
    );
    expect(escalations[0]).toMatchObject({ intent_id: intent.id, escalated_by: holder, status: "pending", priority: "high", context: { guardrail: "max_concurrent_tasks", lease_id: lease.id, escalated_to: "lead" } });
    const initiated = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.escalation_initiated");
    expect(initiated.map((e) => e.id)).toEqual([escalations[0]!.id]);
    expect((await getLease(lease.id)).status).toBe("active");
    // A redelivered event opens nothing more: the escalation's id is the event's.
    // The logged event is the one the consumer received; its payload is typed by the catalogue's definition.
    const redelivered = initiated[0] as Parameters<typeof openGuardrailEscalation>[1];
    expect(await cluster.governance.ctx.db.transaction((tx) => openGuardrailEscalation(tx, redelivered, clock().now()))).toBe(false);
    expect(await escalationsOf(intent.id)).toHaveLength(1);
    const resolved = await keyed("operator").send("escalationsResolve", { escalation_id: escalations[0]!.id, body: { resolution: "raise the limit" } });
    expect(resolved.status, JSON.stringify(resolved.data)).toBe(200);
  });

  it("an on_exceed the server does not serve (fail) is refused when the lease is taken (400)", async () => {
    const intent = await createIntent(cluster);
    await expectRejected(take(intent.id, uniqueTag("coord"), { guardrails: { on_exceed: "fail" } }), 400, "VALIDATION_FAILED");
    await expectRejected(take(intent.id, uniqueTag("coord"), { guardrails: { scope: { allowed_capabilities: "all" } } }), 400, "VALIDATION_FAILED");
  });
});

describe("temporal and failure timers (RFC-0013 3.3, 3.4)", () => {
  const stalls = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type === "coordinator.stalled");
  const sweep = () => cluster.intents.coordinatorStallSweeper.sweep();

  it("require_progress_every_minutes: one coordinator.stalled per stall on the server clock, even with sweeps racing; progress starts a new window", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { supervisor_id: "lead", guardrails: { temporal: { require_progress_every_minutes: 30 } } })).data;
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
    expect((await agent(holder).send("coordinatorsHeartbeat", { lease_id: lease.id })).status).toBe(200);
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
    const finish = async (action: "fail" | "complete") => {
      const task = (await createTask(intent.id, null, { title: action })).data;
      await claimAndStart(task.id);
      const finished = action === "fail" ? keyed().send("tasksFail", { task_id: task.id, body: { error: "boom" } }) : keyed().send("tasksComplete", { task_id: task.id, body: { output: {} } });
      expect((await finished).status).toBe(200);
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
        const listed = await escalationsOf(intent.id);
        expect(listed.map((e) => e.id)).toEqual([events[0]!.id]);
      },
      { timeout: 5000, interval: 50 },
    );
  });
});

describe("temporal guardrails on waits (RFC-0013 3.3): max_task_wait_hours, checkpoint_timeout_hours", () => {
  const sweep = () => cluster.intents.coordinatorStallSweeper.sweep();
  const heartbeat = async (leaseId: string, holder: string) => expect((await agent(holder).send("coordinatorsHeartbeat", { lease_id: leaseId })).status).toBe(200);
  const ofType = async (intentId: string, type: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type === type);

  it("max_task_wait_hours: a ready task no agent claimed within the limit is reported once, across racing sweeps, and on_exceed escalate opens one escalation", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { supervisor_id: "lead", guardrails: { temporal: { max_task_wait_hours: 2, require_progress_every_minutes: 150 }, on_exceed: "escalate" } })).data;
    const waiting = (await createTask(intent.id, null, { title: "waits" })).data;
    expect(waiting.status).toBe("ready");
    const taken = (await createTask(intent.id, null, { title: "taken" })).data;
    expect((await keyed().send("tasksClaim", { task_id: taken.id, body: {} })).status).toBe(200);
    advance(2 * 3600 - 60);
    await heartbeat(lease.id, holder);
    await sweep();
    expect(await ofType(intent.id, "coordinator.task_wait_exceeded")).toEqual([]);
    advance(60);
    await heartbeat(lease.id, holder);
    await Promise.all([sweep(), sweep(), sweep()]);
    advance(3 * 3600);
    await heartbeat(lease.id, holder);
    await sweep();
    const reported = await ofType(intent.id, "coordinator.task_wait_exceeded");
    expect(reported.map((e) => e.payload)).toEqual([
      { lease_id: lease.id, coordinator_id: holder, supervisor_id: "lead", task_id: waiting.id, waiting_since: expect.any(String), max_task_wait_hours: 2, on_exceed: "escalate" },
    ]);
    expect(Date.parse(String(reported[0]!.payload.waiting_since))).toBe(Date.parse(waiting.created_at));
    const initiated = await ofType(intent.id, "coordinator.escalation_initiated");
    expect(initiated.map((e) => e.payload)).toEqual([expect.objectContaining({ coordinator_id: holder, escalated_to: "lead", guardrail: "max_task_wait_hours" })]);
    await vi.waitFor(
      async () => expect((await escalationsOf(intent.id)).map((e) => e.id)).toEqual([initiated[0]!.id]),
      { timeout: 5000, interval: 50 },
    );
    // The report and its escalation are not progress: the stall counts from the last act on the intent (the claim).
    const stalled = (await ofType(intent.id, "coordinator.stalled")).map((e) => e.payload);
    expect(stalled).toEqual([expect.objectContaining({ lease_id: lease.id })]);
    expect(Date.parse(String(stalled[0]!.last_progress_at))).toBe(Date.parse(waiting.created_at));
    // An escalate-only guardrail does not pause the lease.
    expect((await getLease(lease.id)).status).toBe("active");
  });

  it("checkpoint_timeout_hours: a checkpoint awaiting its decision beyond the limit is reported once and on_exceed pause pauses the lease; a decided checkpoint is not", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { guardrails: { temporal: { checkpoint_timeout_hours: 24 }, on_exceed: "pause" } })).data;
    const createPlan = (intentId: string, body: BodyOf<"plansCreateForIntent">) => keyed().send("plansCreateForIntent", { intent_id: intentId, body });
    const created = await createPlan(intent.id, { title: "gated", steps: [{ title: "draft" }, { title: "publish", depends_on: ["draft"] }], checkpoints: [{ name: "review", after_task: "draft" }] });
    expect(created.status, JSON.stringify(created.data)).toBe(201);
    const draft = created.data.steps.find((s) => s.title === "draft")!.task_id;
    await claimAndStart(draft);
    expect((await keyed().send("tasksComplete", { task_id: draft, body: { output: {} } })).status).toBe(200);
    expect(await keyed().ops.plansGet({ plan_id: created.data.id })).toMatchObject({ state: "paused", checkpoints: [{ id: "cp_1", status: "reached" }] });
    for (let hours = 0; hours < 23; hours += 1) {
      advance(3600);
      await heartbeat(lease.id, holder);
    }
    await sweep();
    expect(await ofType(intent.id, "coordinator.checkpoint_timed_out")).toEqual([]);
    advance(3600);
    await heartbeat(lease.id, holder);
    await Promise.all([sweep(), sweep(), sweep()]);
    await sweep();
    const timedOut = await ofType(intent.id, "coordinator.checkpoint_timed_out");
    expect(timedOut.map((e) => e.payload)).toEqual([
      { lease_id: lease.id, coordinator_id: holder, supervisor_id: null, plan_id: created.data.id, checkpoint_id: "cp_1", reached_at: expect.any(String), checkpoint_timeout_hours: 24, on_exceed: "pause" },
    ]);
    expect((await ofType(intent.id, "coordinator.paused")).map((e) => e.payload)).toEqual([expect.objectContaining({ lease_id: lease.id, paused_by: "system", reason: expect.stringContaining("checkpoint_timeout_hours") })]);
    expect(await getLease(lease.id)).toMatchObject({ status: "paused", paused_by: "system" });
    expect(await ofType(intent.id, "coordinator.escalation_initiated")).toEqual([]);

    // A checkpoint decided in time is not reported.
    const other = await createIntent(cluster);
    const otherLease = (await take(other.id, holder, { guardrails: { checkpoint_timeout_hours: 1 } })).data;
    const gated = (await createPlan(other.id, { title: "gated", steps: [{ title: "draft" }], checkpoints: [{ name: "review", after_task: "draft" }] })).data;
    const only = gated.steps[0]!.task_id;
    await claimAndStart(only);
    expect((await keyed().send("tasksComplete", { task_id: only, body: { output: {} } })).status).toBe(200);
    expect((await keyed().send("plansCheckpointApprove", { plan_id: gated.id, checkpoint_id: "cp_1", body: {} })).status).toBe(200);
    advance(2 * 3600);
    await heartbeat(otherLease.id, holder);
    await sweep();
    expect(await ofType(other.id, "coordinator.checkpoint_timed_out")).toEqual([]);
  });
});

describe("the guardrail routes and PATCH /coordinators/{id} (RFC-0013 9)", () => {
  type Who = { key: null; headers: Record<string, string> } | { key: "admin" | "coordinator" };
  /**
   * Raw on purpose: the bodies the server refuses (a guardrail of the wrong type, an unknown key in
   * a section), which the type of BodyOf<"coordinatorsPatchGuardrails"> does not let through.
   */
  const patchGuardrails = (leaseId: string, who: Who, body: unknown, ifMatch?: number) =>
    cluster.api(`/coordinators/${leaseId}/guardrails`, { ...who, method: "PATCH", body, headers: { ...("headers" in who ? who.headers : {}), ...(ifMatch !== undefined ? { "If-Match": String(ifMatch) } : {}) } });
  const patchLease = (leaseId: string, who: Intentmesh, body: BodyOf<"coordinatorsUpdate">, ifMatch?: number) =>
    who.send("coordinatorsUpdate", { lease_id: leaseId, body, ...(ifMatch !== undefined ? { ifMatch } : {}) });

  it("GET answers the guardrails as stored and as enforced; PATCH is a merge patch by the supervisor, never the holder, and applies from the holder's next act", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lead = uniqueTag("lead");
    const lease = (await take(intent.id, holder, { supervisor_id: lead, guardrails: { max_concurrent_tasks: 1, budget: { max_budget_usd: 5, custom: "kept" } } })).data;
    const read = await keyed().send("coordinatorsGetGuardrails", { lease_id: lease.id });
    expect(read.status).toBe(200);
    expect(read.data).toEqual({ lease_id: lease.id, intent_id: intent.id, coordinator_id: holder, guardrails: { max_concurrent_tasks: 1, budget: { max_budget_usd: 5, custom: "kept" } }, enforced: { max_concurrent_tasks: 1, max_budget_usd: 5 }, version: 1 });
    expect(read.headers.get("etag")).toContain("1");
    expect((await createTask(intent.id, holder, { title: "one" })).status).toBe(201);
    await expectRejected(createTask(intent.id, holder, { title: "two" }), 403, "GUARDRAIL_VIOLATION");

    // The holder does not loosen its own guardrails, even with a coordinator key; nor does another agent.
    const patchAs = (client: Intentmesh, body: BodyOf<"coordinatorsPatchGuardrails">, ifMatch?: number) =>
      client.send("coordinatorsPatchGuardrails", { lease_id: lease.id, body, ...(ifMatch !== undefined ? { ifMatch } : {}) });
    await expectRejected(patchAs(agent(holder), { max_concurrent_tasks: 10 }), 403, "FORBIDDEN");
    await expectRejected(patchAs(cluster.sdk("coordinator", holder), { max_concurrent_tasks: 10 }), 403, "FORBIDDEN");
    await expectRejected(patchAs(agent(uniqueTag("other")), { max_concurrent_tasks: 10 }), 403, "FORBIDDEN");
    expectError(await patchGuardrails(lease.id, as(lead), { max_concurrent_tasks: "10" }), 400, "VALIDATION_FAILED");
    expectError(await patchGuardrails(lease.id, as(lead), { scope: { anything: 1 } }), 400, "VALIDATION_FAILED");
    const patched = await patchAs(agent(lead), { max_concurrent_tasks: 2, budget: { max_budget_usd: null }, scope: { allowed_capabilities: ["a"] } }, 1);
    expect(patched.status).toBe(200);
    expect(patched.data).toMatchObject({ guardrails: { max_concurrent_tasks: 2, budget: { custom: "kept" }, scope: { allowed_capabilities: ["a"] } }, enforced: { max_concurrent_tasks: 2, allowed_capabilities: ["a"] }, version: 2 });
    await expectRejected(patchAs(keyed("admin"), { max_concurrent_tasks: 3 }, 1), 409, "VERSION_MISMATCH");
    expect((await createTask(intent.id, holder, { title: "two", capabilities_required: ["a"] })).status).toBe(201);
    const updated = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.guardrails_updated");
    expect(updated.map((e) => [e.actor, e.payload])).toEqual([
      [lead, { lease_id: lease.id, coordinator_id: holder, updated_by: lead, changes: { max_concurrent_tasks: 2, budget: { max_budget_usd: null }, scope: { allowed_capabilities: ["a"] } }, version: 2 }],
    ]);
    await expectRejected(keyed().send("coordinatorsGetGuardrails", { lease_id: UNKNOWN_ID }), 404, "COORDINATOR_LEASE_NOT_FOUND");
  });

  it("GET …/guardrails/status answers what the guardrails count now, each with its limit", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (
      await take(intent.id, holder, {
        guardrails: { budget: { max_budget_usd: 1 }, scope: { max_plan_versions: 3, max_concurrent_tasks: 5 }, temporal: { require_progress_every_minutes: 30 }, review: { auto_escalate_after_failures: 3 } },
      })
    ).data;
    expect((await keyed().send("costsRecord", { intent_id: intent.id, body: { cost_type: "api_call", amount: 25, unit: "cents", agent_id: "worker" } })).status).toBe(201);
    expect((await decideAs(intent.id, holder, "plan_created")).status).toBe(201);
    expect((await createTask(intent.id, holder, { title: "t" })).status).toBe(201);
    const lastProgress = clock().now().toISOString();
    advance(90 * 60);
    await cluster.intents.coordinatorStallSweeper.sweep();
    const status = await keyed().send("coordinatorsGuardrailStatus", { lease_id: lease.id });
    expect(status.status, JSON.stringify(status.data)).toBe(200);
    expect(status.data).toEqual({
      lease_id: lease.id,
      intent_id: intent.id,
      coordinator_id: holder,
      status: "active",
      budget: { spent_usd: 0.25, max_budget_usd: 1, remaining_usd: 0.75, warn_at_percentage: 80 },
      plan_versions: { used: 1, limit: 3 },
      plan_duration_hours: { used: 1.5, limit: null },
      open_tasks: { used: 1, limit: 5 },
      consecutive_failures: { used: 0, limit: 3 },
      progress: { last_progress_at: expect.any(String), require_progress_every_minutes: 30, stalled: true },
    });
    expect(Date.parse(String(status.data.progress.last_progress_at))).toBe(Date.parse(lastProgress));
    await expectRejected(keyed().send("coordinatorsGuardrailStatus", { lease_id: UNKNOWN_ID }), 404, "COORDINATOR_LEASE_NOT_FOUND");
  });

  it("PATCH /coordinators/{id}: the holder changes its terms (not its supervisor), admin and coordinator keys any; If-Match is the lease's version", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { supervisor_id: "lead", heartbeat_interval_seconds: 30 })).data;
    advance(10);
    const changed = await patchLease(lease.id, agent(holder), { heartbeat_interval_seconds: 120, failover_candidates: ["standby", holder], metadata: { model: "m2" } }, 1);
    expect(changed.status, JSON.stringify(changed.data)).toBe(200);
    expect(changed.data).toMatchObject({ heartbeat_interval_seconds: 120, failover_candidates: ["standby"], metadata: { model: "m2" }, supervisor_id: "lead", version: 2 });
    // Two of the new intervals from the last heartbeat (the grant).
    expect(Date.parse(changed.data.expires_at)).toBe(Date.parse(lease.last_heartbeat) + 240_000);
    await expectRejected(patchLease(lease.id, agent(holder), { supervisor_id: "me" }), 403, "FORBIDDEN");
    await expectRejected(patchLease(lease.id, agent(uniqueTag("other")), { metadata: {} }), 403, "FORBIDDEN");
    await expectRejected(patchLease(lease.id, keyed(), { supervisor_id: "new-lead" }, 1), 409, "VERSION_MISMATCH");
    await expectRejected(patchLease(lease.id, keyed(), {}), 400, "VALIDATION_FAILED");
    expect((await patchLease(lease.id, keyed(), { supervisor_id: "new-lead" }, 2)).data).toMatchObject({ supervisor_id: "new-lead", version: 3 });
    const events = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.updated");
    expect(events.map((e) => e.payload.changes)).toEqual([{ heartbeat_interval_seconds: 120, failover_candidates: ["standby", holder], metadata: { model: "m2" } }, { supervisor_id: "new-lead" }]);
    await expectRejected(patchLease(UNKNOWN_ID, keyed(), { metadata: {} }), 404, "COORDINATOR_LEASE_NOT_FOUND");
  });
});

describe("the lease routes and the intent's access-control list (RFC-0011)", () => {
  it("reading a lease's guardrails needs read on its intent, changing the lease needs write, whatever the role", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { guardrails: { max_concurrent_tasks: 1 } })).data;
    const closeWith = async (permission: "read" | "write" | null) =>
      expect(
        (await keyed().send("aclSet", { intent_id: intent.id, body: { default_policy: "closed", entries: permission ? [{ principal_id: "coordinator", principal_type: "user", permission }] : [] } })).status,
      ).toBe(200);
    const coordinatorKey = keyed("coordinator");
    await closeWith(null);
    await expectRejected(coordinatorKey.send("coordinatorsGetGuardrails", { lease_id: lease.id }), 403, "INTENT_ACCESS_DENIED");
    // GET /coordinators/{id} checks the same way (its refusal is declared in the catalogue).
    await expectRejected(coordinatorKey.send("coordinatorsGetLease", { lease_id: lease.id }), 403, "INTENT_ACCESS_DENIED");
    await closeWith("read");
    expect((await coordinatorKey.send("coordinatorsGetGuardrails", { lease_id: lease.id })).status).toBe(200);
    const patchGuardrailsAsCoordinator = () => coordinatorKey.send("coordinatorsPatchGuardrails", { lease_id: lease.id, body: { max_concurrent_tasks: 5 } });
    await expectRejected(patchGuardrailsAsCoordinator(), 403, "INTENT_ACCESS_DENIED");
    for (const write of [
      () => coordinatorKey.send("coordinatorsUpdate", { lease_id: lease.id, body: { metadata: { x: 1 } } }),
      () => coordinatorKey.send("coordinatorsPause", { lease_id: lease.id, body: {} }),
      () => coordinatorKey.send("coordinatorsReplace", { lease_id: lease.id, body: { new_agent_id: uniqueTag("coord") } }),
    ]) {
      await expectRejected(write(), 403, "INTENT_ACCESS_DENIED");
    }
    expect(await getLease(lease.id)).toMatchObject({ version: 1, status: "active", guardrails: { max_concurrent_tasks: 1 } });
    await closeWith("write");
    expect((await patchGuardrailsAsCoordinator()).status).toBe(200);
  });
});

describe("supervisor actions and handoff (RFC-0013 2.1, 5.3)", () => {
  const pause = (leaseId: string, who: Intentmesh, body: BodyOf<"coordinatorsPause"> = {}) => who.send("coordinatorsPause", { lease_id: leaseId, body });
  const resume = (leaseId: string, who: Intentmesh) => who.send("coordinatorsResume", { lease_id: leaseId, body: {} });
  const handoff = (leaseId: string, who: Intentmesh, body: BodyOf<"coordinatorsHandoff">) => who.send("coordinatorsHandoff", { lease_id: leaseId, body });
  const replace = (leaseId: string, who: Intentmesh, body: BodyOf<"coordinatorsReplace">) => who.send("coordinatorsReplace", { lease_id: leaseId, body });
  const approvePlan = (planId: string, who: Intentmesh, body: BodyOf<"plansSupervisorApprove"> = {}) => who.send("plansSupervisorApprove", { plan_id: planId, body });
  const rejectPlan = (planId: string, who: Intentmesh, body: BodyOf<"plansSupervisorReject">) => who.send("plansSupervisorReject", { plan_id: planId, body });
  /** A registered agent whose heartbeats the registry watches (dead a minute after its last). */
  const register = async (agentId: string) =>
    expect((await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: agentId, heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 } } })).status).toBe(201);

  it("pause and resume by the supervisor (not the holder): the paused holder's work is refused; each logged once", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lead = uniqueTag("lead");
    const lease = (await take(intent.id, holder, { supervisor_id: lead })).data;
    await expectRejected(pause(lease.id, agent(holder)), 403, "FORBIDDEN");
    await expectRejected(pause(lease.id, agent(uniqueTag("other"))), 403, "FORBIDDEN");
    const paused = await pause(lease.id, agent(lead), { reason: "reviewing the plan" });
    expect(paused.status, JSON.stringify(paused.data)).toBe(200);
    expect(paused.data).toMatchObject({ status: "paused", paused_by: lead, pause_reason: "reviewing the plan", version: 2 });
    await expectRejected(pause(lease.id, keyed()), 409, "COORDINATOR_PAUSED");
    await expectRejected(decideAs(intent.id, holder, "task_assigned"), 409, "COORDINATOR_PAUSED");
    await expectRejected(createTask(intent.id, holder, { title: "t" }), 409, "COORDINATOR_PAUSED");
    await expectRejected(resume(lease.id, agent(holder)), 403, "FORBIDDEN");
    const resumed = await resume(lease.id, keyed("coordinator"));
    expect(resumed.data).toMatchObject({ status: "active", paused_at: null, paused_by: null });
    await expectRejected(resume(lease.id, agent(lead)), 409, "COORDINATOR_NOT_PAUSED");
    expect((await decideAs(intent.id, holder, "task_assigned")).status).toBe(201);
    const log = (await allEvents(cluster, intent.id)).filter((e) => ["coordinator.paused", "coordinator.resumed"].includes(e.event_type));
    expect(log.map((e) => [e.event_type, e.payload])).toEqual([
      ["coordinator.paused", { lease_id: lease.id, coordinator_id: holder, paused_by: lead, reason: "reviewing the plan" }],
      ["coordinator.resumed", { lease_id: lease.id, coordinator_id: holder, resumed_by: "coordinator" }],
    ]);
  });

  it("DELETE /intents/{id}/coordinator: the holder, its supervisor, admin and coordinator keys end the lease, once; 404 when the intent has none", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lead = uniqueTag("lead");
    const remove = (who: Intentmesh, ifMatch?: number) => who.send("coordinatorsRemove", { intent_id: intent.id, ...(ifMatch !== undefined ? { ifMatch } : {}) });
    await expectRejected(remove(keyed()), 404, "COORDINATOR_LEASE_NOT_FOUND");
    const lease = (await take(intent.id, holder, { supervisor_id: lead })).data;
    await expectRejected(remove(agent(uniqueTag("other"))), 403, "FORBIDDEN");
    await expectRejected(remove(agent(lead), 7), 409, "VERSION_MISMATCH");
    const removed = await remove(agent(lead), 1);
    expect(removed.status, JSON.stringify(removed.data)).toBe(200);
    expect(removed.data).toMatchObject({ id: lease.id, agent_id: holder, status: "failed_over", end_reason: "removed" });
    await expectRejected(remove(keyed()), 404, "COORDINATOR_LEASE_NOT_FOUND");
    // The intent has no coordinator: the former holder's decisions are refused, another agent takes the lease.
    await expectRejected(decideAs(intent.id, holder, "task_assigned"), 403, "NOT_LEASE_HOLDER");
    const next = uniqueTag("coord");
    expect((await take(intent.id, next)).status).toBe(201);
    // The holder steps down; of two removals at once, one ends the lease and the other finds none.
    expect((await remove(agent(next))).status).toBe(200);
    expect((await take(intent.id, holder)).status).toBe(201);
    const raced = await Promise.all([statusOf(remove(keyed())), statusOf(remove(keyed("coordinator")))]);
    expect(raced.sort()).toEqual([200, 404]);
    const log = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.removed");
    expect(log.map((e) => [e.actor, e.payload])).toEqual([
      [lead, { lease_id: lease.id, coordinator_id: holder, removed_by: lead }],
      [next, expect.objectContaining({ coordinator_id: next, removed_by: next })],
      [expect.any(String), expect.objectContaining({ coordinator_id: holder })],
    ]);
  });

  it("force-escalate (RFC-0013 2.1): the supervisor sends a task to a human: task.force_escalated, one escalation through governance; not the holder, not without a coordinator", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lead = uniqueTag("lead");
    const task = (await createTask(intent.id, null, { title: "risky" })).data;
    const forceTask = (taskId: string, who: Intentmesh, body: BodyOf<"tasksForceEscalate">) => who.send("tasksForceEscalate", { task_id: taskId, body });
    const force = (who: Intentmesh, body: BodyOf<"tasksForceEscalate"> = { reason: "needs a human's call" }) => forceTask(task.id, who, body);
    await expectRejected(force(keyed()), 404, "COORDINATOR_LEASE_NOT_FOUND");
    const lease = (await take(intent.id, holder, { supervisor_id: lead })).data;
    await expectRejected(force(agent(holder)), 403, "FORBIDDEN");
    await expectRejected(force(agent(uniqueTag("other"))), 403, "FORBIDDEN");
    await expectRejected(force(agent(lead), { reason: "" }), 400, "VALIDATION_FAILED");
    await expectRejected(forceTask(UNKNOWN_ID, agent(lead), { reason: "r" }), 404, "TASK_NOT_FOUND");
    const forced = await force(agent(lead), { reason: "needs a human's call", priority: "critical" });
    expect(forced.status, JSON.stringify(forced.data)).toBe(202);
    expect(forced.data).toEqual({ escalation_id: expect.any(String), task_id: task.id, intent_id: intent.id, lease_id: lease.id, coordinator_id: holder, escalated_by: lead, reason: "needs a human's call", priority: "critical" });
    const log = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "task.force_escalated");
    expect(log.map((e) => [e.id, e.actor, e.payload])).toEqual([
      [forced.data.escalation_id, lead, { task_id: task.id, status: "ready", version: task.version, lease_id: lease.id, coordinator_id: holder, escalated_by: lead, reason: "needs a human's call", priority: "critical" }],
    ]);
    await vi.waitFor(
      async () => {
        const listed = await escalationsOf(intent.id);
        expect(listed).toEqual([expect.objectContaining({ id: forced.data.escalation_id, priority: "critical", status: "pending" })]);
      },
      { timeout: 5000, interval: 50 },
    );
    // The task is not changed: a human decides what becomes of it.
    expect(await keyed().ops.tasksGet({ task_id: task.id })).toMatchObject({ status: "ready", version: task.version });
  });

  it("plan review gate and override (RFC-0013 2.1): the supervisor approves a draft plan (activated, a plan review) or rejects it with feedback (cancelled); its change of the coordinator's plan is an override", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lead = uniqueTag("lead");
    const draft = async () => {
      const created = await coordinatorAs(holder).send("plansCreateForIntent", { intent_id: intent.id, body: { title: "proposed", state: "draft", steps: [{ title: "gather" }] } });
      expect(created.status, JSON.stringify(created.data)).toBe(201);
      expect(created.data.state).toBe("draft");
      return created.data;
    };
    const first = await draft();
    await expectRejected(approvePlan(first.id, keyed()), 404, "COORDINATOR_LEASE_NOT_FOUND");
    await take(intent.id, holder, { supervisor_id: lead, guardrails: { requires_plan_review: true } });
    await expectRejected(decideAs(intent.id, holder, "plan_created"), 403, "GUARDRAIL_VIOLATION");
    await expectRejected(approvePlan(first.id, agent(holder)), 403, "FORBIDDEN");
    await expectRejected(approvePlan(first.id, coordinatorAs(holder)), 403, "FORBIDDEN");
    await expectRejected(approvePlan(first.id, agent(uniqueTag("other"))), 403, "FORBIDDEN");
    // Raw on purpose: a rejection without its reason, which the types refuse.
    expectError(await cluster.api(`/plans/${first.id}/reject`, { ...as(lead), body: {} }), 400, "VALIDATION_FAILED");
    await expectRejected(approvePlan(UNKNOWN_ID, agent(lead)), 404, "PLAN_NOT_FOUND");
    const approved = await approvePlan(first.id, agent(lead), { comment: "within budget" });
    expect(approved.status, JSON.stringify(approved.data)).toBe(200);
    expect(approved.data).toMatchObject({ id: first.id, state: "active" });
    await expectRejected(approvePlan(first.id, agent(lead)), 409, "INVALID_PLAN_TRANSITION");
    await expectRejected(rejectPlan(first.id, agent(lead), { reason: "late" }), 409, "INVALID_PLAN_TRANSITION");
    // The sign-off is the plan review requires_plan_review asks for: one plan_created decision may use it.
    await vi.waitFor(async () => expect((await decideAs(intent.id, holder, "plan_created")).status).toBe(201), { timeout: 5000, interval: 50 });
    await expectRejected(decideAs(intent.id, holder, "plan_created"), 403, "GUARDRAIL_VIOLATION");

    // Override plan: the supervisor's change of the coordinator's plan is logged with both versions; the holder's own change is not an override.
    const current = await keyed().ops.plansGet({ plan_id: first.id });
    const patchPlan = (who: Intentmesh, version: number, body: BodyOf<"plansUpdate">) => who.send("plansUpdate", { plan_id: first.id, ifMatch: version, body });
    const own = await patchPlan(coordinatorAs(holder), current.version, { metadata: { note: "mine" } });
    expect(own.status, JSON.stringify(own.data)).toBe(200);
    const overridden = await patchPlan(keyed(), own.data.version, { title: "simplified", state: "paused" });
    expect(overridden.status, JSON.stringify(overridden.data)).toBe(200);
    expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.plan_overridden").map((e) => [e.actor, e.payload])).toEqual([
      ["admin", { lease_id: expect.any(String), coordinator_id: holder, overridden_by: "admin", plan_id: first.id, old_plan_version: own.data.version, new_plan_version: overridden.data.version, changed: ["title", "state"] }],
    ]);

    const second = await draft();
    const rejected = await rejectPlan(second.id, keyed("coordinator"), { reason: "Budget too high, simplify the plan" });
    expect(rejected.status, JSON.stringify(rejected.data)).toBe(200);
    expect(rejected.data).toMatchObject({ id: second.id, state: "cancelled" });
    const log = (await allEvents(cluster, intent.id)).filter((e) => ["plan.approved_by_supervisor", "plan.rejected_by_supervisor", "plan.activated", "plan.cancelled"].includes(e.event_type));
    expect(log.map((e) => [e.event_type, e.actor, e.payload])).toEqual([
      ["plan.approved_by_supervisor", lead, { plan_id: first.id, state: "active", version: expect.any(Number), approved_by: lead, comment: "within budget" }],
      ["plan.activated", lead, expect.objectContaining({ plan_id: first.id, from: "draft" })],
      ["plan.rejected_by_supervisor", "coordinator", { plan_id: second.id, state: "cancelled", version: expect.any(Number), rejected_by: "coordinator", reason: "Budget too high, simplify the plan" }],
      ["plan.cancelled", "coordinator", expect.objectContaining({ plan_id: second.id, from: "draft" })],
    ]);
  });

  it("handoff: the holder's alone, to a named agent not dead, exactly once under concurrent handoffs; the successor gets the same terms and the pause", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const [b, c] = [uniqueTag("next"), uniqueTag("next")];
    const lease = (await take(intent.id, holder, { supervisor_id: "lead", failover_candidates: [b, "standby"], guardrails: { max_concurrent_tasks: 3 } })).data;
    await expectRejected(handoff(lease.id, agent(b), { to_agent_id: b }), 403, "NOT_LEASE_HOLDER");
    await expectRejected(handoff(lease.id, agent(holder), { to_agent_id: holder }), 400, "VALIDATION_FAILED");
    await expectRejected(handoff(lease.id, agent(holder), { to_agent_id: b, to_coordinator: c }), 400, "VALIDATION_FAILED");
    expect((await pause(lease.id, keyed(), { reason: "hold on" })).status).toBe(200);
    const both = await Promise.allSettled([
      handoff(lease.id, agent(holder), { to_agent_id: b, reason: "context window", state_summary: { plan_version: 3 } }),
      handoff(lease.id, agent(holder), { to_coordinator: c }),
    ]);
    const won = both.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    expect(won, JSON.stringify(both.map((r) => (r.status === "fulfilled" ? r.value.data : r.reason)))).toHaveLength(1);
    expect(won[0]!.status).toBe(200);
    const lost = both.find((r) => r.status === "rejected")!;
    await expectRejected(Promise.reject(lost.reason), 409, "COORDINATOR_LEASE_ENDED");
    const next = won[0]!.data;
    expect(next).toMatchObject({ intent_id: intent.id, supervisor_id: "lead", guardrails: { max_concurrent_tasks: 3 }, predecessor_id: lease.id, status: "paused", pause_reason: "hold on", version: 1 });
    expect([b, c]).toContain(next.agent_id);
    expect(next.failover_candidates).toEqual([b, "standby"].filter((x) => x !== next.agent_id));
    expect(await getLease(lease.id)).toMatchObject({ status: "failed_over", end_reason: "handed_off" });
    expect((await keyed().ops.coordinatorsListForIntent({ intent_id: intent.id })).filter((l) => l.status !== "failed_over").map((l) => l.id)).toEqual([next.id]);
    const log = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.handoff" || e.event_type === "coordinator.assigned").slice(1);
    expect(log.map((e) => e.event_type)).toEqual(["coordinator.handoff", "coordinator.assigned"]);
    expect(log[0]!.payload).toMatchObject({ old_lease_id: lease.id, new_lease_id: next.id, from_coordinator: holder, to_coordinator: next.agent_id });
    await expectRejected(decideAs(intent.id, holder, "escalation_initiated"), 403, "NOT_LEASE_HOLDER");
  });

  it("failover when the holder dies keeps the supervisor's pause and the failure streak: the successor resumes from the last known state", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await register(holder);
    const standby = uniqueTag("standby");
    const lease = (await take(intent.id, holder, { heartbeat_interval_seconds: 3600, failover_candidates: [standby], guardrails: { auto_escalate_after_failures: 2 } })).data;
    const task = (await createTask(intent.id, null, { title: "flaky" })).data;
    await claimAndStart(task.id);
    expect((await keyed().send("tasksFail", { task_id: task.id, body: { error: "boom" } })).status).toBe(200);
    expect((await pause(lease.id, keyed(), { reason: "hold on" })).status).toBe(200);
    advance(61);
    await cluster.registry.sweeper.sweep();
    const successor = await vi.waitFor(
      async () => {
        const live = (await keyed().ops.coordinatorsListForIntent({ intent_id: intent.id })).find((l) => l.agent_id === standby);
        expect(live).toBeDefined();
        return live!;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(successor).toMatchObject({ status: "paused", pause_reason: "hold on", predecessor_id: lease.id });
    expect((await keyed().ops.coordinatorsGuardrailStatus({ lease_id: successor.id })).consecutive_failures).toEqual({ used: 1, limit: 2 });
  });

  it("replace: by the supervisor, to an agent that is not dead; the successor starts unpaused; a dead agent is refused (409)", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { supervisor_id: "lead", guardrails: { max_concurrent_tasks: 3 } })).data;
    // A registered agent the registry then declares dead.
    const dead = uniqueTag("dead");
    await register(dead);
    advance(61);
    await cluster.registry.sweeper.sweep();
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, dead)).toBe("dead"), { timeout: 10_000, interval: 50 });
    expect((await pause(lease.id, agent("lead"))).status).toBe(200);
    await expectRejected(replace(lease.id, agent(holder), { new_agent_id: "x" }), 403, "FORBIDDEN");
    await expectRejected(replace(lease.id, agent("lead"), { new_agent_id: dead }), 409, "AGENT_NOT_ACTIVE");
    const replacement = uniqueTag("coord");
    const replaced = await replace(lease.id, agent("lead"), { new_coordinator_id: replacement, reason: "stalled" });
    expect(replaced.status, JSON.stringify(replaced.data)).toBe(200);
    expect(replaced.data).toMatchObject({ agent_id: replacement, status: "active", paused_at: null, predecessor_id: lease.id, guardrails: { max_concurrent_tasks: 3 } });
    expect(await getLease(lease.id)).toMatchObject({ end_reason: "replaced" });
    await expectRejected(replace(lease.id, agent("lead"), { new_agent_id: uniqueTag("coord") }), 409, "COORDINATOR_LEASE_ENDED");
    const log = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.replaced");
    expect(log.map((e) => e.payload)).toEqual([{ old_lease_id: lease.id, new_lease_id: replaced.data.id, old_coordinator_id: holder, new_coordinator_id: replacement, replaced_by: "lead", reason: "stalled" }]);
    expect((await createTask(intent.id, replacement, { title: "t" })).status).toBe(201);
  });
});
