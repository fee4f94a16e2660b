import pg from "pg";
import { openDatabase } from "@intentmesh/db";
import { MIGRATIONS_FOLDER } from "../services/intents/src/service";
import { recordCostStatement, selectCostPage } from "../services/intents/src/db/cost-statements";
import { insertIntent } from "../services/intents/src/db/statements";
import { randomUUID } from "node:crypto";

const admin = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/test" });
await admin.connect();
const name = `im_costs_measure_${Date.now()}`;
await admin.query(`create database ${name}`);
const db = await openDatabase({ url: `postgres://postgres@127.0.0.1:5432/${name}`, poolSize: 10 });
try {
  await db.migrate("intents", MIGRATIONS_FOLDER);
  const id = randomUUID();
  const at = new Date();
  await insertIntent(db.query, { id, title: "m", description: null, created_by: "x", status: "active", constraints: { budget: { max_total_cents: 1e9, alert_threshold_percent: 80 } }, state: {}, confidence: 0, version: 1, created_at: at.toISOString(), updated_at: at.toISOString() }, { eventType: "intent.created", actor: "x", payload: {} }, at);
  const t0 = performance.now();
  const N = 10_000;
  let next = 0;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (next < N) {
      const i = next++;
      await recordCostStatement(db.query, id, { agent_id: `agent-${i % 4}`, cost_type: "tokens", amount: 1200 + (i % 50), unit: "tokens", provider: "p", metadata: { model: "m", n: i }, cents: 0.36 }, "x", new Date());
    }
  }));
  console.log(`recorded ${N} in ${(performance.now() - t0).toFixed(0)} ms (${(N / ((performance.now() - t0) / 1000)).toFixed(0)}/s over 10 connections, statement only)`);
  for (const limit of [100, 1]) {
    const times: number[] = [];
    for (let k = 0; k < 300; k++) {
      const s = performance.now();
      const page = await selectCostPage(db.query, id, 0, limit);
      times.push(performance.now() - s);
      if (k === 0) console.log(page.summaryJson, page.costsJson.length, "bytes of records");
    }
    times.sort((a, b) => a - b);
    console.log(`selectCostPage limit ${limit}: p50 ${times[150]!.toFixed(2)} ms, p99 ${times[297]!.toFixed(2)} ms`);
  }
  const explain = await db.query<Record<string, string>>("x", `explain (analyze, buffers) select json_build_object('total', coalesce(trim_scale(t.amount), 0), 'by_agent', (select coalesce(json_object_agg(agent_id, trim_scale(amount) order by agent_id), '{}'::json) from intents.cost_agent_totals where intent_id = $1::uuid)) from (select 1) one left join intents.cost_totals t on t.intent_id = $1::uuid`, [id]);
  console.log(explain.map((r) => Object.values(r)[0]).join("\n"));
} finally {
  await db.close();
  await admin.query(`drop database ${name} with (force)`);
  await admin.end();
}
