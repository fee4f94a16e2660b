import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { uniqueTag } from "../../../test/support/e2e-helpers";
import { entries } from "../src/db/schema";
import { lockEntry, selectEntry, touchEntry, updateEntryStatement } from "../src/db/entry-sql";
import type { MemoryService } from "../src/service";

/**
 * An entry's reads by id are SQL text made once (db/entry-sql.ts): the rows they read are held to
 * the query builder's, for each tier and with every optional field set or null.
 */
let harness: ServiceHarness<{ memory: MemoryService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(manifestServices({ registry: { sweepIntervalMs: 3_600_000 }, memory: { sweepIntervalMs: 3_600_000 } }));
});
afterAll(async () => {
  await harness?.stop();
});

describe("entry reads as text statements", () => {
  it("read, lock, touch and update an entry as the query builder reads and writes it", async () => {
    const agentId = uniqueTag("sql");
    expect((await harness.api("agentsRegister", { key: "agent", body: { agent_id: agentId } })).status).toBe(201);
    const as = { key: "agent" as const, headers: { "X-Agent-ID": agentId } };
    const bodies = [
      { namespace: "n.a", key: "w", value: { a: [1, "x"], b: null }, tags: ["t1", "t\"2", "t{3}"] },
      { namespace: "n.b", key: "e", value: { text: "x" }, memory_type: "episodic", pinned: true, priority: "high", ttl: "duration:P1D", sensitivity: "internal" },
      { namespace: "n.c", key: "s", value: { n: 42 }, memory_type: "semantic", curated_by: agentId },
    ];
    const { db } = harness.database;
    for (const body of bodies) {
      // Semantic memory is written by the admin key (namespace permissions).
      const created = await harness.api("memoryCreate", body.memory_type === "semantic" ? { key: "admin", body } : { ...as, body });
      const id = created.ok().id; // throws with the error body when not created
      const [built] = await db.select().from(entries).where(eq(entries.id, id));
      expect(await selectEntry(db, id)).toEqual(built);
      expect(await db.transaction((tx) => lockEntry(tx, id))).toEqual(built);
      const at = new Date(built!.lastUsedAt.getTime() + 1234);
      await touchEntry(db, id, at);
      const [touched] = await db.select().from(entries).where(eq(entries.id, id));
      expect(touched).toEqual({ ...built, lastUsedAt: at });
      // A PATCH's conditional UPDATE: the row it returns is the one the builder reads back.
      const changes = { value: { patched: ["y", null] }, valueBytes: 99, tags: ["u\"1", "u{2}"], sensitivity: null, updatedAt: at, lastUsedAt: at, ttl: undefined };
      expect(await db.transaction((tx) => updateEntryStatement(tx, id, built!.version + 1, changes))).toBeUndefined();
      const updated = await db.transaction((tx) => updateEntryStatement(tx, id, built!.version, changes));
      const [reread] = await db.select().from(entries).where(eq(entries.id, id));
      expect(updated).toEqual(reread);
      expect(updated).toEqual({ ...touched, value: changes.value, valueBytes: 99, tags: changes.tags, sensitivity: null, updatedAt: at, lastUsedAt: at, version: built!.version + 1 });
    }
    expect(await selectEntry(db, "00000000-0000-4000-8000-000000000000")).toBeUndefined();
    expect(await db.transaction((tx) => lockEntry(tx, "00000000-0000-4000-8000-000000000000"))).toBeUndefined();
  });
});
