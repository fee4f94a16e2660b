import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { createTestDatabase } from "../../../test/support/backends";
import { migrationsUpTo } from "../../../test/support/migrations";
import { MIGRATIONS_FOLDER } from "../src/service";
import { MIGRATIONS_FOLDER as REGISTRY_MIGRATIONS } from "../../registry/src/service";

/**
 * Intents migration 0003 (and registry 0001) rename the events a version-1 server wrote: their column and their frozen
 * wire text, in the log, the portfolio log and unpublished outbox rows.
 */
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let handle: DatabaseHandle;
let before: string;
let registryBefore: string;

/** A service's migrations folder as it was up to entry `lastIdx` of its journal. */

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  handle = await openDatabase({ url: testDb.url, poolSize: 2 });
  before = migrationsUpTo(MIGRATIONS_FOLDER, 2);
  registryBefore = migrationsUpTo(REGISTRY_MIGRATIONS, 0);
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
  fs.rmSync(before, { recursive: true, force: true });
  fs.rmSync(registryBefore, { recursive: true, force: true });
});

const intentId = "11111111-1111-4111-8111-111111111111";
const wire = (id: string, sequence: number, type: string, payload: object) =>
  JSON.stringify({ id, intent_id: intentId, sequence, event_type: type, actor: "a", payload, created_at: "2026-01-01T00:00:00.000+00:00" });

describe("migration 0003 (issue 10 event names)", () => {
  it("renames stored events in their column and wire text, leaving client events alone", async () => {
    await handle.migrate("intents", before);
    const rows: [string, string, object][] = [
      ["00000000-0000-4000-8000-000000000001", "intent.created", { title: "t" }],
      ["00000000-0000-4000-8000-000000000002", "lease.renewed", { lease_id: "l", scope: "s" }],
      ["00000000-0000-4000-8000-000000000003", "lease.released", { lease_id: "l", scope: "s" }],
      ["00000000-0000-4000-8000-000000000004", "lease.expired", { lease_id: "l", scope: "s", reason: "agent_dead" }],
      ["00000000-0000-4000-8000-000000000005", "note.x", { event_type: "intent.created" }],
    ];
    for (const [i, [id, type, payload]] of rows.entries()) {
      await handle.db.execute(sql`insert into intents.events (id, intent_id, sequence, event_type, actor, payload, created_at, wire)
        values (${id}, ${intentId}, ${i + 1}, ${type}, 'a', ${JSON.stringify(payload)}::jsonb, now(), ${wire(id, i + 1, type, payload)})`);
    }
    await handle.db.execute(sql`insert into intents.outbox (subject, msg_id, payload) values
      (${`im.evt.intent.${intentId}.lease.expired`}, 'm1', ${wire(rows[3]![0], 4, "lease.expired", rows[3]![2])})`);

    await handle.migrate("intents", MIGRATIONS_FOLDER);

    const stored = rowsOf<{ event_type: string; payload: Record<string, unknown>; wire: string }>(
      await handle.db.execute(sql`select event_type, payload, wire from intents.events order by sequence`),
    );
    expect(stored.map((r) => r.event_type)).toEqual(["intent_created", "lease_acquired", "lease_released", "lease_released", "note.x"]);
    for (const row of stored) {
      const parsed = JSON.parse(row.wire);
      expect(parsed.event_type).toBe(row.event_type);
      expect(parsed.payload).toEqual(row.payload);
    }
    expect(stored[1]!.payload).toMatchObject({ renewal: true });
    expect(stored[2]!.payload).toMatchObject({ reason: "released" });
    expect(stored[3]!.payload).toMatchObject({ reason: "agent_dead" });
    // A client's event that merely mentions an old name in its payload is untouched.
    expect(JSON.parse(stored[4]!.wire).payload).toEqual({ event_type: "intent.created" });

    const [outbox] = rowsOf<{ subject: string; payload: string }>(await handle.db.execute(sql`select subject, payload from intents.outbox`));
    expect(outbox!.subject).toBe(`im.evt.intent.${intentId}.lease_released`);
    expect(JSON.parse(outbox!.payload).event_type).toBe("lease_released");
  });
});

describe("registry migration 0001 (issue 10 event names)", () => {
  it("renames projected assignments on agents' logs", async () => {
    await handle.migrate("registry", registryBefore);
    const id = "00000000-0000-4000-8000-0000000000a1";
    const event = { id, agent_id: "w.1", sequence: 1, event_type: "agent.assigned", actor: "a", payload: { intent_id: intentId }, created_at: "2026-01-01T00:00:00.000+00:00" };
    await handle.db.execute(sql`insert into registry.agent_events (agent_id, sequence, id, event_type, actor, created_at, wire)
      values ('w.1', 1, ${id}, 'agent.assigned', 'a', now(), ${JSON.stringify(event)})`);
    await handle.migrate("registry", REGISTRY_MIGRATIONS);
    const [row] = rowsOf<{ event_type: string; wire: string }>(await handle.db.execute(sql`select event_type, wire from registry.agent_events`));
    expect(row!.event_type).toBe("agent_assigned");
    expect(JSON.parse(row!.wire)).toEqual({ ...event, event_type: "agent_assigned" });
  });
});
