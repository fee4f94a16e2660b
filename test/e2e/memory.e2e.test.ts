import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DeliverPolicy } from "@nats-io/jetstream";
import { memoryStream, systemEventStream, type ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import type { BodyOf, Intentmesh, QueryOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectRejected, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";
import { agentHeaders } from "../support/agents";
import { eq, sql } from "drizzle-orm";
import { insertPrepared, prepareCreate } from "../../services/memory/src/handlers/entries";
import { tasks as memoryTasks } from "../../services/memory/src/db/schema";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ memory: { episodicCapacity: 3 } });
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;

/** A registered agent and the typed client acting as it (its key, X-Agent-ID its id). */
interface Agent {
  id: string;
  client: Intentmesh;
}

async function newAgent(prefix = "mem", key: keyof typeof TEST_KEYS = "agent", roleId?: string): Promise<Agent> {
  const id = uniqueTag(prefix);
  if (roleId) {
    const res = await cluster.sdk(key).send("agentsRegister", { body: { agent_id: id, role_id: roleId } });
    expect(res.status).toBe(201);
  } else {
    await agentHeaders(cluster, id, key);
  }
  return { id, client: cluster.sdk(key, id) };
}

const write = (agent: Agent, body: BodyOf<"memoryCreate">) => agent.client.send("memoryCreate", { body });
const read = (agent: Agent, id: string) => agent.client.send("memoryGet", { entry_id: id });
const query = (agent: Agent, filter: QueryOf<"memoryQuery">) => agent.client.send("memoryQuery", { query: filter });
const asCoordinator = () => cluster.sdk("coordinator");

async function activeIntent() {
  const intent = await createIntent(cluster);
  if (intent.status === "active") return intent;
  return cluster.sdk().ops.intentsTransition({ intent_id: intent.id, ifMatch: intent.version, body: { status: "active" } });
}

/** A task created by the coordinator key and claimed by `agent`. */
async function claimedTask(agent: Agent, body: Partial<BodyOf<"tasksCreate">> = {}) {
  const intent = await activeIntent();
  const created = await asCoordinator().send("tasksCreate", { intent_id: intent.id, body: { title: "memory task", ...body } });
  expect(created.status).toBe(201);
  const claimed = await agent.client.send("tasksClaim", { task_id: created.data.id, body: {} });
  expect(claimed.status).toBe(200);
  return { intent, task: claimed.data };
}

/** The system events memory published for an intent, as the intents service will consume them. */
async function systemEvents(intentId: string): Promise<any[]> {
  const stream = cluster.bus.streamName(systemEventStream.name);
  const consumer = await cluster.bus.js.consumers.get(stream, { filter_subjects: cluster.bus.subject(`im.sys.intent.${intentId}.>`), deliver_policy: DeliverPolicy.All });
  const out: any[] = [];
  const batch = await consumer.fetch({ max_messages: 500, expires: 1000 });
  for await (const msg of batch) {
    out.push({ subject: msg.subject, msgId: msg.headers?.get("Nats-Msg-Id"), schema: msg.headers?.get("Im-Schema"), data: msg.json() });
    if (msg.info.pending === 0) break;
  }
  return out;
}

describe("query (4.8)", () => {
  it("never returns entries the caller may not read (rule 8)", async () => {
    const a = await newAgent();
    const b = await newAgent("other", "other");
    const ns = uniqueTag("priv");
    await write(a, { namespace: ns, key: "w", value: {} });
    await write(a, { namespace: ns, key: "e", value: {}, memory_type: "episodic" });
    const seen = await query(b, { agent_id: a.id, namespace: ns });
    expect(seen.status).toBe(200);
    expect(seen.data).toMatchObject({ entries: [], total: 0 });
    await expectRejected(asCoordinator().send("memoryQuery", { query: { memory_type: "episodic" } }), 400, "VALIDATION_FAILED");
  });

});

describe("access (rules 2-5)", () => {
  it("working memory: owner writes, coordinator of the task reads only, others nothing; the new holder after reassignment reads", async () => {
    const a = await newAgent();
    const b = await newAgent("next");
    const stranger = await newAgent("stranger", "other");
    const { task } = await claimedTask(a);
    const created = await write(a, { namespace: "work", key: "step", value: { n: 1 }, scope: { task_id: task.id } });
    expect(created.status).toBe(201);
    expect(created.data.scope).toEqual({ task_id: task.id, intent_id: task.intent_id });
    const id = created.data.id;
    // coordinator (created the task): read, not write
    expect((await asCoordinator().send("memoryGet", { entry_id: id })).status).toBe(200);
    await expectRejected(asCoordinator().send("memoryDelete", { entry_id: id }), 403, "ACCESS_DENIED");
    // another agent: nothing
    await expectRejected(read(stranger, id), 403, "ACCESS_DENIED");
    await expectRejected(read(b, id), 403, "ACCESS_DENIED");
    // reassignment: b now holds the task; it reads a's entries, read-only
    const current = await cluster.sdk().ops.tasksGet({ task_id: task.id });
    const moved = await asCoordinator().send("tasksPatch", { task_id: task.id, ifMatch: current.version, body: { assigned_agent: b.id } });
    expect(moved.status).toBe(200);
    expect(moved.data.previous_agents).toContain(a.id);
    expect((await read(b, id)).status).toBe(200);
    await expectRejected(b.client.send("memoryPatch", { entry_id: id, ifMatch: 1, body: { value: {} } }), 403, "ACCESS_DENIED");
    await vi.waitFor(async () => expect((await query(b, { agent_id: a.id, memory_type: "working" })).data.total).toBe(1), { timeout: 5000 });
    expect((await query(stranger, { agent_id: a.id, memory_type: "working" })).data.total).toBe(0);
  });

  it("inherit_from_parent: the holder of a sub-task reads the parent's working memory", async () => {
    const a = await newAgent();
    const c = await newAgent("child");
    const { intent, task: parent } = await claimedTask(a);
    const entry = (await write(a, { namespace: "work", key: "parent-note", value: {}, scope: { task_id: parent.id } })).data;
    const child = await asCoordinator().send("tasksCreate", { intent_id: intent.id, body: { title: "child", parent_task_id: parent.id, memory_policy: { inherit_from_parent: true } } });
    expect(child.status).toBe(201);
    expect((await c.client.send("tasksClaim", { task_id: child.data.id, body: {} })).status).toBe(200);
    await vi.waitFor(async () => expect((await read(c, entry.id)).status).toBe(200), { timeout: 5000 });
    await expectRejected(c.client.send("memoryDelete", { entry_id: entry.id }), 403, "ACCESS_DENIED");
  });

  it("episodic: owner and same role_id read and write; a coordinator of a task assigned to the owner reads; others nothing", async () => {
    const role = uniqueTag("role");
    const a = await newAgent("ep", "agent", role);
    const twin = await newAgent("twin", "agent", role);
    const stranger = await newAgent("s", "other");
    const e = await write(a, { namespace: "ep", key: "lesson", value: {}, memory_type: "episodic" });
    expect(e.status).toBe(201);
    expect((await read(twin, e.data.id)).status).toBe(200);
    await expectRejected(read(stranger, e.data.id), 403, "ACCESS_DENIED");
    await expectRejected(asCoordinator().send("memoryGet", { entry_id: e.data.id }), 403, "ACCESS_DENIED");
    await claimedTask(a);
    await vi.waitFor(async () => expect((await asCoordinator().send("memoryGet", { entry_id: e.data.id })).status).toBe(200), { timeout: 5000 });
    const patched = await twin.client.send("memoryPatch", { entry_id: e.data.id, ifMatch: 1, body: { value: { by: "twin" } } });
    expect(patched.status).toBe(200);
  });

  it("the coordinator lease holder of the task's intent (4.8 'the coordinator managing the task') reads working and episodic memory, read-only, until the lease ends", async () => {
    const a = await newAgent("owner");
    const holder = await newAgent("holder", "other");
    const { intent, task } = await claimedTask(a);
    const working = (await write(a, { namespace: "work", key: "step", value: { n: 1 }, scope: { task_id: task.id } })).data;
    const episodic = (await write(a, { namespace: "ep", key: "lesson", value: {}, memory_type: "episodic" })).data;
    const workingQuery = { agent_id: a.id, memory_type: "working" };
    await expectRejected(read(holder, working.id), 403, "ACCESS_DENIED");
    await expectRejected(read(holder, episodic.id), 403, "ACCESS_DENIED");
    expect((await query(holder, workingQuery)).data.total).toBe(0);

    const lease = await holder.client.send("coordinatorsCreateLease", { body: { agent_id: holder.id, intent_id: intent.id, heartbeat_interval_seconds: 30 } });
    expect(lease.status).toBe(201);
    expect((await read(holder, working.id)).status).toBe(200);
    expect((await read(holder, episodic.id)).status).toBe(200);
    expect((await query(holder, workingQuery)).data.total).toBe(1);
    await expectRejected(holder.client.send("memoryDelete", { entry_id: working.id }), 403, "ACCESS_DENIED");
    await expectRejected(holder.client.send("memoryPatch", { entry_id: episodic.id, ifMatch: 1, body: { value: {} } }), 403, "ACCESS_DENIED");

    // Two missed heartbeats on the server clock end the lease, and the right with it: nothing is cached.
    clock().advance(60_000);
    await expectRejected(read(holder, working.id), 403, "ACCESS_DENIED");
    await expectRejected(read(holder, episodic.id), 403, "ACCESS_DENIED");
    expect((await query(holder, workingQuery)).data.total).toBe(0);
  });

});

describe("capacity (rules 4, 6)", () => {
  it("working memory per task: max_entries and max_total_size_kb give 429 CAPACITY_EXCEEDED", async () => {
    const a = await newAgent();
    const { task } = await claimedTask(a, { memory_policy: { max_entries: 2, max_total_size_kb: 1 } });
    const w = (key: string, size: number) => write(a, { namespace: "w", key, value: { s: "x".repeat(size) }, scope: { task_id: task.id } });
    expect((await w("a", 10)).status).toBe(201);
    // The SDK does not retry a 429, so the refusal asserted is the first answer.
    const tooBig = await expectRejected(w("b", 2000), 429, "CAPACITY_EXCEEDED");
    expect(tooBig.body?.title).toBe("Memory Capacity Exceeded");
    expect((await w("b", 10)).status).toBe(201);
    await expectRejected(w("c", 10), 429, "CAPACITY_EXCEEDED");
  });
});

describe("lifecycle (3.7, rule 7) and events (part 6)", () => {
  it("updates and deletes are announced with version and previous_version; scope.intent_id alone routes to that intent's log", async () => {
    const a = await newAgent();
    const intent = await activeIntent();
    const e = await write(a, { namespace: "ctx", key: "k", value: { v: 1 }, scope: { intent_id: intent.id } });
    expect(e.status).toBe(201);
    const p = await a.client.send("memoryPatch", { entry_id: e.data.id, ifMatch: 1, body: { tags: ["new"] } });
    expect(p.status).toBe(200);
    expect((await a.client.send("memoryDelete", { entry_id: e.data.id })).status).toBe(200);
    await vi.waitFor(async () => {
      const events = await systemEvents(intent.id);
      expect(events.map((m) => [m.data.event_type, m.data.payload.data.version, m.data.payload.data.previous_version])).toEqual([
        ["memory.created", 1, null],
        ["memory.updated", 2, 1],
        ["memory.deleted", 2, 2],
      ]);
      expect(events[1].data.payload).toMatchObject({ agent_id: a.id, intent_id: intent.id, task_id: null, data: { tags: ["new"] } });
    }, { timeout: 5000, interval: 100 });
    // End to end: the intents service appended them to the intent's own log, without the value.
    await vi.waitFor(async () => {
      const logged = (await allEvents(cluster, intent.id)).filter((ev) => ev.event_type.startsWith("memory."));
      expect(logged.map((ev) => [ev.event_type, ev.actor])).toEqual([["memory.created", a.id], ["memory.updated", a.id], ["memory.deleted", a.id]]);
      expect(JSON.stringify(logged)).not.toContain('"v":1');
    }, { timeout: 5000, interval: 100 });
    await expectRejected(write(a, { namespace: "ctx", key: "k2", value: {}, scope: { intent_id: UNKNOWN_ID } }), 404, "INTENT_NOT_FOUND");
  });

  it("without archive_on_completion the task's working memory is deleted with memory.deleted, no snapshot", async () => {
    const a = await newAgent();
    const { intent, task } = await claimedTask(a, { memory_policy: { archive_on_completion: false } });
    const e = await write(a, { namespace: "w", key: "gone", value: { v: 1 }, scope: { task_id: task.id } });
    const cancelled = await asCoordinator().send("tasksCancel", { task_id: task.id, ifMatch: task.version, body: {} });
    expect(cancelled.status).toBe(200);
    await vi.waitFor(() => expectRejected(read(a, e.data.id), 404, "ENTRY_NOT_FOUND"), { timeout: 8000 });
    await vi.waitFor(async () => expect((await systemEvents(intent.id)).map((m) => m.data.event_type)).toEqual(["memory.created", "memory.deleted"]), { timeout: 5000 });
  });

  it("a completed task's working memory is archived into memory.archived (snapshot) and deleted; system events carry no value", async () => {
    const a = await newAgent();
    const { intent, task } = await claimedTask(a);
    // A value no id or timestamp can contain by chance ("v1" once matched a random agent id).
    const secret = "memory-value-kept-out-of-events";
    const e1 = await write(a, { namespace: "w", key: "k1", value: { secret }, tags: ["t"], scope: { task_id: task.id } });
    expect(e1.status).toBe(201);
    const started = await a.client.send("tasksStart", { task_id: task.id, body: {} });
    const done = await a.client.send("tasksComplete", { task_id: task.id, ifMatch: started.data.version, body: {} });
    expect(done.status).toBe(200);
    await vi.waitFor(() => expectRejected(read(a, e1.data.id), 404, "ENTRY_NOT_FOUND"), { timeout: 8000 });
    const events = await vi.waitFor(
      async () => {
        const out = await systemEvents(intent.id);
        expect(out.map((m) => m.data.event_type)).toEqual(["memory.created", "memory.archived"]);
        return out;
      },
      { timeout: 8000, interval: 200 },
    );
    const [created, archived] = events;
    expect(created.subject).toBe(cluster.bus.subject(`im.sys.intent.${intent.id}.memory.created`));
    expect(created.msgId).toBe(`sys:memory:${created.data.id}`);
    expect(created.schema).toBe("im.system-event/1");
    expect(created.data).toMatchObject({ source: "memory", intent_id: intent.id, event_type: "memory.created" });
    expect(created.data.payload).toMatchObject({ type: "memory.created", agent_id: a.id, intent_id: intent.id, task_id: task.id, data: { entry_id: e1.data.id, namespace: "w", key: "k1", memory_type: "working", version: 1, previous_version: null, tags: ["t"] } });
    expect(JSON.stringify(created.data)).not.toContain(secret);
    expect(archived.data.payload.data).toEqual({ entries_archived: 1, snapshot: [{ namespace: "w", key: "k1", value: { secret }, tags: ["t"] }] });
    await expectRejected(write(a, { namespace: "w", key: "late", value: {}, scope: { task_id: task.id } }), 409, "TASK_ENDED");
  });

  it("a create checked before the task ended but committed after is refused inside its transaction", async () => {
    const a = await newAgent();
    const { task } = await claimedTask(a);
    const ctx = cluster.memory.ctx;
    const caller = { principal: "agent-1", roles: ["agent" as const], actor: a.id, agent_id: a.id };
    // Checked while the task runs...
    const prepared = await prepareCreate(ctx, { namespace: "w", key: "racing", value: {}, memory_type: "working", tags: [], scope: { task_id: task.id } }, caller, clock().now());
    // ...then the task-end consumer marks it ended (as it does before deleting the working memory).
    // It does so with the task's terminal version; a version above any the claim produced keeps
    // a late refresh of the record (running, older version) from undoing the end.
    await ctx.db
      .update(memoryTasks)
      .set({ ended: true, version: sql`${memoryTasks.version} + 1000` })
      .where(eq(memoryTasks.taskId, task.id));
    await expect(ctx.db.transaction((tx) => insertPrepared(ctx, tx, prepared, caller, []))).rejects.toMatchObject({ code: "TASK_ENDED", status: 409 });
  });

  it("events without task or intent context go to the memory stream for the agent", async () => {
    const a = await newAgent();
    const hidden = "memory-value-kept-out-of-events";
    const e = (await write(a, { namespace: "solo", key: "k", value: { hidden }, memory_type: "episodic" })).data;
    const stream = cluster.bus.streamName(memoryStream.name);
    const got = await vi.waitFor(async () => {
      const consumer = await cluster.bus.js.consumers.get(stream, { filter_subjects: cluster.bus.subject(`im.evt.memory.${a.id}.>`), deliver_policy: DeliverPolicy.All });
      const msg = await consumer.next({ expires: 1000 });
      expect(msg).toBeTruthy();
      return msg!.json<any>();
    }, { timeout: 5000 });
    expect(got).toMatchObject({ event_type: "memory.created", payload: { agent_id: a.id, intent_id: null, task_id: null, data: { entry_id: e.id } } });
    expect(JSON.stringify(got)).not.toContain(hidden);
    // The registry appends it to the agent's own log, the one /subscribe/agents/{id} streams.
    const logged = await vi.waitFor(
      async () => {
        const page = await a.client.ops.agentsListEvents({ agent_id: a.id });
        const found = page.events.find((ev) => ev.event_type === "memory.created");
        expect(found).toBeTruthy();
        return found!;
      },
      { timeout: 5000, interval: 100 },
    );
    expect(logged.payload).toMatchObject({ type: "memory.created", agent_id: a.id, data: { entry_id: e.id, namespace: "solo", key: "k", memory_type: "episodic", version: 1, previous_version: null } });
    expect(JSON.stringify(logged)).not.toContain(hidden);
  });
});

describe("batch and summary", () => {
  it("GET /agents/{id}/memory/summary has the 4.8 shape", async () => {
    const a = await newAgent();
    const { task } = await claimedTask(a);
    await write(a, { namespace: "s", key: "w", value: { a: 1 }, scope: { task_id: task.id } });
    await write(a, { namespace: "s", key: "e", value: {}, memory_type: "episodic", pinned: true });
    const res = await a.client.send("memorySummary", { agent_id: a.id });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({
      agent_id: a.id,
      working: { entry_count: 1, tasks_with_memory: [task.id] },
      episodic: { entry_count: 1, capacity: 3, pinned_count: 1 },
    });
    expect(typeof res.data.working.total_size_kb).toBe("number");
    expect(res.data.episodic.oldest_entry).toBeTruthy();
    expect(Array.isArray(res.data.semantic_namespaces_accessible)).toBe(true);
    await expectRejected((await newAgent("x", "other")).client.send("memorySummary", { agent_id: a.id }), 403, "ACCESS_DENIED");
  });
});

