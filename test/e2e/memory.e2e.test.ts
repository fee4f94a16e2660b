import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DeliverPolicy } from "@nats-io/jetstream";
import { memoryStream, systemEventStream, type ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { createIntent, expectError, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";
import { agentHeaders } from "../support/agents";

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
    const future = new Date(clock().now().getTime() + 1000).toISOString();
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}.*&updated_after=${encodeURIComponent(future)}`)).body.total).toBe(0);
    expect((await query(a.headers, `agent_id=${a.id}&namespace=${ns}.*&updated_before=${encodeURIComponent(future)}`)).body.total).toBe(3);
    expectError(await query(a.headers, `memory_type=working&limit=1001&agent_id=${a.id}`), 400, "VALIDATION_FAILED");
    // The Python client's route: a bare list.
    const raw = await cluster.api(`/agents/${a.id}/memory?namespace=${ns}.sub`, { headers: a.headers, key: null });
    expect(Array.isArray(raw.body)).toBe(true);
    expect(raw.body).toHaveLength(3);
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
    expectError(await query(b.headers, "memory_type=episodic"), 400, "VALIDATION_FAILED");
  });
});
