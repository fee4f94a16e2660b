import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { agentEventMsgId, agentSubjectToken, intentEventMsgId, portfolioEventMsgId } from "@intentmesh/contracts";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { sqlEventInserts, sqlEventMsgId } from "../src/event-log";
import { createTestDatabase } from "../../../test/support/backends";

// The SQL form of the event writer must write what writeEventLog writes: the same message ids
// (or JetStream would not drop a republished duplicate), the same wire text in log and message.
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let database: DatabaseHandle;

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  database = await openDatabase({ url: testDb.url });
});
afterAll(async () => {
  await database?.close();
  await testDb?.drop();
});

describe("the SQL event writer", () => {
  it("builds the message ids of the catalogue's rule for every log kind", async () => {
    const id = "6f1d7c1e-0a39-4c47-9d77-2c3e0d1b5a10";
    const rows = rowsOf<{ intent: string; portfolio: string; agent: string }>(
      await database.db.execute(
        sql.raw(`select ${sqlEventMsgId("intent", `'${id}'::uuid`, "42")} as intent, ${sqlEventMsgId("portfolio", `'${id}'`, "7")} as portfolio,
                 ${sqlEventMsgId("agent", `'${agentSubjectToken("a.b")}'`, "3")} as agent`),
      ),
    );
    expect(rows[0]).toEqual({ intent: intentEventMsgId(id, 42), portfolio: portfolioEventMsgId(id, 7), agent: agentEventMsgId("a.b", 3) });
  });

  it("puts the same wire text in the log row and the outbox row, outbox rows in sequence order", async () => {
    await database.db.execute(sql.raw(`create schema w; create table w.events (id int, sequence int, wire text); create table w.outbox (
      id bigint generated always as identity primary key, subject text not null, msg_id text not null, payload text not null, headers jsonb not null default '{}')`));
    const inserts = sqlEventInserts({
      eventsTable: "w.events",
      outboxTable: "w.outbox",
      from: "src",
      eventColumns: { id: "src.n", sequence: "src.n + 10", wire: "src.wire" },
      subject: "'im.evt.w.' || src.n",
      msgId: sqlEventMsgId("intent", "'i'", "src.n + 10"),
      wire: "src.wire",
      headers: `'{"Im-Schema":"w/1"}'::jsonb`,
      outboxOrder: "src.n",
    });
    await database.db.execute(
      sql.raw(`with src as (select n, '{"n":' || n || '}' as wire from (values (2), (1), (3)) as v(n)),
               e as (${inserts.events}) ${inserts.outbox}`),
    );
    const logged = rowsOf<{ sequence: number; wire: string }>(await database.db.execute(sql.raw(`select sequence, wire from w.events order by sequence`)));
    const sent = rowsOf<{ msg_id: string; payload: string; headers: unknown }>(await database.db.execute(sql.raw(`select msg_id, payload, headers from w.outbox order by id`)));
    expect(logged.map((r) => r.wire)).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
    expect(sent).toEqual([1, 2, 3].map((n) => ({ msg_id: `intent:i:e${n + 10}`, payload: `{"n":${n}}`, headers: { "Im-Schema": "w/1" } })));
  });
});
