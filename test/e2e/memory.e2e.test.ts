import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DeliverPolicy } from "@nats-io/jetstream";
import { memoryStream, systemEventStream, type ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";
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

async function newAgent(prefix = "mem", key: keyof typeof TEST_KEYS = "agent", roleId?: string) {
  const id = uniqueTag(prefix);
  if (roleId) {
    const res = await cluster.api("/agents", { body: { agent_id: id, role_id: roleId }, key });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return { id, headers: { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": id } };
  }
  return { id, headers: await agentHeaders(cluster, id, key) };
}

const write = (headers: Record<string, string>, body: Record<string, unknown>) => cluster.api("/memory", { body, headers, key: null });
const read = (headers: Record<string, string>, id: string) => cluster.api(`/memory/${id}`, { headers, key: null });
const query = (headers: Record<string, string>, qs: string) => cluster.api(`/memory?${qs}`, { headers, key: null });

async function activeIntent(): Promise<any> {
  const intent = await createIntent(cluster);
  if (intent.status === "active") return intent;
  const res = await cluster.api(`/intents/${intent.id}/status`, { body: { status: "active" }, headers: { "If-Match": String(intent.version) } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** A task created by the coordinator key and claimed by `agent`. */
async function claimedTask(agent: { headers: Record<string, string> }, body: Record<string, unknown> = {}) {
  const intent = await activeIntent();
  const created = await cluster.api(`/intents/${intent.id}/tasks`, { body: { title: "memory task", ...body }, key: "coordinator" });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const claimed = await cluster.api(`/tasks/${created.body.id}/claim`, { body: {}, headers: agent.headers, key: null });
  expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
  return { intent, task: claimed.body };
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
    await write(a.headers, { namespace: ns, key: "w", value: {} });
    await write(a.headers, { namespace: ns, key: "e", value: {}, memory_type: "episodic" });
    const seen = await query(b.headers, `agent_id=${a.id}&namespace=${ns}`);
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ entries: [], total: 0 });
    expectError(await cluster.api("/memory?memory_type=episodic", { key: "coordinator" }), 400, "VALIDATION_FAILED");
  });

});

describe("access (rules 2-5)", () => {
  it("working memory: owner writes, coordinator of the task reads only, others nothing; the new holder after reassignment reads", async () => {
    const a = await newAgent();
    const b = await newAgent("next");
    const stranger = await newAgent("stranger", "other");
    const { task } = await claimedTask(a);
    const created = await write(a.headers, { namespace: "work", key: "step", value: { n: 1 }, scope: { task_id: task.id } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.scope).toEqual({ task_id: task.id, intent_id: task.intent_id });
    const id = created.body.id;
    // coordinator (created the task): read, not write
    expect((await cluster.api(`/memory/${id}`, { key: "coordinator" })).status).toBe(200);
    expectError(await cluster.api(`/memory/${id}`, { method: "DELETE", key: "coordinator" }), 403, "ACCESS_DENIED");
    // another agent: nothing
    expectError(await read(stranger.headers, id), 403, "ACCESS_DENIED");
    expectError(await read(b.headers, id), 403, "ACCESS_DENIED");
    // reassignment: b now holds the task; it reads a's entries, read-only
    const current = (await cluster.api(`/tasks/${task.id}`)).body;
    const moved = await cluster.api(`/tasks/${task.id}`, { method: "PATCH", body: { assigned_agent: b.id }, headers: { "If-Match": String(current.version) }, key: "coordinator" });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.previous_agents).toContain(a.id);
    expect((await read(b.headers, id)).status).toBe(200);
    expectError(await cluster.api(`/memory/${id}`, { method: "PATCH", body: { value: {} }, headers: { ...b.headers, "If-Match": "1" }, key: null }), 403, "ACCESS_DENIED");
    await vi.waitFor(async () => expect((await query(b.headers, `agent_id=${a.id}&memory_type=working`)).body.total).toBe(1), { timeout: 5000 });
    expect((await query(stranger.headers, `agent_id=${a.id}&memory_type=working`)).body.total).toBe(0);
  });

  it("inherit_from_parent: the holder of a sub-task reads the parent's working memory", async () => {
    const a = await newAgent();
    const c = await newAgent("child");
    const { intent, task: parent } = await claimedTask(a);
    const entry = await write(a.headers, { namespace: "work", key: "parent-note", value: {}, scope: { task_id: parent.id } });
    const child = await cluster.api(`/intents/${intent.id}/tasks`, { body: { title: "child", parent_task_id: parent.id, memory_policy: { inherit_from_parent: true } }, key: "coordinator" });
    expect(child.status, JSON.stringify(child.body)).toBe(201);
    expect((await cluster.api(`/tasks/${child.body.id}/claim`, { body: {}, headers: c.headers, key: null })).status).toBe(200);
    await vi.waitFor(async () => expect((await read(c.headers, entry.body.id)).status).toBe(200), { timeout: 5000 });
    expectError(await cluster.api(`/memory/${entry.body.id}`, { method: "DELETE", headers: c.headers, key: null }), 403, "ACCESS_DENIED");
  });

  it("episodic: owner and same role_id read and write; a coordinator of a task assigned to the owner reads; others nothing", async () => {
    const role = uniqueTag("role");
    const a = await newAgent("ep", "agent", role);
    const twin = await newAgent("twin", "agent", role);
    const stranger = await newAgent("s", "other");
    const e = await write(a.headers, { namespace: "ep", key: "lesson", value: {}, memory_type: "episodic" });
    expect(e.status).toBe(201);
    expect((await read(twin.headers, e.body.id)).status).toBe(200);
    expectError(await read(stranger.headers, e.body.id), 403, "ACCESS_DENIED");
    expectError(await cluster.api(`/memory/${e.body.id}`, { key: "coordinator" }), 403, "ACCESS_DENIED");
    await claimedTask(a);
    await vi.waitFor(async () => expect((await cluster.api(`/memory/${e.body.id}`, { key: "coordinator" })).status).toBe(200), { timeout: 5000 });
    const patched = await cluster.api(`/memory/${e.body.id}`, { method: "PATCH", body: { value: { by: "twin" } }, headers: { ...twin.headers, "If-Match": "1" }, key: null });
    expect(patched.status).toBe(200);
  });

  it("the coordinator lease holder of the task's intent (4.8 'the coordinator managing the task') reads working and episodic memory, read-only, until the lease ends", async () => {
    const a = await newAgent("owner");
    const holder = await newAgent("holder", "other");
    const { intent, task } = await claimedTask(a);
    const working = (await write(a.headers, { namespace: "work", key: "step", value: { n: 1 }, scope: { task_id: task.id } })).body;
    const episodic = (await write(a.headers, { namespace: "ep", key: "lesson", value: {}, memory_type: "episodic" })).body;
    const workingQuery = `agent_id=${a.id}&memory_type=working`;
    expectError(await read(holder.headers, working.id), 403, "ACCESS_DENIED");
    expectError(await read(holder.headers, episodic.id), 403, "ACCESS_DENIED");
    expect((await query(holder.headers, workingQuery)).body.total).toBe(0);

    const lease = await cluster.api("/coordinators", { headers: holder.headers, key: null, body: { agent_id: holder.id, intent_id: intent.id, heartbeat_interval_seconds: 30 } });
    expect(lease.status, JSON.stringify(lease.body)).toBe(201);
    expect((await read(holder.headers, working.id)).status).toBe(200);
    expect((await read(holder.headers, episodic.id)).status).toBe(200);
    expect((await query(holder.headers, workingQuery)).body.total).toBe(1);
    expectError(await cluster.api(`/memory/${working.id}`, { method: "DELETE", headers: holder.headers, key: null }), 403, "ACCESS_DENIED");
    expectError(await cluster.api(`/memory/${episodic.id}`, { method: "PATCH", body: { value: {} }, headers: { ...holder.headers, "If-Match": "1" }, key: null }), 403, "ACCESS_DENIED");

    // Two missed heartbeats on the server clock end the lease, and the right with it: nothing is cached.
    clock().advance(60_000);
    expectError(await read(holder.headers, working.id), 403, "ACCESS_DENIED");
    expectError(await read(holder.headers, episodic.id), 403, "ACCESS_DENIED");
    expect((await query(holder.headers, workingQuery)).body.total).toBe(0);
  });

});

describe("capacity (rules 4, 6)", () => {
  it("working memory per task: max_entries and max_total_size_kb give 429 CAPACITY_EXCEEDED", async () => {
    const a = await newAgent();
    const { task } = await claimedTask(a, { memory_policy: { max_entries: 2, max_total_size_kb: 1 } });
    const w = (key: string, size: number) => write(a.headers, { namespace: "w", key, value: { s: "x".repeat(size) }, scope: { task_id: task.id } });
    expect((await w("a", 10)).status).toBe(201);
    const tooBig = await w("b", 2000);
    expectError(tooBig, 429, "CAPACITY_EXCEEDED");
    expect(tooBig.body.title).toBe("Memory Capacity Exceeded");
    expect((await w("b", 10)).status).toBe(201);
    expectError(await w("c", 10), 429, "CAPACITY_EXCEEDED");
  });
});

describe("lifecycle (3.7, rule 7) and events (part 6)", () => {
  it("updates and deletes are announced with version and previous_version; scope.intent_id alone routes to that intent's log", async () => {
    const a = await newAgent();
    const intent = await activeIntent();
    const e = await write(a.headers, { namespace: "ctx", key: "k", value: { v: 1 }, scope: { intent_id: intent.id } });
    expect(e.status, JSON.stringify(e.body)).toBe(201);
    const p = await cluster.api(`/memory/${e.body.id}`, { method: "PATCH", body: { tags: ["new"] }, headers: { ...a.headers, "If-Match": "1" }, key: null });
    expect(p.status).toBe(200);
    expect((await cluster.api(`/memory/${e.body.id}`, { method: "DELETE", headers: a.headers, key: null })).status).toBe(200);
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
    expectError(await write(a.headers, { namespace: "ctx", key: "k2", value: {}, scope: { intent_id: UNKNOWN_ID } }), 404, "INTENT_NOT_FOUND");
  });

  it("without archive_on_completion the task's working memory is deleted with memory.deleted, no snapshot", async () => {
    const a = await newAgent();
    const { intent, task } = await claimedTask(a, { memory_policy: { archive_on_completion: false } });
    const e = await write(a.headers, { namespace: "w", key: "gone", value: { v: 1 }, scope: { task_id: task.id } });
    const cancelled = await cluster.api(`/tasks/${task.id}/cancel`, { body: {}, headers: { "If-Match": String(task.version) }, key: "coordinator" });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    await vi.waitFor(async () => expectError(await read(a.headers, e.body.id), 404, "ENTRY_NOT_FOUND"), { timeout: 8000 });
    await vi.waitFor(async () => expect((await systemEvents(intent.id)).map((m) => m.data.event_type)).toEqual(["memory.created", "memory.deleted"]), { timeout: 5000 });
  });

  it("a completed task's working memory is archived into memory.archived (snapshot) and deleted; system events carry no value", async () => {
    const a = await newAgent();
    const { intent, task } = await claimedTask(a);
    const e1 = await write(a.headers, { namespace: "w", key: "k1", value: { secret: "v1" }, tags: ["t"], scope: { task_id: task.id } });
    expect(e1.status).toBe(201);
    const started = await cluster.api(`/tasks/${task.id}/start`, { body: {}, headers: a.headers, key: null });
    const done = await cluster.api(`/tasks/${task.id}/complete`, { body: {}, headers: { ...a.headers, "If-Match": String(started.body.version) }, key: null });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await vi.waitFor(async () => expectError(await read(a.headers, e1.body.id), 404, "ENTRY_NOT_FOUND"), { timeout: 8000 });
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
    expect(created.data.payload).toMatchObject({ type: "memory.created", agent_id: a.id, intent_id: intent.id, task_id: task.id, data: { entry_id: e1.body.id, namespace: "w", key: "k1", memory_type: "working", version: 1, previous_version: null, tags: ["t"] } });
    expect(JSON.stringify(created.data)).not.toContain("v1");
    expect(archived.data.payload.data).toEqual({ entries_archived: 1, snapshot: [{ namespace: "w", key: "k1", value: { secret: "v1" }, tags: ["t"] }] });
    expectError(await write(a.headers, { namespace: "w", key: "late", value: {}, scope: { task_id: task.id } }), 409, "TASK_ENDED");
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
    const e = await write(a.headers, { namespace: "solo", key: "k", value: { hidden: "zzz" }, memory_type: "episodic" });
    const stream = cluster.bus.streamName(memoryStream.name);
    const got = await vi.waitFor(async () => {
      const consumer = await cluster.bus.js.consumers.get(stream, { filter_subjects: cluster.bus.subject(`im.evt.memory.${a.id}.>`), deliver_policy: DeliverPolicy.All });
      const msg = await consumer.next({ expires: 1000 });
      expect(msg).toBeTruthy();
      return msg!.json<any>();
    }, { timeout: 5000 });
    expect(got).toMatchObject({ event_type: "memory.created", payload: { agent_id: a.id, intent_id: null, task_id: null, data: { entry_id: e.body.id } } });
    expect(JSON.stringify(got)).not.toContain("zzz");
    // The registry appends it to the agent's own log, the one /subscribe/agents/{id} streams.
    const logged = await vi.waitFor(
      async () => {
        const res = await cluster.api(`/agents/${a.id}/events`, { headers: a.headers, key: null });
        const found = res.body.events.find((ev: any) => ev.event_type === "memory.created");
        expect(found).toBeTruthy();
        return found;
      },
      { timeout: 5000, interval: 100 },
    );
    expect(logged.payload).toMatchObject({ type: "memory.created", agent_id: a.id, data: { entry_id: e.body.id, namespace: "solo", key: "k", memory_type: "episodic", version: 1, previous_version: null } });
    expect(JSON.stringify(logged)).not.toContain("zzz");
  });
});

describe("batch and summary", () => {
  it("GET /agents/{id}/memory/summary has the 4.8 shape", async () => {
    const a = await newAgent();
    const { task } = await claimedTask(a);
    await write(a.headers, { namespace: "s", key: "w", value: { a: 1 }, scope: { task_id: task.id } });
    await write(a.headers, { namespace: "s", key: "e", value: {}, memory_type: "episodic", pinned: true });
    const res = await cluster.api(`/agents/${a.id}/memory/summary`, { headers: a.headers, key: null });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      agent_id: a.id,
      working: { entry_count: 1, tasks_with_memory: [task.id] },
      episodic: { entry_count: 1, capacity: 3, pinned_count: 1 },
    });
    expect(typeof res.body.working.total_size_kb).toBe("number");
    expect(res.body.episodic.oldest_entry).toBeTruthy();
    expect(Array.isArray(res.body.semantic_namespaces_accessible)).toBe(true);
    expectError(await cluster.api(`/agents/${a.id}/memory/summary`, { headers: (await newAgent("x", "other")).headers, key: null }), 403, "ACCESS_DENIED");
  });
});

