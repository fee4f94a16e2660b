import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import type { Intent } from "@intentmesh/contracts";
import { createTestDatabase } from "../../../test/support/backends";
import { migrationsUpTo } from "../../../test/support/migrations";
import { MIGRATIONS_FOLDER } from "../src/service";
import { ChainChecker } from "../src/verifiable/chain";
import { appendEventStatement, commitChangeStatement, insertIntent } from "../src/kernel/statements";
import { appendToLog } from "../src/kernel/event-log";
import { canonicalAroundChain, chainHash } from "../src/kernel/event-chain";
import { storedEvents } from "./stored-events";

/**
 * The chain head on the intent row (migration 0015, kernel/event-chain.ts): the hot statements
 * hash from it in the UPDATE that takes the sequence, the transaction path in JavaScript; a writer
 * that leaves the head behind (the trigger fallback: the budget statement, a replica of the
 * previous release) makes the next one read the event before. One chain in every mix, concurrent
 * writers included, and the migration backfills the heads of existing intents.
 */
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let handle: DatabaseHandle;
let beforeChainHead: string;

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  handle = await openDatabase({ url: testDb.url, poolSize: 8 });
  beforeChainHead = migrationsUpTo(MIGRATIONS_FOLDER, 14);
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
  fs.rmSync(beforeChainHead, { recursive: true, force: true });
});

const stored = (intentId: string) => storedEvents(handle, intentId);

const head = async (intentId: string) =>
  rowsOf<{ event_seq: string; chain_seq: string; chain_head: string | null; chain_previous: string | null }>(
    await handle.db.execute(sql`select event_seq, chain_seq, chain_head, chain_previous from intents.intents where id = ${intentId}`),
  )[0]!;

/** Every link and hash holds, and the row's head is the last event's. */
async function expectOneChain(intentId: string, events: number) {
  const rows = await stored(intentId);
  expect(rows).toHaveLength(events);
  const checker = new ChainChecker();
  expect(rows.flatMap((row) => checker.check(row))).toEqual([]);
  const last = rows[rows.length - 1]!;
  expect(await head(intentId)).toEqual({ event_seq: String(events), chain_seq: String(events), chain_head: last.eventHash, chain_previous: last.previousEventHash });
}

/** An event written as the budget statement writes it: sequence taken without moving the head, hash left to the trigger. */
async function writeLikeBudgetStatement(intentId: string) {
  await handle.db.execute(sql`
    with u as (update intents.intents set event_seq = event_seq + 1 where id = ${intentId} returning event_seq),
         w as (select u.event_seq, gen_random_uuid() as id from u)
    insert into intents.events (id, intent_id, sequence, event_type, actor, payload, created_at, wire)
    select w.id, ${intentId}::uuid, w.event_seq, 'budget_alert', 'system', '{"spent_cents": 80.00}'::jsonb, '2026-01-01T00:00:00Z'::timestamptz,
      json_build_object('sequence', w.event_seq, 'id', w.id, 'intent_id', ${intentId}::uuid, 'event_type', 'budget_alert', 'actor', 'system',
        'payload', '{"spent_cents": 80.00}'::jsonb, 'created_at', '2026-01-01T00:00:00.000+00:00')::text
    from w`);
}

function newIntent(): Intent {
  const now = new Date().toISOString();
  return { id: crypto.randomUUID(), title: "t", description: null, created_by: "a", status: "active", constraints: {}, state: {}, confidence: 0, version: 1, created_at: now, updated_at: now, parent_intent_id: null, depends_on: [] };
}

describe("the chain head on the intent row", () => {
  it("splits an event's canonical JSON around its chain fields exactly as the whole is canonicalised", () => {
    const content = { id: "e", intent_id: "i", event_type: "t", actor: "a", payload: { z: 1, a: [0.5, "é"] }, created_at: "c", trace_id: "tr", parent_event_id: "p" };
    const { before, after } = canonicalAroundChain(content);
    const previous = "sha256:abc";
    expect(`${before}${JSON.stringify(previous)},"sequence":7${after}`).toBe(JSON.stringify({ actor: "a", created_at: "c", event_type: "t", id: "e", intent_id: "i", parent_event_id: "p", payload: { a: [0.5, "é"], z: 1 }, previous_event_hash: previous, sequence: 7, trace_id: "tr" }));
    expect(chainHash({ ...content, sequence: 7 }, previous)).toMatch(/^sha256:/);
    expect(() => canonicalAroundChain({ ...content, reason: "sorts between the chain fields" })).toThrow(/sorts between/);
  });

  it("migration 0015 backfills every intent's head from its newest event, and the hot statements go on from it", async () => {
    await handle.migrate("intents", beforeChainHead);
    const intent = newIntent();
    await handle.db.execute(sql`insert into intents.intents (id, title, created_by, status, constraints, state, confidence, version, event_seq, created_at, updated_at)
      values (${intent.id}, 't', 'a', 'active', '{}', '{}', 0, 1, 0, now(), now())`);
    // Written by the previous release: the trigger hashes every row.
    for (let i = 0; i < 3; i++) await writeLikeBudgetStatement(intent.id);

    await handle.migrate("intents", MIGRATIONS_FOLDER);
    await expectOneChain(intent.id, 3);

    const appended = await appendEventStatement(handle.query, intent.id, null, { eventType: "comment", actor: "a", payload: { n: 1 } }, new Date());
    expect(appended!.sequence).toBe(4);
    await expectOneChain(intent.id, 4);
  });

  it("a head left behind by the trigger fallback is caught up from the stored event, on every hot statement", async () => {
    const intent = newIntent();
    await insertIntent(handle.query, intent, { eventType: "intent_created", actor: "a", payload: { title: "t" } }, new Date());
    await expectOneChain(intent.id, 1);
    await writeLikeBudgetStatement(intent.id);
    expect((await head(intent.id)).chain_seq).toBe("1");
    await appendEventStatement(handle.query, intent.id, null, { eventType: "comment", actor: "a", payload: {}, traceId: "t-1" }, new Date());
    await expectOneChain(intent.id, 3);
    await writeLikeBudgetStatement(intent.id);
    const changed = await commitChangeStatement(handle.query, intent.id, { version: 1, leaseEpoch: null }, { state: { x: 1 } }, { eventType: "state_patched", actor: "a", payload: { x: 1 } }, new Date());
    expect(changed!.version).toBe(2);
    await expectOneChain(intent.id, 5);
    await writeLikeBudgetStatement(intent.id);
    await handle.db.transaction((tx) => appendToLog(tx, intent.id, [{ eventType: "agent_assigned", actor: "a", payload: { agent_id: "b" } }], new Date()));
    await expectOneChain(intent.id, 7);
  });

  it("a hole in the log is refused by the hot statements, never chained over", async () => {
    const intent = newIntent();
    await insertIntent(handle.query, intent, { eventType: "intent_created", actor: "a", payload: {} }, new Date());
    // An event counted but never stored (a row lost), so the head is behind and the event before is missing.
    await handle.db.execute(sql`update intents.intents set event_seq = event_seq + 1 where id = ${intent.id}`);
    await expect(appendEventStatement(handle.query, intent.id, null, { eventType: "comment", actor: "a", payload: {} }, new Date())).rejects.toThrow(/missing or has no hash/);
    await expect(handle.db.transaction((tx) => appendToLog(tx, intent.id, [{ eventType: "comment", actor: "a", payload: {} }], new Date()))).rejects.toThrow(/no hashed event/);
  });

  it("stays one chain under concurrent writers of every kind on one intent", async () => {
    const intent = newIntent();
    await insertIntent(handle.query, intent, { eventType: "intent_created", actor: "a", payload: {} }, new Date());
    const writes = Array.from({ length: 60 }, (_, i) => {
      switch (i % 4) {
        case 0:
          return appendEventStatement(handle.query, intent.id, null, { eventType: "comment", actor: `w${i}`, payload: { i } }, new Date());
        case 1:
          return handle.db.transaction((tx) => appendToLog(tx, intent.id, [{ eventType: "comment", actor: `w${i}`, payload: { i } }, { eventType: "comment", actor: `w${i}`, payload: { i, second: true } }], new Date()));
        case 2:
          return writeLikeBudgetStatement(intent.id);
        default:
          // A state write that retries on a version conflict, as the handler does.
          return (async () => {
            for (;;) {
              const [row] = rowsOf<{ version: number }>(await handle.db.execute(sql`select version from intents.intents where id = ${intent.id}`));
              const done = await commitChangeStatement(handle.query, intent.id, { version: row!.version, leaseEpoch: null }, { state: { i } }, { eventType: "state_patched", actor: `w${i}`, payload: { i } }, new Date());
              if (done) return done;
            }
          })();
      }
    });
    await Promise.all(writes);
    await expectOneChain(intent.id, 1 + 15 + 30 + 15 + 15);
  });
});
