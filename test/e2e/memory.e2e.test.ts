import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DeliverPolicy } from "@nats-io/jetstream";
import { memoryStream, systemEventStream, type ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";
import { agentHeaders } from "../support/agents";
import { eq, sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
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

/** The agent-stream memory events (no task or intent context) of one agent, oldest first. */
async function agentMemoryEvents(agentId: string): Promise<any[]> {
  const stream = cluster.bus.streamName(memoryStream.name);
  const consumer = await cluster.bus.js.consumers.get(stream, { filter_subjects: cluster.bus.subject(`im.evt.memory.${agentId}.>`), deliver_policy: DeliverPolicy.All });
  const out: any[] = [];
  const batch = await consumer.fetch({ max_messages: 500, expires: 1000 });
  for await (const msg of batch) {
    out.push(msg.json());
    if (msg.info.pending === 0) break;
  }
  return out;
}

describe("entries: create, read, update, delete (4.8, 2.14)", () => {
  it("creates an entry with the 2.14 fields, reads it, and deletes it", async () => {
    const a = await newAgent();
    const res = await write(a.headers, { namespace: "notes.daily", key: "k1", value: { text: "hello" }, memory_type: "episodic", tags: ["x", "y"], priority: "high", pinned: true });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.headers.get("etag")).toMatch(/^"?1"?$/);
    expect(res.body).toMatchObject({ agent_id: a.id, namespace: "notes.daily", key: "k1", value: { text: "hello" }, memory_type: "episodic", tags: ["x", "y"], version: 1, pinned: true, priority: "high", ttl: null, expires_at: null, scope: null });
    expect(Object.keys(res.body).sort()).toEqual(
      ["id", "agent_id", "namespace", "key", "value", "memory_type", "scope", "tags", "ttl", "version", "created_at", "updated_at", "expires_at", "pinned", "priority", "curated_by", "sensitivity"].sort(),
    );
    const got = await read(a.headers, res.body.id);
    expect(got.status).toBe(200);
    expect(got.body.value).toEqual({ text: "hello" });
    const del = await cluster.api(`/memory/${res.body.id}`, { method: "DELETE", headers: a.headers, key: null });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ status: "deleted", entry_id: res.body.id });
    expectError(await read(a.headers, res.body.id), 404, "ENTRY_NOT_FOUND");
  });

  it("a second create of the same (agent_id, namespace, key) is 409 ENTRY_EXISTS; semantic keys are unique per namespace", async () => {
    const a = await newAgent();
    const first = await write(a.headers, { namespace: "n", key: "same", value: {} });
    expect(first.status).toBe(201);
    const again = await write(a.headers, { namespace: "n", key: "same", value: { v: 2 }, memory_type: "episodic" });
    expectError(again, 409, "ENTRY_EXISTS");
    expect(again.body.entry_id).toBe(first.body.id);
    const ns = uniqueTag("sem");
    expect((await cluster.api("/memory", { body: { namespace: ns, key: "fact", value: {}, memory_type: "semantic" }, key: "coordinator" })).status).toBe(201);
    expectError(await cluster.api("/memory", { body: { namespace: ns, key: "fact", value: {}, memory_type: "semantic" }, key: "admin" }), 409, "ENTRY_EXISTS");
  });

  it("PATCH needs If-Match (428), a stale version is 409 VERSION_MISMATCH with the current entry, a good one increments the version", async () => {
    const a = await newAgent();
    const { body: entry } = await write(a.headers, { namespace: "n", key: "p", value: { v: 1 }, tags: ["a"] });
    const patch = (ifMatch: string | null, body: Record<string, unknown>) =>
      cluster.api(`/memory/${entry.id}`, { method: "PATCH", body, headers: { ...a.headers, ...(ifMatch === null ? {} : { "If-Match": ifMatch }) }, key: null });
    expectError(await patch(null, { value: { v: 2 } }), 428, "PRECONDITION_REQUIRED");
    const ok = await patch("1", { value: { v: 2 }, tags: ["b"] });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ version: 2, value: { v: 2 }, tags: ["b"] });
    const stale = await patch("1", { value: { v: 3 } });
    expectError(stale, 409, "VERSION_MISMATCH");
    expect(stale.body).toMatchObject({ id: entry.id, version: 2, value: { v: 2 }, tags: ["b"], current_version: 2 });
    expectError(await cluster.api(`/memory/${UNKNOWN_ID}`, { method: "PATCH", body: { value: {} }, headers: { ...a.headers, "If-Match": "1" }, key: null }), 404, "ENTRY_NOT_FOUND");
  });

  it("refuses a value over 64 KB with 413 pointing to attachments", async () => {
    const a = await newAgent();
    const res = await write(a.headers, { namespace: "n", key: "big", value: { blob: "x".repeat(70 * 1024) } });
    expectError(res, 413, "VALUE_TOO_LARGE");
    expect(res.body.message).toMatch(/attachment/);
  });

  it("pinned and priority are for episodic memory only", async () => {
    const a = await newAgent();
    expectError(await write(a.headers, { namespace: "n", key: "w", value: {}, pinned: true }), 400, "FIELD_NOT_ALLOWED");
    expectError(await write(a.headers, { namespace: "n", key: "w", value: {}, memory_type: "semantic", priority: "low" }), 400, "FIELD_NOT_ALLOWED");
  });

  it("ttl duration sets expires_at; expires_at overrides ttl; bad ttl is 400; task_lifetime needs a task", async () => {
    const a = await newAgent();
    const now = clock().now().getTime();
    const d = await write(a.headers, { namespace: "n", key: "ttl1", value: {}, ttl: "duration:PT1H" });
    expect(d.status).toBe(201);
    expect(new Date(d.body.expires_at).getTime()).toBe(now + 3600_000);
    const at = new Date(now + 60_000).toISOString();
    const o = await write(a.headers, { namespace: "n", key: "ttl2", value: {}, ttl: "duration:P1D", expires_at: at });
    expect(new Date(o.body.expires_at).getTime()).toBe(now + 60_000);
    expectError(await write(a.headers, { namespace: "n", key: "ttl3", value: {}, ttl: "soon" }), 400, "VALIDATION_FAILED");
    expectError(await write(a.headers, { namespace: "n", key: "ttl4", value: {}, ttl: "task_lifetime" }), 400, "VALIDATION_FAILED");
  });
});

describe("query (4.8)", () => {
  it("filters by namespace prefix, key, tags ALL/ANY, type, pinned, updated_after/before, pages with total", async () => {
    const a = await newAgent();
    const ns = uniqueTag("q");
    for (const [key, tags, type] of [
      ["a", ["red", "big"], "working"],
      ["b", ["red"], "working"],
      ["c", ["blue"], "working"],
    ] as const) {
      expect((await write(a.headers, { namespace: `${ns}.sub`, key, value: { key }, tags, memory_type: type })).status).toBe(201);
    }
    const all = await query(a.headers, `agent_id=${a.id}&namespace=${ns}.*`);
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body).toMatchObject({ total: 3, limit: 100, offset: 0 });
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}.sub&tags=red,big`)).body.entries.map((e: any) => e.key)).toEqual(["a"]);
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}.sub&tags_any=big,blue`)).body.entries.map((e: any) => e.key).sort()).toEqual(["a", "c"]);
    expect((await query(a.headers, `agent_id=${a.id}&key=b&namespace=${ns}.sub`)).body.total).toBe(1);
    const page = await query(a.headers, `agent_id=${a.id}&namespace=${ns}.*&limit=2&offset=2`);
    expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 2 });
    expect(page.body.entries).toHaveLength(1);
    // Past the end the total is still that of all matches; nothing matched is total 0.
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}.*&limit=2&offset=5`)).body).toEqual({ entries: [], total: 3, limit: 2, offset: 5 });
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}.none`)).body).toEqual({ entries: [], total: 0, limit: 100, offset: 0 });
    const future = new Date(clock().now().getTime() + 1000).toISOString();
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}.*&updated_after=${encodeURIComponent(future)}`)).body.total).toBe(0);
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}.*&updated_before=${encodeURIComponent(future)}`)).body.total).toBe(3);
    expectError(await query(a.headers, `memory_type=working&limit=1001&agent_id=${a.id}`), 400, "VALIDATION_FAILED");
    // The Python client's route: a bare list.
    const raw = await cluster.api(`/agents/${a.id}/memory?namespace=${ns}.sub`, { headers: a.headers, key: null });
    expect(Array.isArray(raw.body)).toBe(true);
    expect(raw.body).toHaveLength(3);
  });

  it("an owner's entries by tag: only that owner's, whichever tags other owners share; quotes, backslashes and braces in tags match exactly", async () => {
    // The tag index keeps no pending list, so a query right after many writes reads no backlog of them.
    const [gin] = rowsOf<{ options: string[] | null }>(await cluster.database.db.execute(sql`select c.reloptions as options from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'memory' and c.relname = 'entries_tags_gin'`));
    expect(gin?.options).toContain("fastupdate=false");
    const [a, b] = [await newAgent(), await newAgent()];
    const ns = uniqueTag("owned");
    const odd = ['say"hi"', "back\\slash", "{brace}", "uni✓"];
    expect((await write(a.headers, { namespace: ns, key: "a1", value: {}, tags: ["shared", ...odd], memory_type: "episodic" })).status).toBe(201);
    expect((await write(a.headers, { namespace: ns, key: "a2", value: {}, tags: ["shared"], memory_type: "episodic" })).status).toBe(201);
    expect((await write(b.headers, { namespace: ns, key: "b1", value: {}, tags: ["shared", ...odd], memory_type: "episodic" })).status).toBe(201);
    const keys = async (agent: { id: string; headers: Record<string, string> }, qs: string) => {
      const res = await query(agent.headers, `agent_id=${agent.id}&${qs}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return { keys: res.body.entries.map((e: any) => e.key).sort(), total: res.body.total };
    };
    expect(await keys(a, "tags=shared")).toEqual({ keys: ["a1", "a2"], total: 2 });
    expect(await keys(b, "tags=shared")).toEqual({ keys: ["b1"], total: 1 });
    for (const tag of odd) expect(await keys(a, `tags=shared,${encodeURIComponent(tag)}`), tag).toEqual({ keys: ["a1"], total: 1 });
    expect(await keys(a, `tags_any=${encodeURIComponent(odd[0]!)},nothing`)).toEqual({ keys: ["a1"], total: 1 });
    expect(await keys(b, `tags=shared&tags_any=${encodeURIComponent(odd[1]!)}`)).toEqual({ keys: ["b1"], total: 1 });
    expect(await keys(a, "tags=shared,absent")).toEqual({ keys: [], total: 0 });
  });

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

  it("a working or episodic query names its agent_id (spec 4.8): 400 naming the parameter, X-Agent-ID does not stand in", async () => {
    const a = await newAgent();
    const ns = uniqueTag("owner");
    await write(a.headers, { namespace: ns, key: "w", value: {} });
    await write(a.headers, { namespace: ns, key: "e", value: {}, memory_type: "episodic" });
    for (const tier of ["working", "episodic"]) {
      const res = await query(a.headers, `memory_type=${tier}&namespace=${ns}`);
      expectError(res, 400, "VALIDATION_FAILED");
      expect(res.body.message).toContain("agent_id");
      expect(res.body.details.issues).toEqual([expect.objectContaining({ path: "query.agent_id" })]);
      expect((await query(a.headers, `memory_type=${tier}&namespace=${ns}&agent_id=${a.id}`)).body.total).toBe(1);
    }
    // An untyped query without agent_id reads semantic entries only; the Python client's route names the agent in its path.
    expect((await query(a.headers, `namespace=${ns}`)).body.total).toBe(0);
    const own = await cluster.api(`/agents/${a.id}/memory?memory_type=working&namespace=${ns}`, { headers: a.headers, key: null });
    expect(own.status).toBe(200);
    expect(own.body.map((e: any) => e.key)).toEqual(["w"]);
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

  it("semantic: memory.read / write / admin from key roles and the namespace permission object", async () => {
    const ns = uniqueTag("kb");
    const a = await newAgent();
    const b = await newAgent("b", "other");
    // an agent has read by default, not write
    expectError(await write(a.headers, { namespace: ns, key: "f", value: {}, memory_type: "semantic" }), 403, "ACCESS_DENIED");
    const curated = await cluster.api("/memory", { body: { namespace: ns, key: "f", value: { fact: 1 }, memory_type: "semantic" }, key: "coordinator" });
    expect(curated.status).toBe(201);
    expect((await read(a.headers, curated.body.id)).status).toBe(200);
    // only memory.admin changes permissions
    expectError(await cluster.api(`/memory/namespaces/${ns}`, { method: "PATCH", body: { permissions: { default: "none", allow: [] } }, key: "coordinator" }), 403, "ACCESS_DENIED");
    const set = await cluster.api(`/memory/namespaces/${ns}`, { method: "PATCH", body: { permissions: { default: "none", allow: [{ agent: a.id, access: "write" }] } }, key: "admin" });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect((await write(a.headers, { namespace: ns, key: "g", value: {}, memory_type: "semantic" })).status).toBe(201);
    expectError(await read(b.headers, curated.body.id), 403, "ACCESS_DENIED");
    expect((await query(b.headers, `namespace=${ns}`)).body.total).toBe(0);
    expect((await query(a.headers, `namespace=${ns}`)).body.total).toBe(2);
    const listed = await cluster.api("/memory/namespaces", { headers: b.headers, key: null });
    expect(listed.body.namespaces.map((n: any) => n.namespace)).not.toContain(ns);
    const details = await cluster.api(`/memory/namespaces/${ns}`, { headers: a.headers, key: null });
    expect(details.body).toMatchObject({ namespace: ns, access: "write", permissions: { default: "none" } });
  });
});

describe("capacity (rules 4, 6)", () => {
  it("episodic evicts lower priority first, then least recently used, never pinned; 429 when only pinned remain", async () => {
    const a = await newAgent();
    const mk = (key: string, extra: Record<string, unknown> = {}) => write(a.headers, { namespace: "cap", key, value: {}, memory_type: "episodic", ...extra });
    const high = await mk("high", { priority: "high" });
    clock().advance(1000);
    const low = await mk("low", { priority: "low" });
    clock().advance(1000);
    const normal = await mk("normal");
    clock().advance(1000);
    expect((await mk("fourth")).status).toBe(201); // capacity 3: low goes
    expectError(await read(a.headers, low.body.id), 404, "ENTRY_NOT_FOUND");
    expect((await mk("fifth")).status).toBe(201); // then normal (older than fourth)
    expectError(await read(a.headers, normal.body.id), 404, "ENTRY_NOT_FOUND");
    expect((await read(a.headers, high.body.id)).status).toBe(200);
    const b = await newAgent();
    for (const key of ["p1", "p2", "p3"]) expect((await write(b.headers, { namespace: "cap", key, value: {}, memory_type: "episodic", pinned: true })).status).toBe(201);
    const refused = await write(b.headers, { namespace: "cap", key: "p4", value: {}, memory_type: "episodic" });
    expectError(refused, 429, "CAPACITY_EXCEEDED");
    expect(refused.body.title).toBe("Memory Capacity Exceeded");
    // memory.evicted for each evicted entry, in eviction order, without the value
    await vi.waitFor(async () => {
      const evicted = (await agentMemoryEvents(a.id)).filter((e) => e.event_type === "memory.evicted");
      expect(evicted.map((e) => e.payload.data.entry_id)).toEqual([low.body.id, normal.body.id]);
      expect(evicted[0].payload.data).toEqual({ entry_id: low.body.id, namespace: "cap", key: "low", memory_type: "episodic", version: 1, previous_version: 1, tags: [] });
    }, { timeout: 5000, interval: 100 });
  });

  it("per-agent capacity overrides the server's (coordinators and admins only)", async () => {
    const a = await newAgent();
    expectError(await cluster.api(`/agents/${a.id}/memory/capacity`, { method: "PUT", body: { episodic_capacity: 1 }, headers: a.headers, key: null }), 403, "ACCESS_DENIED");
    const set = await cluster.api(`/agents/${a.id}/memory/capacity`, { method: "PUT", body: { episodic_capacity: 1 }, key: "coordinator" });
    expect(set.body).toEqual({ agent_id: a.id, episodic_capacity: 1 });
    const first = await write(a.headers, { namespace: "c", key: "1", value: {}, memory_type: "episodic" });
    expect((await write(a.headers, { namespace: "c", key: "2", value: {}, memory_type: "episodic" })).status).toBe(201);
    expectError(await read(a.headers, first.body.id), 404, "ENTRY_NOT_FOUND");
  });

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
  it("expired entries are swept on the server clock with memory.expired", async () => {
    const a = await newAgent();
    const e = await write(a.headers, { namespace: "exp", key: "soon", value: {}, ttl: "duration:PT10M" });
    await cluster.memory.sweeper.sweep();
    expect((await read(a.headers, e.body.id)).status).toBe(200);
    clock().advance(11 * 60_000);
    expect(await cluster.memory.sweeper.sweep()).toBeGreaterThanOrEqual(1);
    expectError(await read(a.headers, e.body.id), 404, "ENTRY_NOT_FOUND");
    await vi.waitFor(async () => expect((await agentMemoryEvents(a.id)).map((ev) => ev.event_type)).toEqual(["memory.created", "memory.expired"]), { timeout: 5000 });
  });

  it("two sweeps at once expire each entry once (SKIP LOCKED)", async () => {
    const a = await newAgent();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await write(a.headers, { namespace: "race", key: `k${i}`, value: {}, ttl: "duration:PT1M" })).body.id);
    clock().advance(2 * 60_000);
    const [x, y] = await Promise.all([cluster.memory.sweeper.sweep(), cluster.memory.sweeper.sweep()]);
    expect(x + y).toBeGreaterThanOrEqual(30);
    await vi.waitFor(async () => {
      const expired = (await agentMemoryEvents(a.id)).filter((ev) => ev.event_type === "memory.expired").map((ev) => ev.payload.data.entry_id);
      expect(expired.sort()).toEqual([...ids].sort());
    }, { timeout: 5000 });
  });

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
  it("POST /memory/batch is all or none; DELETE /memory/batch deletes by filter", async () => {
    const a = await newAgent();
    const ns = uniqueTag("batch");
    const ok = await cluster.api("/memory/batch", { body: { entries: [{ namespace: ns, key: "1", value: {} }, { namespace: ns, key: "2", value: {}, tags: ["d"] }] }, headers: a.headers, key: null });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.entries).toHaveLength(2);
    const bad = await cluster.api("/memory/batch", {
      body: { entries: [{ namespace: ns, key: "3", value: {} }, { id: ok.body.entries[0].id, if_match: 7, value: { x: 1 } }] },
      headers: a.headers,
      key: null,
    });
    expectError(bad, 409, "VERSION_MISMATCH");
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}`)).body.total).toBe(2);
    const upd = await cluster.api("/memory/batch", { body: { entries: [{ id: ok.body.entries[0].id, if_match: 1, value: { x: 1 } }] }, headers: a.headers, key: null });
    expect(upd.body.entries[0].version).toBe(2);
    const del = await cluster.api("/memory/batch", { method: "DELETE", body: { namespace: ns, tags: ["d"] }, headers: a.headers, key: null });
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect(del.body).toMatchObject({ deleted: 1, has_more: false });
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}`)).body.total).toBe(1);
  });

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

describe("the MCP server's routes (CLIENTS.md)", () => {
  it("PUT creates by namespace and key, GET reads it, a second PUT needs If-Match, GET /agents/{id}/memory/{ns} lists", async () => {
    const a = await newAgent();
    const path = `/agents/${a.id}/memory/mcp.ns/k1`;
    const created = await cluster.api(path, { method: "PUT", body: { value: { v: 1 }, ttl_seconds: 60 }, headers: a.headers, key: null });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ agent_id: a.id, namespace: "mcp.ns", key: "k1", version: 1, ttl: "duration:PT60S", memory_type: "working" });
    expect((await cluster.api(path, { headers: a.headers, key: null })).body.value).toEqual({ v: 1 });
    expectError(await cluster.api(path, { method: "PUT", body: { value: { v: 2 } }, headers: a.headers, key: null }), 428, "PRECONDITION_REQUIRED");
    const updated = await cluster.api(path, { method: "PUT", body: { value: { v: 2 } }, headers: { ...a.headers, "If-Match": "1" }, key: null });
    expect(updated.body).toMatchObject({ version: 2, value: { v: 2 } });
    const listed = await cluster.api(`/agents/${a.id}/memory/mcp.ns`, { headers: a.headers, key: null });
    expect(listed.body.map((e: any) => e.key)).toEqual(["k1"]);
    expectError(await cluster.api(`/agents/${a.id}/memory/mcp.ns/absent`, { headers: a.headers, key: null }), 404, "ENTRY_NOT_FOUND");
    expectError(await cluster.api(path, { headers: (await newAgent("x", "other")).headers, key: null }), 403, "ACCESS_DENIED");
    // Writing another agent's working memory by key is refused like the same write by id (403, not a 500).
    const intruder = await newAgent("x", "other");
    expectError(await cluster.api(path, { method: "PUT", body: { value: { v: 3 } }, headers: { ...intruder.headers, "If-Match": "2" }, key: null }), 403, "ACCESS_DENIED");
    expect((await cluster.api(path, { headers: a.headers, key: null })).body.value).toEqual({ v: 2 });
    expect((await cluster.api(`/agents/${a.id}/memory/summary`, { headers: a.headers, key: null })).body.agent_id).toBe(a.id);
  });
});
