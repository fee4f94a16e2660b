import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import { openDatabase, rowsOf, type Database, type DatabaseHandle, type Tx } from "@intentmesh/db";
import { canonicalJson, sha256Tag, type Intent } from "@intentmesh/contracts";
import { createTestDatabase } from "../../../test/support/backends";
import { MIGRATIONS_FOLDER } from "../src/service";
import { ChainChecker } from "../src/verifiable/chain";
import { appendEventReply, insertIntent } from "../src/kernel/statements";
import { appendToLog, lockIntent, lockIntentRow, type NewEvent } from "../src/kernel/event-log";
import { storedEvents } from "./stored-events";

/**
 * The general append path (kernel/event-log.ts appendToLog) in as few statements as it can: ONE
 * when its transaction already read the intent row under its lock (the lock functions remember
 * the chain head), two without (the reservation, then the write). The counts are taken from the
 * statements the transaction's connection sends, so a regression fails here; every batch still
 * gives one unbroken chain, its outbox rows carry the events as stored.
 */
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let handle: DatabaseHandle;
let pool: pg.Pool;
let db: Database;
/** Every statement the counting pool's connections sent, in order (BEGIN and COMMIT included). */
const sent: string[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  handle = await openDatabase({ url: testDb.url, poolSize: 4 });
  await handle.migrate("intents", MIGRATIONS_FOLDER);
  pool = new pg.Pool({ connectionString: testDb.url, max: 4 });
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
      const config = args[0] as string | { text: string };
      sent.push(typeof config === "string" ? config : config.text);
      return query(...args);
    };
  });
  db = drizzle(pool) as unknown as Database;
});
afterAll(async () => {
  await pool?.end();
  await handle?.close();
  await testDb?.drop();
});

/** Runs `body` in a transaction and counts the statements it sent between BEGIN and COMMIT, and those `counted` sent. */
async function counting<T>(body: (tx: Tx, counted: <R>(step: () => Promise<R>) => Promise<R>) => Promise<T>): Promise<{ result: T; statements: number }> {
  let statements = 0;
  const result = await db.transaction((tx) =>
    body(tx, async (step) => {
      const before = sent.length;
      const value = await step();
      statements += sent.length - before;
      return value;
    }),
  );
  return { result, statements };
}

async function newIntent(): Promise<Intent> {
  const now = new Date().toISOString();
  const intent: Intent = { id: crypto.randomUUID(), title: "t", description: null, created_by: "a", status: "active", constraints: {}, state: {}, confidence: 0, version: 1, created_at: now, updated_at: now, parent_intent_id: null, depends_on: [] };
  await insertIntent(handle.query, intent, { eventType: "intent_created", actor: "a", payload: { title: "t" } }, new Date());
  return intent;
}

const batch = (n: number, tag: string): NewEvent[] =>
  Array.from({ length: n }, (_, i) => ({ eventType: "comment", actor: "a", payload: { tag, i, text: "x\u00e9\"" }, ...(i === 1 ? { traceId: `t-${tag}` } : {}) }));

const stored = (intentId: string) => storedEvents(handle, intentId);

/** One unbroken chain of `count` events, the row's head at its last, and each outbox row the stored wire text. */
async function expectOneChain(intentId: string, count: number) {
  const rows = await stored(intentId);
  expect(rows.map((r) => r.sequence)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  const checker = new ChainChecker();
  expect(rows.flatMap((row) => checker.check(row))).toEqual([]);
  const [row] = rowsOf<{ event_seq: string; chain_seq: string; chain_head: string | null; chain_previous: string | null }>(
    await handle.db.execute(sql`select event_seq, chain_seq, chain_head, chain_previous from intents.intents where id = ${intentId}`),
  );
  const last = rows[rows.length - 1]!;
  expect(row).toEqual({ event_seq: String(count), chain_seq: String(count), chain_head: last.eventHash, chain_previous: last.previousEventHash });
  const outbox = rowsOf<{ msg_id: string; subject: string; payload: string; headers: Record<string, string> }>(
    await handle.db.execute(sql`select msg_id, subject, payload, headers from intents.outbox where msg_id like ${`intent:${intentId}:%`} order by id`),
  );
  // Rows a test wrote by hand, as the budget statement would (budget_alert), have no outbox row here.
  const logged = rows.filter((r) => r.eventType !== "budget_alert");
  expect(outbox.map((o) => o.msg_id)).toEqual(logged.map((r) => `intent:${intentId}:e${r.sequence}`));
  expect(outbox.map((o) => o.payload)).toEqual(logged.map((r) => r.wire));
  expect(outbox.map((o) => o.subject)).toEqual(logged.map((r) => `im.evt.intent.${intentId}.${r.eventType}`));
  for (const o of outbox) expect(o.headers["Im-Schema"]).toBe("im.intent-event/2");
  for (const r of rows) expect(JSON.parse(r.wire).payload).toEqual(r.payload);
}

describe("appendToLog", () => {
  it("writes a batch in ONE statement after the transaction locked the intent row, the returned events as stored", async () => {
    const intent = await newIntent();
    const { result, statements } = await counting(async (tx, counted) => {
      await lockIntentRow(tx, intent.id, null);
      return counted(() => appendToLog(tx, intent.id, batch(3, "one"), new Date()));
    });
    expect(statements).toBe(1);
    expect(result.firstSequence).toBe(2);
    expect(result.version).toBe(1);
    expect(result.status).toBe("active");
    await expectOneChain(intent.id, 4);
    const wires = (await stored(intent.id)).slice(1).map((r) => r.wire);
    expect(result.events.map((e) => JSON.stringify(e))).toEqual(wires);
  });

  it("writes consecutive batches of one transaction in one statement each, after lockIntent too", async () => {
    const intent = await newIntent();
    const { statements } = await counting(async (tx, counted) => {
      await lockIntent(tx, intent.id, null);
      await counted(() => appendToLog(tx, intent.id, batch(2, "a"), new Date()));
      await counted(() => appendToLog(tx, intent.id, batch(1, "b"), new Date()));
    });
    expect(statements).toBe(2);
    await expectOneChain(intent.id, 4);
  });

  it("takes two statements without a lock taken before (the reservation reads the head), none of them a read of the events", async () => {
    const intent = await newIntent();
    const from = sent.length;
    const { statements } = await counting((tx, counted) => counted(() => appendToLog(tx, intent.id, batch(2, "cold"), new Date())));
    expect(statements).toBe(2);
    expect(sent.slice(from).filter((text) => /from "intents"\."events"/.test(text))).toEqual([]);
    await expectOneChain(intent.id, 3);
  });

  it("a remembered head gone stale in the transaction costs a retry, never a wrong link", async () => {
    const intent = await newIntent();
    const { statements } = await counting(async (tx, counted) => {
      await lockIntentRow(tx, intent.id, null);
      // The same transaction logs an event as the budget statement does (sequence taken, head left
      // behind, hash left to the trigger), so what lockIntentRow read no longer holds.
      await tx.execute(sql`
        with u as (update intents.intents set event_seq = event_seq + 1 where id = ${intent.id} returning event_seq),
             w as (select u.event_seq, gen_random_uuid() as id from u)
        insert into intents.events (id, intent_id, sequence, event_type, actor, payload, created_at, wire)
        select w.id, ${intent.id}::uuid, w.event_seq, 'budget_alert', 'system', '{"spent_cents": 80.00}'::jsonb, '2026-01-01T00:00:00Z'::timestamptz,
          json_build_object('sequence', w.event_seq, 'id', w.id, 'intent_id', ${intent.id}::uuid, 'event_type', 'budget_alert', 'actor', 'system',
            'payload', '{"spent_cents": 80.00}'::jsonb, 'created_at', '2026-01-01T00:00:00.000+00:00')::text
        from w`);
      await counted(() => appendToLog(tx, intent.id, batch(2, "after"), new Date()));
    });
    // The write refused by its condition, the reservation, the read of the event the trigger hashed, the write.
    expect(statements).toBe(4);
    await expectOneChain(intent.id, 4);
  });

  it("honours an If-Match with a remembered head: 409 on another version, nothing written", async () => {
    const intent = await newIntent();
    const refused = await counting(async (tx) => {
      await lockIntentRow(tx, intent.id, null);
      return appendToLog(tx, intent.id, batch(1, "stale"), new Date(), 7);
    }).catch((error: { code?: string; status?: number }) => error);
    expect((refused as { code?: string }).code).toBe("VERSION_MISMATCH");
    await expectOneChain(intent.id, 1);
    await counting(async (tx) => {
      await lockIntentRow(tx, intent.id, null);
      return appendToLog(tx, intent.id, batch(1, "fresh"), new Date(), 1);
    });
    await expectOneChain(intent.id, 2);
  });
});

describe("appendEventReply (the append_event statement)", () => {
  it("serialises the event once: the answer is the stored wire text and the outbox message, its canonical JSON with event_hash added, the payload sent twice", async () => {
    const intent = await newIntent();
    const marker = `marker-${crypto.randomUUID()}`;
    const sentParams: unknown[][] = [];
    const query: DatabaseHandle["query"] = (name, text, params) => {
      sentParams.push(params);
      return handle.query(name, text, params);
    };
    const written = await appendEventReply(query, intent.id, null, { eventType: "comment", actor: "a", payload: { z: marker, a: [1.5, { y: 1, b: null }] }, traceId: "tr-1" }, new Date(), true);
    expect(written).toBeDefined();
    // The payload travels in the canonical text (hashed, stored, served) and alone for its jsonb column: twice, not more.
    const occurrences = sentParams[0]!.filter((p) => typeof p === "string" && p.includes(marker)).length;
    expect(occurrences).toBe(2);
    const rows = await stored(intent.id);
    const last = rows[rows.length - 1]!;
    expect(written!.json).toBe(last.wire);
    expect(JSON.parse(written!.json)).toEqual(written!.event);
    expect(last.payload).toEqual({ z: marker, a: [1.5, { y: 1, b: null }] });
    const { event_hash: hash, ...content } = JSON.parse(written!.json) as Record<string, unknown>;
    expect(written!.json).toBe(`${canonicalJson(content).slice(0, -1)},"event_hash":"${hash}"}`);
    expect(hash).toBe(sha256Tag(canonicalJson(content)));
    await expectOneChain(intent.id, 2);
  });
});
