import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DeliverPolicy } from "@nats-io/jetstream";
import { sql } from "drizzle-orm";
import { memoryStream, type AgentMemoryEvent } from "@intentmesh/contracts";
import { rowsOf } from "@intentmesh/db";
import { expectApiError as expectError, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { OperationRequest } from "../../../test/support/typed-api";
import { UNKNOWN_ID, uniqueTag } from "../../../test/support/e2e-helpers";
import type { MemoryService } from "../src/service";

/**
 * The memory service's own rules (spec 4.8, 2.14): entries, queries, semantic namespaces,
 * episodic capacity, expiry and the MCP server's routes, through the typed client of the route
 * catalogue. No intents, tasks or channels run: rules that need them stay in
 * test/e2e/memory.e2e.test.ts. The registry runs beside memory only because the gateway asks it
 * whom an X-Agent-ID is bound to (an agent acts under its own id).
 */
let harness: ServiceHarness<{ memory: MemoryService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({ registry: { sweepIntervalMs: 3_600_000 }, memory: { sweepIntervalMs: 3_600_000, episodicCapacity: 3 } }),
  );
});
afterAll(async () => {
  await harness?.stop();
});

type KeyName = "agent" | "other";
interface Agent {
  id: string;
  /** What a request acting as this agent carries: its key and X-Agent-ID. */
  as: Pick<OperationRequest, "key" | "headers">;
}

/** A registered agent of `key` (principal agent-1 for "agent", agent-2 for "other"). */
async function newAgent(prefix = "mem", key: KeyName = "agent"): Promise<Agent> {
  const id = uniqueTag(prefix);
  expect((await harness.api("agentsRegister", { key, body: { agent_id: id } })).status).toBe(201);
  return { id, as: { key, headers: { "X-Agent-ID": id } } };
}

const write = (agent: Agent, body: Record<string, unknown>) => harness.api("memoryCreate", { ...agent.as, body });
const read = (agent: Agent, entryId: string) => harness.api("memoryGet", { ...agent.as, params: { entry_id: entryId } });
const query = (agent: Agent, q: Record<string, string | number>) => harness.api("memoryQuery", { ...agent.as, query: q });

/** The agent-stream memory events (no task or intent context) of one agent, oldest first. */
async function agentMemoryEvents(agentId: string): Promise<AgentMemoryEvent[]> {
  const stream = harness.bus.streamName(memoryStream.name);
  const consumer = await harness.bus.js.consumers.get(stream, { filter_subjects: harness.bus.subject(`im.evt.memory.${agentId}.>`), deliver_policy: DeliverPolicy.All });
  const out: AgentMemoryEvent[] = [];
  const batch = await consumer.fetch({ max_messages: 500, expires: 1000 });
  for await (const msg of batch) {
    out.push(msg.json<AgentMemoryEvent>());
    if (msg.info.pending === 0) break;
  }
  return out;
}

describe("entries: create, read, update, delete (4.8, 2.14)", () => {
  it("creates an entry with the 2.14 fields, reads it, and deletes it", async () => {
    const a = await newAgent();
    const res = await write(a, { namespace: "notes.daily", key: "k1", value: { text: "hello" }, memory_type: "episodic", tags: ["x", "y"], priority: "high", pinned: true });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toMatch(/^"?1"?$/);
    const entry = res.ok();
    expect(entry).toMatchObject({ agent_id: a.id, namespace: "notes.daily", key: "k1", value: { text: "hello" }, memory_type: "episodic", tags: ["x", "y"], version: 1, pinned: true, priority: "high", ttl: null, expires_at: null, scope: null });
    expect(Object.keys(entry).sort()).toEqual(
      ["id", "agent_id", "namespace", "key", "value", "memory_type", "scope", "tags", "ttl", "version", "created_at", "updated_at", "expires_at", "pinned", "priority", "curated_by", "sensitivity"].sort(),
    );
    expect((await read(a, entry.id)).ok().value).toEqual({ text: "hello" });
    const del = await harness.api("memoryDelete", { ...a.as, params: { entry_id: entry.id } });
    expect(del.status).toBe(200);
    expect(del.ok()).toEqual({ status: "deleted", entry_id: entry.id });
    expectError(await read(a, entry.id), 404, "ENTRY_NOT_FOUND");
  });

  it("a second create of the same (agent_id, namespace, key) is 409 ENTRY_EXISTS; semantic keys are unique per namespace", async () => {
    const a = await newAgent();
    const first = (await write(a, { namespace: "n", key: "same", value: {} })).ok();
    const again = expectError(await write(a, { namespace: "n", key: "same", value: { v: 2 }, memory_type: "episodic" }), 409, "ENTRY_EXISTS");
    expect(again.entry_id).toBe(first.id);
    const ns = uniqueTag("sem");
    expect((await harness.api("memoryCreate", { key: "coordinator", body: { namespace: ns, key: "fact", value: {}, memory_type: "semantic" } })).status).toBe(201);
    expectError(await harness.api("memoryCreate", { key: "admin", body: { namespace: ns, key: "fact", value: {}, memory_type: "semantic" } }), 409, "ENTRY_EXISTS");
  });

  it("PATCH needs If-Match (428), a stale version is 409 VERSION_MISMATCH with the current entry, a good one increments the version", async () => {
    const a = await newAgent();
    const entry = (await write(a, { namespace: "n", key: "p", value: { v: 1 }, tags: ["a"] })).ok();
    const patch = (ifMatch: string | null, body: Record<string, unknown>, entryId = entry.id) =>
      harness.api("memoryPatch", { key: a.as.key, params: { entry_id: entryId }, body, headers: { ...a.as.headers, ...(ifMatch === null ? {} : { "If-Match": ifMatch }) } });
    expectError(await patch(null, { value: { v: 2 } }), 428, "PRECONDITION_REQUIRED");
    expect((await patch("1", { value: { v: 2 }, tags: ["b"] })).ok()).toMatchObject({ version: 2, value: { v: 2 }, tags: ["b"] });
    const stale = expectError(await patch("1", { value: { v: 3 } }), 409, "VERSION_MISMATCH");
    expect(stale).toMatchObject({ id: entry.id, version: 2, value: { v: 2 }, tags: ["b"], current_version: 2 });
    expectError(await patch("1", { value: {} }, UNKNOWN_ID), 404, "ENTRY_NOT_FOUND");
  });

  it("refuses a value over 64 KB with 413 pointing to attachments", async () => {
    const a = await newAgent();
    const refused = expectError(await write(a, { namespace: "n", key: "big", value: { blob: "x".repeat(70 * 1024) } }), 413, "VALUE_TOO_LARGE");
    expect(refused.message).toMatch(/attachment/);
  });

  it("pinned and priority are for episodic memory only", async () => {
    const a = await newAgent();
    expectError(await write(a, { namespace: "n", key: "w", value: {}, pinned: true }), 400, "FIELD_NOT_ALLOWED");
    expectError(await write(a, { namespace: "n", key: "w", value: {}, memory_type: "semantic", priority: "low" }), 400, "FIELD_NOT_ALLOWED");
  });

  it("ttl duration sets expires_at; expires_at overrides ttl; bad ttl is 400; task_lifetime needs a task", async () => {
    const a = await newAgent();
    const now = harness.clock.now().getTime();
    const d = (await write(a, { namespace: "n", key: "ttl1", value: {}, ttl: "duration:PT1H" })).ok();
    expect(new Date(d.expires_at!).getTime()).toBe(now + 3600_000);
    const at = new Date(now + 60_000).toISOString();
    const o = (await write(a, { namespace: "n", key: "ttl2", value: {}, ttl: "duration:P1D", expires_at: at })).ok();
    expect(new Date(o.expires_at!).getTime()).toBe(now + 60_000);
    expectError(await write(a, { namespace: "n", key: "ttl3", value: {}, ttl: "soon" }), 400, "VALIDATION_FAILED");
    expectError(await write(a, { namespace: "n", key: "ttl4", value: {}, ttl: "task_lifetime" }), 400, "VALIDATION_FAILED");
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
      expect((await write(a, { namespace: `${ns}.sub`, key, value: { key }, tags, memory_type: type })).status).toBe(201);
    }
    const keysOf = async (q: Record<string, string | number>) => (await query(a, q)).ok().entries.map((e) => e.key);
    expect((await query(a, { agent_id: a.id, namespace: `${ns}.*` })).ok()).toMatchObject({ total: 3, limit: 100, offset: 0 });
    expect(await keysOf({ agent_id: a.id, namespace: `${ns}.sub`, tags: "red,big" })).toEqual(["a"]);
    expect((await keysOf({ agent_id: a.id, namespace: `${ns}.sub`, tags_any: "big,blue" })).sort()).toEqual(["a", "c"]);
    expect((await query(a, { agent_id: a.id, key: "b", namespace: `${ns}.sub` })).ok().total).toBe(1);
    const page = (await query(a, { agent_id: a.id, namespace: `${ns}.*`, limit: 2, offset: 2 })).ok();
    expect(page).toMatchObject({ total: 3, limit: 2, offset: 2 });
    expect(page.entries).toHaveLength(1);
    // Past the end the total is still that of all matches; nothing matched is total 0.
    expect((await query(a, { agent_id: a.id, namespace: `${ns}.*`, limit: 2, offset: 5 })).ok()).toEqual({ entries: [], total: 3, limit: 2, offset: 5 });
    expect((await query(a, { agent_id: a.id, namespace: `${ns}.none` })).ok()).toEqual({ entries: [], total: 0, limit: 100, offset: 0 });
    const future = new Date(harness.clock.now().getTime() + 1000).toISOString();
    expect((await query(a, { agent_id: a.id, namespace: `${ns}.*`, updated_after: future })).ok().total).toBe(0);
    expect((await query(a, { agent_id: a.id, namespace: `${ns}.*`, updated_before: future })).ok().total).toBe(3);
    expectError(await query(a, { memory_type: "working", limit: 1001, agent_id: a.id }), 400, "VALIDATION_FAILED");
    // The Python client's route: a bare list.
    const raw = (await harness.api("memoryListAgent", { ...a.as, params: { agent_id: a.id }, query: { namespace: `${ns}.sub` } })).ok();
    expect(Array.isArray(raw)).toBe(true);
    expect(raw).toHaveLength(3);
  });

  it("an owner's entries by tag: only that owner's, whichever tags other owners share; quotes, backslashes and braces in tags match exactly", async () => {
    // The tag index keeps no pending list, so a query right after many writes reads no backlog of them.
    const [gin] = rowsOf<{ options: string[] | null }>(
      await harness.database.db.execute(sql`select c.reloptions as options from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'memory' and c.relname = 'entries_tags_gin'`),
    );
    expect(gin?.options).toContain("fastupdate=false");
    const [a, b] = [await newAgent(), await newAgent()];
    const ns = uniqueTag("owned");
    const odd = ['say"hi"', "back\\slash", "{brace}", "uni✓"];
    expect((await write(a, { namespace: ns, key: "a1", value: {}, tags: ["shared", ...odd], memory_type: "episodic" })).status).toBe(201);
    expect((await write(a, { namespace: ns, key: "a2", value: {}, tags: ["shared"], memory_type: "episodic" })).status).toBe(201);
    expect((await write(b, { namespace: ns, key: "b1", value: {}, tags: ["shared", ...odd], memory_type: "episodic" })).status).toBe(201);
    const keys = async (agent: Agent, q: Record<string, string>) => {
      const page = (await query(agent, { agent_id: agent.id, ...q })).ok();
      return { keys: page.entries.map((e) => e.key).sort(), total: page.total };
    };
    expect(await keys(a, { tags: "shared" })).toEqual({ keys: ["a1", "a2"], total: 2 });
    expect(await keys(b, { tags: "shared" })).toEqual({ keys: ["b1"], total: 1 });
    for (const tag of odd) expect(await keys(a, { tags: `shared,${tag}` }), tag).toEqual({ keys: ["a1"], total: 1 });
    expect(await keys(a, { tags_any: `${odd[0]!},nothing` })).toEqual({ keys: ["a1"], total: 1 });
    expect(await keys(b, { tags: "shared", tags_any: odd[1]! })).toEqual({ keys: ["b1"], total: 1 });
    expect(await keys(a, { tags: "shared,absent" })).toEqual({ keys: [], total: 0 });
  });

  it("a working or episodic query names its agent_id (spec 4.8): 400 naming the parameter, X-Agent-ID does not stand in", async () => {
    const a = await newAgent();
    const ns = uniqueTag("owner");
    await write(a, { namespace: ns, key: "w", value: {} });
    await write(a, { namespace: ns, key: "e", value: {}, memory_type: "episodic" });
    for (const tier of ["working", "episodic"]) {
      const refused = expectError(await query(a, { memory_type: tier, namespace: ns }), 400, "VALIDATION_FAILED");
      expect(refused.message).toContain("agent_id");
      expect(refused.details.issues).toEqual([expect.objectContaining({ path: "query.agent_id" })]);
      expect((await query(a, { memory_type: tier, namespace: ns, agent_id: a.id })).ok().total).toBe(1);
    }
    // An untyped query without agent_id reads semantic entries only; the Python client's route names the agent in its path.
    expect((await query(a, { namespace: ns })).ok().total).toBe(0);
    const own = (await harness.api("memoryListAgent", { ...a.as, params: { agent_id: a.id }, query: { memory_type: "working", namespace: ns } })).ok();
    expect(own.map((e) => e.key)).toEqual(["w"]);
  });
});

describe("access (rules 2-5)", () => {
  it("semantic: memory.read / write / admin from key roles and the namespace permission object", async () => {
    const ns = uniqueTag("kb");
    const a = await newAgent();
    const b = await newAgent("b", "other");
    // an agent has read by default, not write
    expectError(await write(a, { namespace: ns, key: "f", value: {}, memory_type: "semantic" }), 403, "ACCESS_DENIED");
    const curated = (await harness.api("memoryCreate", { key: "coordinator", body: { namespace: ns, key: "f", value: { fact: 1 }, memory_type: "semantic" } })).ok();
    expect((await read(a, curated.id)).status).toBe(200);
    // only memory.admin changes permissions
    const permissions = (allow: { agent: string; access: string }[]) => ({ permissions: { default: "none", allow } });
    expectError(await harness.api("memoryPatchNamespace", { key: "coordinator", params: { namespace: ns }, body: permissions([]) }), 403, "ACCESS_DENIED");
    expect((await harness.api("memoryPatchNamespace", { key: "admin", params: { namespace: ns }, body: permissions([{ agent: a.id, access: "write" }]) })).status).toBe(200);
    expect((await write(a, { namespace: ns, key: "g", value: {}, memory_type: "semantic" })).status).toBe(201);
    expectError(await read(b, curated.id), 403, "ACCESS_DENIED");
    expect((await query(b, { namespace: ns })).ok().total).toBe(0);
    expect((await query(a, { namespace: ns })).ok().total).toBe(2);
    const listed = (await harness.api("memoryNamespaces", { ...b.as })).ok();
    expect(listed.namespaces.map((n) => n.namespace)).not.toContain(ns);
    const details = (await harness.api("memoryGetNamespace", { ...a.as, params: { namespace: ns } })).ok();
    expect(details).toMatchObject({ namespace: ns, access: "write", permissions: { default: "none" } });
  });
});

describe("capacity (rules 4, 6)", () => {
  it("episodic evicts lower priority first, then least recently used, never pinned; 429 when only pinned remain", async () => {
    const a = await newAgent();
    const mk = (key: string, extra: Record<string, unknown> = {}) => write(a, { namespace: "cap", key, value: {}, memory_type: "episodic", ...extra });
    const high = (await mk("high", { priority: "high" })).ok();
    harness.clock.advance(1000);
    const low = (await mk("low", { priority: "low" })).ok();
    harness.clock.advance(1000);
    const normal = (await mk("normal")).ok();
    harness.clock.advance(1000);
    expect((await mk("fourth")).status).toBe(201); // capacity 3: low goes
    expectError(await read(a, low.id), 404, "ENTRY_NOT_FOUND");
    expect((await mk("fifth")).status).toBe(201); // then normal (older than fourth)
    expectError(await read(a, normal.id), 404, "ENTRY_NOT_FOUND");
    expect((await read(a, high.id)).status).toBe(200);
    const b = await newAgent();
    for (const key of ["p1", "p2", "p3"]) expect((await write(b, { namespace: "cap", key, value: {}, memory_type: "episodic", pinned: true })).status).toBe(201);
    const refused = expectError(await write(b, { namespace: "cap", key: "p4", value: {}, memory_type: "episodic" }), 429, "CAPACITY_EXCEEDED");
    expect(refused.title).toBe("Memory Capacity Exceeded");
    // memory.evicted for each evicted entry, in eviction order, without the value
    await vi.waitFor(async () => {
      const evicted = (await agentMemoryEvents(a.id)).filter((e) => e.event_type === "memory.evicted");
      expect(evicted.map((e) => e.payload.data.entry_id)).toEqual([low.id, normal.id]);
      expect(evicted[0]!.payload.data).toEqual({ entry_id: low.id, namespace: "cap", key: "low", memory_type: "episodic", version: 1, previous_version: 1, tags: [] });
    }, { timeout: 5000, interval: 100 });
  });

  it("per-agent capacity overrides the server's (coordinators and admins only)", async () => {
    const a = await newAgent();
    expectError(await harness.api("memorySetCapacity", { ...a.as, params: { agent_id: a.id }, body: { episodic_capacity: 1 } }), 403, "ACCESS_DENIED");
    expect((await harness.api("memorySetCapacity", { key: "coordinator", params: { agent_id: a.id }, body: { episodic_capacity: 1 } })).ok()).toEqual({ agent_id: a.id, episodic_capacity: 1 });
    const first = (await write(a, { namespace: "c", key: "1", value: {}, memory_type: "episodic" })).ok();
    expect((await write(a, { namespace: "c", key: "2", value: {}, memory_type: "episodic" })).status).toBe(201);
    expectError(await read(a, first.id), 404, "ENTRY_NOT_FOUND");
  });
});

describe("lifecycle (3.7, rule 7)", () => {
  it("expired entries are swept on the server clock with memory.expired", async () => {
    const a = await newAgent();
    const entry = (await write(a, { namespace: "exp", key: "soon", value: {}, ttl: "duration:PT10M" })).ok();
    await harness.service.memory.sweeper.sweep();
    expect((await read(a, entry.id)).status).toBe(200);
    harness.clock.advance(11 * 60_000);
    expect(await harness.service.memory.sweeper.sweep()).toBeGreaterThanOrEqual(1);
    expectError(await read(a, entry.id), 404, "ENTRY_NOT_FOUND");
    await vi.waitFor(async () => expect((await agentMemoryEvents(a.id)).map((ev) => ev.event_type)).toEqual(["memory.created", "memory.expired"]), { timeout: 5000 });
  });

  it("two sweeps at once expire each entry once (SKIP LOCKED)", async () => {
    const a = await newAgent();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await write(a, { namespace: "race", key: `k${i}`, value: {}, ttl: "duration:PT1M" })).ok().id);
    harness.clock.advance(2 * 60_000);
    const [x, y] = await Promise.all([harness.service.memory.sweeper.sweep(), harness.service.memory.sweeper.sweep()]);
    expect(x + y).toBeGreaterThanOrEqual(30);
    await vi.waitFor(async () => {
      const expired = (await agentMemoryEvents(a.id)).filter((ev) => ev.event_type === "memory.expired").map((ev) => String(ev.payload.data.entry_id));
      expect(expired.sort()).toEqual([...ids].sort());
    }, { timeout: 5000 });
  });
});

describe("batch", () => {
  it("POST /memory/batch is all or none; DELETE /memory/batch deletes by filter", async () => {
    const a = await newAgent();
    const ns = uniqueTag("batch");
    const ok = (await harness.api("memoryBatch", { ...a.as, body: { entries: [{ namespace: ns, key: "1", value: {} }, { namespace: ns, key: "2", value: {}, tags: ["d"] }] } })).ok();
    expect(ok.entries).toHaveLength(2);
    const first = ok.entries[0]!;
    expectError(await harness.api("memoryBatch", { ...a.as, body: { entries: [{ namespace: ns, key: "3", value: {} }, { id: first.id, if_match: 7, value: { x: 1 } }] } }), 409, "VERSION_MISMATCH");
    expect((await query(a, { agent_id: a.id, namespace: ns })).ok().total).toBe(2);
    const updated = (await harness.api("memoryBatch", { ...a.as, body: { entries: [{ id: first.id, if_match: 1, value: { x: 1 } }] } })).ok();
    expect(updated.entries[0]!.version).toBe(2);
    expect((await harness.api("memoryDeleteBatch", { ...a.as, body: { namespace: ns, tags: ["d"] } })).ok()).toMatchObject({ deleted: 1, has_more: false });
    expect((await query(a, { agent_id: a.id, namespace: ns })).ok().total).toBe(1);
  });
});

describe("the MCP server's routes (CLIENTS.md)", () => {
  it("PUT creates by namespace and key, GET reads it, a second PUT needs If-Match, GET /agents/{id}/memory/{ns} lists", async () => {
    const a = await newAgent();
    const params = { agent_id: a.id, namespace: "mcp.ns", key: "k1" };
    const put = (agent: Agent, body: Record<string, unknown>, ifMatch?: string) =>
      harness.api("memoryPut", { key: agent.as.key, headers: { ...agent.as.headers, ...(ifMatch ? { "If-Match": ifMatch } : {}) }, params, body });
    const lookup = (agent: Agent) => harness.api("memoryLookup", { ...agent.as, params });
    const created = await put(a, { value: { v: 1 }, ttl_seconds: 60 });
    expect(created.status).toBe(200);
    expect(created.ok()).toMatchObject({ agent_id: a.id, namespace: "mcp.ns", key: "k1", version: 1, ttl: "duration:PT60S", memory_type: "working" });
    expect((await lookup(a)).ok().value).toEqual({ v: 1 });
    expectError(await put(a, { value: { v: 2 } }), 428, "PRECONDITION_REQUIRED");
    expect((await put(a, { value: { v: 2 } }, "1")).ok()).toMatchObject({ version: 2, value: { v: 2 } });
    const listed = (await harness.api("memoryListAgentNamespace", { ...a.as, params: { agent_id: a.id, namespace: "mcp.ns" } })).ok();
    expect(listed.map((e) => e.key)).toEqual(["k1"]);
    expectError(await harness.api("memoryLookup", { ...a.as, params: { ...params, key: "absent" } }), 404, "ENTRY_NOT_FOUND");
    expectError(await lookup(await newAgent("x", "other")), 403, "ACCESS_DENIED");
    // Writing another agent's working memory by key is refused like the same write by id (403, not a 500).
    expectError(await put(await newAgent("x", "other"), { value: { v: 3 } }, "2"), 403, "ACCESS_DENIED");
    expect((await lookup(a)).ok().value).toEqual({ v: 2 });
    expect((await harness.api("memorySummary", { ...a.as, params: { agent_id: a.id } })).ok().agent_id).toBe(a.id);
  });
});
