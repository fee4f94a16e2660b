/**
 * What the RFC 0019 chain trigger (intents migration 0009) costs PostgreSQL per appended event.
 * Since migration 0015 (chain_head) it fires only for rows written without their hash (the budget statement;
 * the hot paths hash in their UPDATE: bench/append-statement.ts measures those), which is what
 * this loop writes:
 * the append's own work (bump the intent's sequence, insert the event) in a loop inside the
 * database, with the trigger on and off, alternately, on a fresh database. No HTTP, no bus: the
 * difference is the trigger alone. `npx tsx bench/chain-trigger.ts` (N=3000 events a round).
 * docs/benchmarks.md, "Verifiable event logs".
 */
import pg from "pg";
import { openDatabase } from "@intentmesh/db";
import { createTestDatabase } from "../test/support/backends";
import { MIGRATIONS_FOLDER } from "../services/intents/src/service";
const admin = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const testDb = await createTestDatabase(admin);
const handle = await openDatabase({ url: testDb.url, poolSize: 1 });
await handle.migrate("intents", MIGRATIONS_FOLDER);
await handle.close();
const c = new pg.Client({ connectionString: testDb.url });
await c.connect();
const N = Number(process.env.N ?? 3000);
async function run(trigger: boolean, round: number, canonical = false) {
  const intent = crypto.randomUUID();
  await c.query(`insert into intents.intents (id, title, created_by, status, constraints, state, confidence, version, event_seq, created_at, updated_at) values ($1, 't', 'a', 'active', '{}', '{}', 0, 1, 0, now(), now())`, [intent]);
  await c.query(`alter table intents.events ${trigger ? "enable" : "disable"} trigger events_chain`);
  await c.query(`
    do $$ declare s bigint; eid uuid; t0 timestamptz := clock_timestamp(); begin
      for i in 1..${N} loop
        update intents.intents set event_seq = event_seq + 1 where id = '${intent}' returning event_seq into s;
        eid := gen_random_uuid();
        insert into intents.events (id, intent_id, sequence, event_type, actor, payload, created_at, payload_canonical, wire)
        values (eid, '${intent}', s, 'comment', 'bench-agent', '{"n": 1, "note": "hello"}', now(), ${canonical ? `'{"n":1,"note":"hello"}'` : "null"},
          '{"sequence":' || s || ',"id":"' || eid || '","intent_id":"${intent}","event_type":"comment","actor":"bench-agent","payload":{"n":1,"note":"hello"},"created_at":"2026-01-01T00:00:00.000+00:00"}');
      end loop;
      perform set_config('bench.elapsed', extract(epoch from clock_timestamp() - t0)::text, false);
    end $$`);
  const e = Number((await c.query("select current_setting('bench.elapsed') as e")).rows[0].e);
  const mode = !trigger ? "off" : canonical ? "on, payload canonical from the writer" : "on, payload canonicalised in SQL";
  console.log(`round ${round} trigger ${mode}: ${((e / N) * 1e6).toFixed(1)} us/event`);
}
for (let round = 1; round <= 4; round++) {
  await run(false, round);
  await run(true, round, true);
  await run(true, round, false);
}
await c.query(`alter table intents.events enable trigger events_chain`);
await c.end();
await testDb.drop();
