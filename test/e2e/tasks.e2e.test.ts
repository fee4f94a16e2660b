import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { DeliverPolicy } from "@nats-io/jetstream";
import { agentEventTypes, streams, suspensionCommands, TASK_END_EVENT_TYPES, TASK_EVENT_TYPES, type Caller, type ManualClock, type SuspensionRecord } from "@intentmesh/contracts";
import { IntentmeshError, type BodyOf, type Intentmesh, type ResponseOf } from "@intentmesh/sdk";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, expectError, expectRejected, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";
import { agentHeaders } from "../support/agents";
import { knownAgentStatus } from "../../services/intents/src/agents/agent-status";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const governance: Caller = { principal: "governance", roles: ["admin"], actor: "governance", agent_id: null };

/** An intent in active status, whatever status new intents start in. */
async function activeIntent() {
  const intent = await cluster.sdk().ops.intentsCreate({ body: { title: "an intent", status: "active" } });
  if (intent.status === "active") return intent;
  return cluster.sdk().ops.intentsTransition({ intent_id: intent.id, ifMatch: intent.version, body: { status: "active" } });
}

async function createTask(intentId: string, body: BodyOf<"tasksCreate"> = {}, key: Parameters<TestCluster["sdk"]>[0] = "coordinator") {
  const res = await cluster.sdk(key).send("tasksCreate", { intent_id: intentId, body: { title: "a task", ...body } });
  expect(res.status).toBe(201);
  return res.data;
}

const getTask = (taskId: string) => cluster.sdk().ops.tasksGet({ task_id: taskId });

type TaskAction = "claim" | "start" | "complete" | "fail" | "cancel";
/** The fields the task moves take (complete: output, fail: error and error_code, cancel: reason). */
type TaskActionBody = { output?: Record<string, unknown>; error?: string; error_code?: string; reason?: string };
/** A task move by `as`; each move sends only the fields of its own body. */
function act(taskId: string, action: TaskAction, as: Intentmesh, body: TaskActionBody = {}) {
  const task_id = taskId;
  switch (action) {
    case "claim":
      return as.send("tasksClaim", { task_id });
    case "start":
      return as.send("tasksStart", { task_id });
    case "complete":
      return as.send("tasksComplete", { task_id, body: { output: body.output } });
    case "fail":
      return as.send("tasksFail", { task_id, body: { error: body.error, error_code: body.error_code } });
    case "cancel":
      return as.send("tasksCancel", { task_id, body: { reason: body.reason } });
  }
}
const patch = (taskId: string, body: BodyOf<"tasksPatch">, version: number, as: Intentmesh = cluster.sdk("coordinator")) =>
  as.send("tasksPatch", { task_id: taskId, ifMatch: version, body });
/** The page form of a task list (without offset). */
function pageOf(list: ResponseOf<"tasksList">) {
  if (Array.isArray(list)) throw new Error("expected a page {tasks, next_cursor, has_more}, got a bare array");
  return list;
}
/** The clients' form of a task list (with offset): a bare array. */
function arrayOf(list: ResponseOf<"tasksList">) {
  if (!Array.isArray(list)) throw new Error(`expected a bare array, got ${JSON.stringify(list)}`);
  return list;
}
const taskEventsOf = async (intentId: string, taskId?: string) =>
  (await allEvents(cluster, intentId)).filter((e) => e.event_type.startsWith("task.") && (!taskId || e.payload.task_id === taskId));

/** A fresh agent bound to the agent key, with the typed client that acts as it. */
async function newAgent(prefix = "worker"): Promise<{ id: string; client: Intentmesh }> {
  const id = uniqueTag(prefix);
  await agentHeaders(cluster, id);
  return { id, client: cluster.sdk("agent", id) };
}

/** A task claimed and started by a fresh agent. */
async function runningTask(intentId: string, body: BodyOf<"tasksCreate"> = {}) {
  const agent = await newAgent();
  const task = await createTask(intentId, body);
  expect((await act(task.id, "claim", agent.client)).status).toBe(200);
  const started = await act(task.id, "start", agent.client);
  expect(started.status).toBe(200);
  return { task: started.data, agent };
}

describe("creating and reading tasks", () => {
  it("POST /intents/{id}/tasks: 201 with id and task_id, version 1, ETag, defaults, and task.created in the intent's log", async () => {
    const intent = await activeIntent();
    const res = await cluster.sdk("coordinator").send("tasksCreate", { intent_id: intent.id, body: { name: "Draft the post", input: { topic: "launch" } } });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    expect(res.data).toMatchObject({
      task_id: res.data.id,
      intent_id: intent.id,
      title: "Draft the post",
      name: "Draft the post",
      status: "ready",
      version: 1,
      assigned_agent: null,
      previous_agents: [],
      memory_policy: { archive_on_completion: true, inherit_from_parent: false },
      retry_policy: null,
      input: { topic: "launch" },
      output: null,
      blocked_reason: null,
      suspended_intent_id: null,
      created_by: "coordinator",
    });
    const read = await cluster.sdk("agent").send("tasksGet", { task_id: res.data.id });
    expect(read.status).toBe(200);
    expect(read.headers.get("etag")).toBe('"1"');
    expect(read.data).toEqual(res.data);
    const events = await taskEventsOf(intent.id);
    expect(events.map((e) => e.event_type)).toEqual(["task.created"]);
    expect(events[0]!.payload).toMatchObject({ task_id: res.data.id, status: "ready", version: 1, title: "Draft the post" });
  });

  it("POST /tasks with intent_id in the body (the clients' route), with a memory policy and a retry policy", async () => {
    const intent = await activeIntent();
    const res = await cluster.sdk("admin").send("tasksCreateWithIntentId", {
      body: { intent_id: intent.id, name: "Review", memory_policy: { archive_on_completion: false, max_entries: 50 }, retry_policy: { max_retries: 2, strategy: "fixed" } },
    });
    expect(res.status).toBe(201);
    expect(res.data.intent_id).toBe(intent.id);
    expect(res.data.memory_policy).toEqual({ archive_on_completion: false, inherit_from_parent: false, max_entries: 50 });
    expect(res.data.retry_policy).toMatchObject({ strategy: "fixed", max_retries: 2, base_delay_ms: 1000, failure_threshold: 3 });
  });

  it("bad input is a 4xx with a code and a sentence, and writes nothing", async () => {
    const intent = await activeIntent();
    const coordinator = cluster.sdk("coordinator");
    const bad: { body: BodyOf<"tasksCreate">; status: number }[] = [
      { body: {}, status: 400 },
      { body: { title: "" }, status: 400 },
      { body: { title: "a", name: "b" }, status: 400 },
      { body: { title: "a", input: { blob: "x".repeat(70 * 1024) } }, status: 400 },
      { body: { title: "a", memory_policy: { max_entries: 0 } }, status: 400 },
      { body: { title: "a", retry_policy: { max_retries: -1 } }, status: 400 },
      { body: { title: "a", depends_on: ["not-a-uuid"] }, status: 400 },
    ];
    for (const { body, status } of bad) await expectRejected(coordinator.send("tasksCreate", { intent_id: intent.id, body }), status, "VALIDATION_FAILED");
    // Raw: the types forbid a field the schema does not know, and POST /tasks without intent_id.
    expectError(await cluster.api(`/intents/${intent.id}/tasks`, { body: { title: "a", unknown_field: 1 }, key: "coordinator" }), 400, "VALIDATION_FAILED");
    await expectRejected(coordinator.send("tasksCreate", { intent_id: intent.id, body: { title: "a", depends_on: [UNKNOWN_ID] } }), 422, "UNKNOWN_TASK_REFERENCE");
    expectError(await cluster.api("/tasks", { body: { title: "a" }, key: "coordinator" }), 400, "VALIDATION_FAILED");
    await expectRejected(coordinator.send("tasksCreate", { intent_id: UNKNOWN_ID, body: { title: "a" } }), 404, "INTENT_NOT_FOUND");
    expect(pageOf(await cluster.sdk().ops.tasksList({ intent_id: intent.id })).tasks).toEqual([]);
    expect(await taskEventsOf(intent.id)).toEqual([]);
  });

  it("404 for an unknown or malformed task id", async () => {
    await expectRejected(cluster.sdk().send("tasksGet", { task_id: UNKNOWN_ID }), 404, "TASK_NOT_FOUND");
    await expectRejected(cluster.sdk().send("tasksGet", { task_id: "nope" }), 404, "TASK_NOT_FOUND");
  });

  it("tasks are created on open intents only", async () => {
    const intent = await activeIntent();
    await cluster.sdk().send("intentsTransition", { intent_id: intent.id, ifMatch: intent.version, body: { status: "completed" } });
    await expectRejected(cluster.sdk("coordinator").send("tasksCreate", { intent_id: intent.id, body: { title: "late" } }), 409, "INTENT_CLOSED");
  });

  it("clients cannot forge task events through POST /events", async () => {
    const intent = await activeIntent();
    const refusal: unknown = await cluster.sdk().send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "task.completed", payload: {} } }).then(
      (res) => res,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(IntentmeshError);
    const status = refusal instanceof IntentmeshError ? refusal.status : 0;
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBeLessThan(500);
    expect(TASK_EVENT_TYPES).toContain("task.completed");
  });
});

describe("authorization", () => {
  it("coordinators and admins create; agents and operators get 403", async () => {
    const intent = await activeIntent();
    for (const key of ["agent", "operator"] as const) await expectRejected(cluster.sdk(key).send("tasksCreate", { intent_id: intent.id, body: { title: "x" } }), 403, "FORBIDDEN");
    await createTask(intent.id, {}, "admin");
  });

  it("the assigned agent moves its own task; another agent, an operator get 403; only coordinators cancel", async () => {
    const intent = await activeIntent();
    const owner = await newAgent("owner");
    const other = await newAgent("other");
    const task = await createTask(intent.id, { assigned_agent: owner.id });
    await expectRejected(act(task.id, "claim", other.client), 403, "FORBIDDEN");
    await expectRejected(act(task.id, "claim", cluster.sdk("operator")), 403, "FORBIDDEN");
    expect((await act(task.id, "claim", owner.client)).status).toBe(200);
    await expectRejected(act(task.id, "start", other.client), 403, "FORBIDDEN");
    expect((await act(task.id, "start", owner.client)).status).toBe(200);
    await expectRejected(act(task.id, "complete", other.client), 403, "FORBIDDEN");
    await expectRejected(act(task.id, "cancel", owner.client), 403, "FORBIDDEN");
    const current = await getTask(task.id);
    await expectRejected(patch(task.id, { assigned_agent: other.id }, current.version, owner.client), 403, "FORBIDDEN");
    await expectRejected(patch(task.id, { output: { x: 1 } }, current.version, other.client), 403, "FORBIDDEN");
    expect((await act(task.id, "complete", owner.client, { output: { ok: true } })).status).toBe(200);
  });

  it("a draining agent claims no new task (409 AGENT_DRAINING), as it takes no new lease", async () => {
    const intent = await activeIntent();
    const agent = await newAgent("drainer");
    const task = await createTask(intent.id);
    const registered = await cluster.sdk("agent").ops.agentsGet({ agent_id: agent.id });
    const drained = await cluster.sdk("agent").send("agentsChangeStatus", { agent_id: agent.id, ifMatch: registered.version, body: { status: "draining" } });
    expect(drained.status).toBe(200);
    // The intents service learns it from the registry's agent.lifecycle event (eventually).
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, agent.id)).toBe("draining"), { timeout: 10_000, interval: 100 });
    await expectRejected(act(task.id, "claim", agent.client), 409, "AGENT_DRAINING");
    expect((await getTask(task.id)).status).toBe("ready");
  });

  it("an agent claims an unassigned ready task for itself", async () => {
    const intent = await activeIntent();
    const agent = await newAgent();
    const task = await createTask(intent.id);
    const res = await act(task.id, "claim", agent.client);
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ status: "claimed", assigned_agent: agent.id, version: 2 });
    expect(res.headers.get("etag")).toBe('"2"');
  });
});

describe("the task lifecycle through the gateway", () => {
  it("claim -> start -> complete, each with its event, version + 1 and ETag", async () => {
    const intent = await activeIntent();
    const agent = await newAgent();
    const task = await createTask(intent.id);
    const claimed = await act(task.id, "claim", agent.client);
    expect(claimed.data).toMatchObject({ status: "claimed", version: 2 });
    const started = await act(task.id, "start", agent.client);
    expect(started.data).toMatchObject({ status: "running", version: 3, attempt: 1 });
    expect(started.data.started_at).not.toBeNull();
    const done = await act(task.id, "complete", agent.client, { output: { summary: "done" } });
    expect(done.status).toBe(200);
    expect(done.headers.get("etag")).toBe('"4"');
    expect(done.data).toMatchObject({ status: "completed", version: 4, output: { summary: "done" } });
    expect(done.data.completed_at).not.toBeNull();
    const events = await taskEventsOf(intent.id, task.id);
    expect(events.map((e) => e.event_type)).toEqual(["task.created", "task.claimed", "task.started", "task.completed"]);
    expect(events[3]!.payload).toMatchObject({ task_id: task.id, status: "completed", version: 4, agent_id: agent.id, memory_policy: { archive_on_completion: true } });
  });

  it("an illegal move is 409 naming the allowed targets, and changes nothing", async () => {
    const intent = await activeIntent();
    const agent = await newAgent();
    const task = await createTask(intent.id, { assigned_agent: agent.id });
    const refusal = await expectRejected(act(task.id, "complete", agent.client), 409, "INVALID_TASK_TRANSITION");
    expect(refusal.details).toMatchObject({ from: "ready", to: "completed", allowed: ["claimed", "blocked", "cancelled", "skipped"] });
    expect(refusal.body?.message).toContain("claimed, blocked, cancelled, skipped");
    expect((await getTask(task.id)).version).toBe(1);
    const cancelled = await act(task.id, "cancel", cluster.sdk("coordinator"), { reason: "not needed" });
    expect(cancelled.data.status).toBe("cancelled");
    await expectRejected(act(task.id, "claim", agent.client), 409, "INVALID_TASK_TRANSITION");
    const events = await taskEventsOf(intent.id, task.id);
    expect(events.at(-1)).toMatchObject({ event_type: "task.cancelled", payload: { from: "ready", reason: "not needed" } });
  });

  it("two agents claiming one task: exactly one wins", async () => {
    const intent = await activeIntent();
    const agents = await Promise.all(Array.from({ length: 6 }, () => newAgent("racer")));
    for (let round = 0; round < 3; round++) {
      const task = await createTask(intent.id);
      const results = await Promise.allSettled(agents.map((agent) => act(task.id, "claim", agent.client)));
      const winners = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      expect(winners).toHaveLength(1);
      expect(winners[0]!.status).toBe(200);
      for (const loser of results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []))) {
        expect(loser).toBeInstanceOf(IntentmeshError);
        expect(loser).toMatchObject({ status: 409 });
      }
      const final = await getTask(task.id);
      expect(final).toMatchObject({ status: "claimed", version: 2, assigned_agent: winners[0]!.data.assigned_agent });
      expect((await taskEventsOf(intent.id, task.id)).filter((e) => e.event_type === "task.claimed")).toHaveLength(1);
    }
  });

  it("PATCH needs If-Match (428), refuses a stale one (409), and changes status, output, error, assignment", async () => {
    const intent = await activeIntent();
    const agent = await newAgent();
    const next = await newAgent("next");
    const task = await createTask(intent.id);
    // Raw: the types require If-Match.
    expectError(await cluster.api(`/tasks/${task.id}`, { method: "PATCH", body: { status: "claimed" }, key: "coordinator" }), 428, "PRECONDITION_REQUIRED");
    await expectRejected(patch(task.id, { status: "claimed" }, 7), 409, "VERSION_MISMATCH");
    await expectRejected(patch(task.id, {}, 1), 400, "VALIDATION_FAILED");
    await expectRejected(patch(task.id, { output: { big: "x".repeat(70 * 1024) } }, 1), 400, "VALIDATION_FAILED");
    // An agent claims by PATCH, as the clients do.
    const claimed = await patch(task.id, { status: "claimed", assigned_agent: agent.id }, 1, agent.client);
    expect(claimed.status).toBe(200);
    expect(claimed.data).toMatchObject({ status: "claimed", assigned_agent: agent.id, version: 2 });
    const running = await patch(task.id, { status: "running" }, 2, agent.client);
    expect(running.data).toMatchObject({ status: "running", attempt: 1 });
    const noted = await patch(task.id, { output: { partial: true } }, 3, agent.client);
    expect(noted.data).toMatchObject({ status: "running", output: { partial: true }, version: 4 });
    // The coordinator reassigns the running task: back to ready for the new agent, the holder recorded.
    const reassigned = await patch(task.id, { assigned_agent: next.id }, 4);
    expect(reassigned.status).toBe(200);
    expect(reassigned.data).toMatchObject({ status: "ready", assigned_agent: next.id, previous_agent: agent.id, previous_agents: [agent.id] });
    await expectRejected(act(task.id, "claim", agent.client), 403, "FORBIDDEN");
    expect((await act(task.id, "claim", next.client)).status).toBe(200);
    const types = (await taskEventsOf(intent.id, task.id)).map((e) => e.event_type);
    expect(types).toEqual(["task.created", "task.claimed", "task.started", "task.updated", "task.retrying", "task.claimed"]);
  });

  it("an agent blocks its task with a reason and unblocks it back to running", async () => {
    const intent = await activeIntent();
    const { task, agent } = await runningTask(intent.id);
    const blocked = await patch(task.id, { status: "blocked", blocked_reason: "waiting for credentials" }, task.version, agent.client);
    expect(blocked.data).toMatchObject({ status: "blocked", blocked_reason: "waiting for credentials" });
    await expectRejected(patch(task.id, { status: "completed" }, blocked.data.version, agent.client), 409, "INVALID_TASK_TRANSITION");
    const back = await patch(task.id, { status: "running" }, blocked.data.version, agent.client);
    expect(back.data).toMatchObject({ status: "running", blocked_reason: null });
    const types = (await taskEventsOf(intent.id, task.id)).map((e) => e.event_type);
    expect(types.slice(-2)).toEqual(["task.blocked", "task.unblocked"]);
  });
});

describe("ends of tasks reach other services on the bus", () => {
  it("task.completed, task.failed and task.cancelled are published on im.evt.intent.<id>.<type> with the memory policy", async () => {
    const intent = await activeIntent();
    const a = await runningTask(intent.id, { memory_policy: { archive_on_completion: false } });
    await act(a.task.id, "complete", a.agent.client, { output: { ok: 1 } });
    const b = await runningTask(intent.id);
    await act(b.task.id, "fail", b.agent.client, { error: "no" });
    const c = await createTask(intent.id);
    await act(c.id, "cancel", cluster.sdk("coordinator"));
    const stream = cluster.bus.streamName(streams.intents.name);
    // What a channels or memory service would consume: one filter per end type.
    const seen = await vi.waitFor(
      async () => {
        const out: any[] = [];
        for (const type of TASK_END_EVENT_TYPES) {
          const consumer = await cluster.bus.js.consumers.get(stream, { filter_subjects: cluster.bus.subject(`im.evt.intent.${intent.id}.${type}`), deliver_policy: DeliverPolicy.All });
          const batch = await consumer.fetch({ max_messages: 10, expires: 1000 });
          for await (const msg of batch) {
            out.push({ subject: msg.subject, data: msg.json() });
            if (msg.info.pending === 0) break;
          }
        }
        expect(out).toHaveLength(3);
        return out;
      },
      { timeout: 10_000, interval: 200 },
    );
    expect(seen.map((m) => [m.data.event_type, m.data.payload.task_id])).toEqual([
      ["task.completed", a.task.id],
      ["task.failed", b.task.id],
      ["task.cancelled", c.id],
    ]);
    expect(seen[0].subject).toBe(cluster.bus.subject(`im.evt.intent.${intent.id}.task.completed`));
    expect(seen[0].data.payload).toMatchObject({ agent_id: a.agent.id, memory_policy: { archive_on_completion: false } });
  });
});

describe("dependencies: pending until they are done", () => {
  it("a task depending on unfinished tasks is pending, and becomes ready when the last one completes", async () => {
    const intent = await activeIntent();
    const agent = await newAgent();
    const a = await createTask(intent.id, { title: "a" });
    const b = await createTask(intent.id, { title: "b" });
    const c = await createTask(intent.id, { title: "c", depends_on: [a.id, b.id], parent_task_id: a.id });
    expect(c).toMatchObject({ status: "pending", depends_on: [a.id, b.id], parent_task_id: a.id });
    const refused = await expectRejected(act(c.id, "claim", agent.client), 409, "TASK_DEPENDENCIES_PENDING");
    expect(refused.details.pending_dependencies).toEqual([
      { task_id: a.id, status: "ready" },
      { task_id: b.id, status: "ready" },
    ]);
    // Nor can a coordinator move it to ready or claimed by PATCH while they are unfinished.
    await expectRejected(patch(c.id, { status: "ready" }, c.version), 409, "TASK_DEPENDENCIES_PENDING");
    for (const t of [a, b]) {
      await act(t.id, "claim", agent.client);
      await act(t.id, "start", agent.client);
    }
    await act(a.id, "complete", agent.client);
    expect((await getTask(c.id)).status).toBe("pending");
    await act(b.id, "complete", agent.client);
    const ready = await getTask(c.id);
    expect(ready).toMatchObject({ status: "ready", version: 2 });
    const events = await taskEventsOf(intent.id, c.id);
    expect(events.at(-1)).toMatchObject({ event_type: "task.unblocked", actor: "system", payload: { from: "pending", status: "ready", reason: "dependencies_done" } });
    // A task whose dependencies are already done starts ready.
    expect((await createTask(intent.id, { depends_on: [a.id] })).status).toBe("ready");
  });
});

describe("listing tasks", () => {
  it("filters by status and assigned agent, pages with a cursor, bounds the page size", async () => {
    const intent = await activeIntent();
    const agent = await newAgent();
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await createTask(intent.id, { title: `t${i}` }));
    await act(created[1]!.id, "claim", agent.client);
    await act(created[3]!.id, "claim", agent.client);
    const admin = cluster.sdk();
    const claimed = pageOf(await admin.ops.tasksList({ intent_id: intent.id, query: { status: "claimed" } }));
    expect(claimed.tasks.map((t) => t.id)).toEqual([created[1]!.id, created[3]!.id]);
    const mine = pageOf(await admin.ops.tasksList({ intent_id: intent.id, query: { assigned_agent: agent.id, status: "claimed,running" } }));
    expect(mine.tasks).toHaveLength(2);
    const seen: string[] = [];
    let after = "";
    for (;;) {
      const res = await admin.send("tasksList", { intent_id: intent.id, query: { limit: 2, ...(after ? { after } : {}) } });
      expect(res.status).toBe(200);
      const page = pageOf(res.data);
      expect(page.tasks.length).toBeLessThanOrEqual(2);
      seen.push(...page.tasks.map((t) => t.id));
      if (!page.has_more) break;
      after = page.next_cursor!;
    }
    expect(seen).toEqual(created.map((t) => t.id));
    // The clients' form: limit and offset, a bare array (the Python client iterates it).
    const raw = await admin.send("tasksList", { intent_id: intent.id, query: { limit: 2, offset: 3 } });
    expect(raw.status).toBe(200);
    expect(arrayOf(raw.data).map((t) => t.id)).toEqual([created[3]!.id, created[4]!.id]);
    const rawClaimed = arrayOf(await admin.ops.tasksList({ intent_id: intent.id, query: { status: "claimed", limit: 100, offset: 0 } }));
    expect(rawClaimed.map((t) => t.id)).toEqual([created[1]!.id, created[3]!.id]);
    await expectRejected(admin.send("tasksList", { intent_id: intent.id, query: { limit: 501 } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin.send("tasksList", { intent_id: intent.id, query: { offset: -1 } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin.send("tasksList", { intent_id: intent.id, query: { status: "bogus" } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin.send("tasksList", { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
  });
});

describe("retries (2.8)", () => {
  it("fail with retries left puts the task back to ready (task.retrying); the last failure is final (task.failed)", async () => {
    const intent = await activeIntent();
    const { task, agent } = await runningTask(intent.id, { retry_policy: { max_retries: 1, strategy: "fixed", base_delay_ms: 5000 } });
    const retried = await act(task.id, "fail", agent.client, { error: "timeout", error_code: "TIMEOUT" });
    expect(retried.status).toBe(200);
    expect(retried.data).toMatchObject({ status: "ready", assigned_agent: agent.id, error: "timeout", attempt: 1 });
    const retrying = (await taskEventsOf(intent.id, task.id)).at(-1)!;
    expect(retrying).toMatchObject({ event_type: "task.retrying", payload: { from: "running", reason: "failed", attempt: 1 } });
    expect(Date.parse(String(retrying.payload.retry_at)) - clock().now().getTime()).toBe(5000);
    await act(task.id, "claim", agent.client);
    await act(task.id, "start", agent.client);
    const failed = await act(task.id, "fail", agent.client, { error: "timeout again", error_code: "TIMEOUT" });
    expect(failed.data).toMatchObject({ status: "failed", attempt: 2, error: "timeout again" });
    expect((await taskEventsOf(intent.id, task.id)).at(-1)).toMatchObject({ event_type: "task.failed", payload: { error: "timeout again", error_code: "TIMEOUT" } });
  });

  it("without any retry policy a failure is final; the intent's policy applies when the task has none", async () => {
    const intent = await activeIntent();
    const { task, agent } = await runningTask(intent.id);
    expect((await act(task.id, "fail", agent.client, { error: "boom" })).data.status).toBe("failed");
    expect((await cluster.sdk().send("retriesPutPolicy", { intent_id: intent.id, body: { max_retries: 2 } })).status).toBe(200);
    const second = await runningTask(intent.id);
    expect((await act(second.task.id, "fail", second.agent.client, { error: "boom" })).data.status).toBe("ready");
    // A coordinator may retry a failed task.
    const retried = await patch(task.id, { status: "ready" }, (await getTask(task.id)).version);
    expect(retried.data.status).toBe("ready");
  });

  it("a failure recorded with a task_id follows the task's retry policy, not the intent's", async () => {
    const intent = await activeIntent();
    const agent = await newAgent();
    expect((await cluster.sdk().send("retriesPutPolicy", { intent_id: intent.id, body: { max_retries: 3 } })).status).toBe(200);
    const task = await createTask(intent.id, { retry_policy: { max_retries: 0 } });
    const withTask = await agent.client.send("retriesRecordFailure", { intent_id: intent.id, body: { task_id: task.id, attempt_number: 1, error_code: "TIMEOUT" } });
    expect(withTask.status).toBe(201);
    expect(withTask.data).toMatchObject({ task_id: task.id, retries_exhausted: true, retry_scheduled_at: null });
    const without = await agent.client.ops.retriesRecordFailure({ intent_id: intent.id, body: { attempt_number: 1, error_code: "TIMEOUT" } });
    expect(without).toMatchObject({ task_id: null, retries_exhausted: false });
    const other = await activeIntent();
    await expectRejected(
      agent.client.send("retriesRecordFailure", { intent_id: other.id, body: { task_id: task.id, attempt_number: 1, error_code: "TIMEOUT" } }),
      404,
      "TASK_NOT_FOUND",
    );
  });
});

describe("an intent's suspension blocks its running tasks (3.1)", () => {
  const suspend = async (intentId: string) => {
    const intent = await cluster.client.request(suspensionCommands.begin, governance, {
      intent_id: intentId,
      suspension: { question: "Publish now?", response_type: "confirm", fallback_policy: "fail", timeout_seconds: 600 } as never,
    });
    return intent as typeof intent & { state: { _suspension: SuspensionRecord } };
  };
  const end = (intentId: string, suspensionId: string, status: "active" | "abandoned" = "active") =>
    cluster.client.request(suspensionCommands.end, governance, {
      intent_id: intentId,
      suspension_id: suspensionId,
      ...(status === "active" ? { resolution: "responded", response: "yes" } : { resolution: "expired", status: "abandoned" }),
    } as never);

  it("running and claimed tasks block with intent_suspended and suspended_intent_id, in the suspension's transaction, and return on resume", async () => {
    const intent = await activeIntent();
    const { task: running, agent } = await runningTask(intent.id);
    const claimedTask = await createTask(intent.id);
    await act(claimedTask.id, "claim", agent.client);
    const ready = await createTask(intent.id);
    const suspended = await suspend(intent.id);
    for (const t of [running, claimedTask]) {
      expect(await getTask(t.id)).toMatchObject({ status: "blocked", blocked_reason: "intent_suspended", suspended_intent_id: intent.id });
    }
    expect((await getTask(ready.id)).status).toBe("ready");
    // The suspension and the blocks are one commit: the blocks follow intent.suspended in the log.
    const log = await allEvents(cluster, intent.id);
    const suspendedAt = log.findIndex((e) => e.event_type === "intent.suspended");
    const blocks = log.filter((e) => e.event_type === "task.blocked");
    expect(blocks.map((e) => [e.payload.task_id, e.payload.from])).toEqual([
      [running.id, "running"],
      [claimedTask.id, "claimed"],
    ]);
    expect(blocks[0]!.sequence).toBeGreaterThan(log[suspendedAt]!.sequence);
    expect(blocks[0]!.payload).toMatchObject({ blocked_reason: "intent_suspended", suspended_intent_id: intent.id });
    // While suspended: nothing is claimed or started, and the block is not lifted by hand.
    await expectRejected(act(ready.id, "claim", agent.client), 409, "INTENT_SUSPENDED");
    const blocked = await getTask(running.id);
    await expectRejected(patch(running.id, { status: "running" }, blocked.version), 409, "TASK_SUSPENDED");

    await end(intent.id, suspended.state._suspension.id);
    expect(await getTask(running.id)).toMatchObject({ status: "running", blocked_reason: null, suspended_intent_id: null, assigned_agent: agent.id });
    expect(await getTask(claimedTask.id)).toMatchObject({ status: "claimed", blocked_reason: null, assigned_agent: agent.id });
    const unblocks = (await taskEventsOf(intent.id)).filter((e) => e.event_type === "task.unblocked");
    expect(unblocks.map((e) => [e.payload.task_id, e.payload.status, e.payload.reason])).toEqual([
      [running.id, "running", "intent_resumed"],
      [claimedTask.id, "claimed", "intent_resumed"],
    ]);
    expect((await act(running.id, "complete", agent.client)).data.status).toBe("completed");
  });

  it("the official clients' suspension (POST /status) blocks the tasks too; abandoning the suspended intent cancels them", async () => {
    const intent = await activeIntent();
    const { task } = await runningTask(intent.id);
    const current = await cluster.sdk().ops.intentsGet({ intent_id: intent.id });
    const suspended = await cluster.sdk().send("intentsTransition", { intent_id: intent.id, ifMatch: current.version, body: { status: "suspended_awaiting_input" } });
    expect(suspended.status).toBe(200);
    expect(await getTask(task.id)).toMatchObject({ status: "blocked", blocked_reason: "intent_suspended", suspended_intent_id: intent.id });
    const abandoned = await cluster.sdk().send("intentsTransition", { intent_id: intent.id, ifMatch: suspended.data.version, body: { status: "abandoned" } });
    expect(abandoned.status).toBe(200);
    expect(await getTask(task.id)).toMatchObject({ status: "cancelled", blocked_reason: null });
  });

  it("a suspension that expires and abandons the intent cancels the tasks it blocked", async () => {
    const intent = await activeIntent();
    const { task } = await runningTask(intent.id);
    const suspended = await suspend(intent.id);
    await end(intent.id, suspended.state._suspension.id, "abandoned");
    expect(await getTask(task.id)).toMatchObject({ status: "cancelled", blocked_reason: null });
    expect((await taskEventsOf(intent.id, task.id)).at(-1)).toMatchObject({ event_type: "task.cancelled", payload: { reason: "intent_abandoned" } });
  });
});

describe("heartbeats and the tasks an agent holds (4.9)", () => {
  it("reports the ids of tasks_in_progress that the agent does not hold; never fatal", async () => {
    const intent = await activeIntent();
    const { task, agent } = await runningTask(intent.id);
    const notMine = await createTask(intent.id);
    const res = await cluster.sdk("agent").send("agentsHeartbeat", {
      agent_id: agent.id,
      body: { status: "active", client_timestamp: clock().now().toISOString(), tasks_in_progress: [task.id, notMine.id, "job-42"] },
    });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ acknowledged: true, unknown_tasks: [notMine.id, "job-42"] });
    const clean = await cluster.sdk("agent").ops.agentsHeartbeat({
      agent_id: agent.id,
      body: { status: "active", client_timestamp: clock().now().toISOString(), tasks_in_progress: [task.id] },
    });
    expect(clean.unknown_tasks).toEqual([]);
  });
});

// Last: advancing the shared clock past dead_after_seconds kills every agent of this file.
describe("an agent's death makes its tasks ready for reassignment (4.9, 4.8 rule 3)", () => {
  it("claimed and running tasks become ready, assignment cleared, previous agent recorded, task.retrying once", async () => {
    const intent = await activeIntent();
    const agentId = uniqueTag("mortal");
    const reg = await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: agentId, heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 } } });
    expect(reg.status).toBe(201);
    const mortal = cluster.sdk("agent", agentId);
    const running = await createTask(intent.id);
    await act(running.id, "claim", mortal);
    expect((await act(running.id, "start", mortal)).data.status).toBe("running");
    const claimed = await createTask(intent.id);
    await act(claimed.id, "claim", mortal);
    const done = await createTask(intent.id);
    await act(done.id, "claim", mortal);
    await act(done.id, "start", mortal);
    await act(done.id, "complete", mortal);

    clock().advance(61_000);
    await cluster.registry.sweeper.sweep();
    await vi.waitFor(
      async () => {
        for (const t of [running, claimed]) {
          expect(await getTask(t.id)).toMatchObject({ status: "ready", assigned_agent: null, previous_agent: agentId, previous_agents: [agentId] });
        }
      },
      { timeout: 10_000, interval: 100 },
    );
    expect((await getTask(done.id)).status).toBe("completed");
    const retrying = (await taskEventsOf(intent.id)).filter((e) => e.event_type === "task.retrying")!;
    expect(retrying.map((e) => [e.payload.task_id, e.payload.from, e.payload.reason, e.payload.previous_agent])).toEqual([
      [running.id, "running", "agent_dead", agentId],
      [claimed.id, "claimed", "agent_dead", agentId],
    ]);

    // The same lifecycle event delivered again (a republished copy) changes nothing.
    const death = (await cluster.sdk("agent").ops.agentsListEvents({ agent_id: agentId, query: { limit: 1000 } })).events.find(
      (e) => e.event_type === agentEventTypes.lifecycle && e.payload.new_status === "dead",
    );
    expect(death).toBeDefined();
    await cluster.bus.js.publish(cluster.bus.subject(`im.evt.agent.${agentId}.${agentEventTypes.lifecycle}`), JSON.stringify(death), { msgID: `redelivered-${randomUUID()}` });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await taskEventsOf(intent.id)).filter((e) => e.event_type === "task.retrying")).toHaveLength(2);

    // Registered again, the agent claims a new task; a late copy of its old death leaves that one alone.
    expect((await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: agentId } })).status).toBe(201);
    clock().advance(1000);
    const fresh = await createTask(intent.id);
    await vi.waitFor(async () => expect((await act(fresh.id, "claim", mortal)).status).toBe(200), { timeout: 10_000, interval: 100 });
    await cluster.bus.js.publish(cluster.bus.subject(`im.evt.agent.${agentId}.${agentEventTypes.lifecycle}`), JSON.stringify(death), { msgID: `late-${randomUUID()}` });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await getTask(fresh.id)).toMatchObject({ status: "claimed", assigned_agent: agentId });

    // Another agent takes the task over and can see whose work it continues.
    const heir = await newAgent("heir");
    const taken = await act(running.id, "claim", heir.client);
    expect(taken.data).toMatchObject({ status: "claimed", assigned_agent: heir.id, previous_agent: agentId });
  });
});
