/**
 * `pnpm bench:sweep`: the cost of one registry sweep tick at scale. It creates a database of its
 * own, registers AGENTS agents (bulk-inserted through SQL, as registration would leave them),
 * makes DUE_PERCENT of them due, and times AgentSweeper.sweep() — the same code the registry
 * runs — over several rounds, printing p50/p99/max per tick and the transitions made. The target
 * of the registry issue: under 50 ms with 100,000 agents of which 1% are due.
 */
import { randomBytes } from "node:crypto";
import os from "node:os";
import pg from "pg";
import { ManualClock } from "@intentmesh/contracts";
import { BusClient, connectBus } from "@intentmesh/bus";
import { openDatabase } from "@intentmesh/db";
import { createLogger } from "@intentmesh/telemetry";
import { MIGRATIONS_FOLDER } from "../services/registry/src/service";
import { AgentSweeper } from "../services/registry/src/sweeper";
import { percentile } from "./lib/sse-fanout";

const AGENTS = Number(process.env.SWEEP_AGENTS ?? 100_000);
const DUE_PERCENT = Number(process.env.SWEEP_DUE_PERCENT ?? 1);
const ROUNDS = Number(process.env.SWEEP_ROUNDS ?? 20);
const adminUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const natsUrl = process.env.NATS_URL || "nats://127.0.0.1:4222";

const dbName = `im_bench_sweep_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`create database ${dbName}`);
await admin.end();
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;

const database = await openDatabase({ url: url.toString(), poolSize: 4 });
const bus = await connectBus(natsUrl, "bench-sweep", `sweep${randomBytes(3).toString("hex")}`);
try {
  await database.migrate("registry", MIGRATIONS_FOLDER);
  const start = new Date("2026-11-22T00:00:00.000Z");
  const clock = new ManualClock(start);
  // Every agent active, heartbeat config 30/90/300, its silence deadline spread over the next hour.
  await database.query(
    "bench_sweep_seed",
    `insert into registry.agents (agent_id, owner_principal, status, interval_seconds, unhealthy_after_seconds, dead_after_seconds,
       metadata, registered_at, last_heartbeat_at, version, next_check_at, event_seq, updated_at)
     select 'sweep-' || i, 'bench', 'active', 30, 90, 300, '{}'::jsonb, $1::timestamptz, $1::timestamptz, 1,
       $1::timestamptz + interval '1 hour' + (i % 3600) * interval '1 second', 1, $1::timestamptz
     from generate_series(1, $2::int) i`,
    [start, AGENTS],
  );
  await database.query("bench_sweep_analyze", "analyze registry.agents", []);
  const due = Math.round((AGENTS * DUE_PERCENT) / 100);
  const logger = createLogger("bench-sweep", "warn");
  const sweeper = new AgentSweeper(
    { db: database.db, query: database.query, clock, logger, client: new BusClient(bus, 5000), drainCheckSeconds: 5, outboundPolicy: {}, published: () => undefined },
    3_600_000,
  );
  const ticks: number[] = [];
  let transitions = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // Make `due` different agents silent past their unhealthy deadline (as if their heartbeats stopped).
    await database.query(
      "bench_sweep_due",
      `update registry.agents set status = 'active', last_heartbeat_at = $1::timestamptz - interval '91 seconds', next_check_at = $1::timestamptz - interval '1 second'
       where agent_id in (select 'sweep-' || (1 + ((i * 7919 + $3::int * 104729) % $2::int)) from generate_series(1, $4::int) i)`,
      [clock.now(), AGENTS, round, due],
    );
    const t0 = process.hrtime.bigint();
    transitions += await sweeper.sweep();
    ticks.push(Number(process.hrtime.bigint() - t0) / 1e6);
    clock.advance(1000);
  }
  ticks.sort((a, b) => a - b);
  const line = `${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim()}), Node ${process.version}`;
  console.log(`\n${line}\nagents ${AGENTS}, due per tick ${due} (${DUE_PERCENT}%), rounds ${ROUNDS}, transitions ${transitions}`);
  console.log(`| sweep tick | p50 ms | p99 ms | max ms | target |\n|---|---:|---:|---:|---|`);
  console.log(`| ${due} due of ${AGENTS} | ${percentile(ticks, 50).toFixed(1)} | ${percentile(ticks, 99).toFixed(1)} | ${ticks[ticks.length - 1]!.toFixed(1)} | < 50 ms: ${percentile(ticks, 50) < 50 ? "met" : "MISS"} |`);
} finally {
  await bus.close();
  await database.close();
  const drop = new pg.Client({ connectionString: adminUrl });
  await drop.connect();
  await drop.query(`drop database if exists ${dbName} with (force)`);
  await drop.end();
}
