/**
 * What one append_event statement costs PostgreSQL: the service's own statement
 * (appendEventStatement, a named prepared statement) run N times on one connection against one
 * intent, the backend's CPU read from /proc before and after. No HTTP, no bus, no other
 * process: the difference between two trees is the statement alone. Loopback PostgreSQL only.
 * Also this process's CPU per append ("node"): what the intents service spends on the statement
 * (preparing the event, the parameters, the answer) and on the reply's JSON, without the bus.
 * `N=3000 ROUNDS=3 npx tsx bench/append-statement.ts` (docs/benchmarks.md).
 */
import { readFileSync } from "node:fs";
import { openDatabase } from "@intentmesh/db";
import { createTestDatabase } from "../test/support/backends";
import { MIGRATIONS_FOLDER } from "../services/intents/src/service";
import * as statements from "../services/intents/src/kernel/statements";

const { insertIntent } = statements;
type Append = (query: unknown, intentId: string, ifMatch: null, event: unknown, at: Date, onlyUngoverned: boolean) => Promise<unknown>;
// The handler's work: the statement and the reply's JSON (an already serialised answer where the tree has one).
const reply = (statements as Record<string, unknown>).appendEventReply as Append | undefined;
const appendAndEncode = reply
  ? async (...args: Parameters<Append>) => ((await reply(...args)) as { json: string }).json
  : async (...args: Parameters<Append>) => JSON.stringify(await (statements.appendEventStatement as unknown as Append)(...args));

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
  const n0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    await appendAndEncode(db.query, intentId, null, { eventType: "comment", actor: "bench-agent", payload: { n: i, note: "hello" } }, new Date(), true);
  }
  const wall = performance.now() - t0;
  const used = cpu() - c0;
  const node = process.cpuUsage(n0);
  console.log(
    `round ${round}: postgres ${((used / N) * 1e6).toFixed(0)} us/append (backend CPU), node ${((node.user + node.system) / N).toFixed(0)} us/append, wall ${((wall / N) * 1e3).toFixed(0)} us/append`,
  );
}
await db.close();
await testDb.drop();
