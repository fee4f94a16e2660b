/**
 * What one append_event statement costs PostgreSQL: the service's own statement
 * (appendEventStatement, a named prepared statement) run N times on one connection against one
 * intent, the backend's CPU read from /proc before and after. No HTTP, no bus, no other
 * process: the difference between two trees is the statement alone. Loopback PostgreSQL only.
 * `N=3000 ROUNDS=3 npx tsx bench/append-statement.ts` (docs/benchmarks.md).
 */
import { readFileSync } from "node:fs";
import { openDatabase } from "@intentmesh/db";
import { createTestDatabase } from "../test/support/backends";
import { MIGRATIONS_FOLDER } from "../services/intents/src/service";
import { appendEventStatement, insertIntent } from "../services/intents/src/kernel/statements";

const admin = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const N = Number(process.env.N ?? 3000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const testDb = await createTestDatabase(admin);
const db = await openDatabase({ url: testDb.url, poolSize: 1 });
await db.migrate("intents", MIGRATIONS_FOLDER);
const ticks = Number(process.env.CLK_TCK ?? 100);
const pid = (await db.query<{ pid: number }>("pid", "select pg_backend_pid() as pid", []))[0]!.pid;
const cpu = () => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / ticks;
};
for (let round = 1; round <= ROUNDS; round++) {
  const intentId = crypto.randomUUID();
  const now = new Date();
  await insertIntent(db.query, { id: intentId, title: "bench", description: null, created_by: "bench", status: "active", constraints: {}, state: {}, confidence: 0, version: 1, created_at: now.toISOString(), updated_at: now.toISOString(), parent_intent_id: null, depends_on: [] } as never, { eventType: "intent_created", actor: "bench", payload: { title: "bench" } } as never, now);
  const c0 = cpu();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    await appendEventStatement(db.query, intentId, null, { eventType: "comment", actor: "bench-agent", payload: { n: i, note: "hello" } } as never, new Date());
  }
  const wall = performance.now() - t0;
  const used = cpu() - c0;
  console.log(`round ${round}: postgres ${((used / N) * 1e6).toFixed(0)} us/append (backend CPU), wall ${((wall / N) * 1e3).toFixed(0)} us/append`);
}
await db.close();
await testDb.drop();
