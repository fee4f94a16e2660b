/**
 * `pnpm bench:memory`: the memory service's two scenarios (docs/benchmarks.md, "Memory").
 *   memory_write: POST /api/v1/memory, working entries with two tags each, spread over 32 agents
 *                 (BENCH_MEMORY_SCOPE=intent: all scoped to one intent);
 *   memory_query: GET /api/v1/memory?agent_id=..&tags=.. over one agent's 10,000 entries (each
 *                 query matches 1 in 20 of them, returns the first 100).
 * A fresh database and bus namespace; intents, registry, memory and the gateway as processes.
 */
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { CLUSTER_SERVICES } from "@intentmesh/contracts";
import { BENCH_DIR, waitForServices } from "./lib/processes";
import { startBenchCluster } from "./lib/cluster";
import { CpuMeter, pidsByCommand, type CpuReport } from "./lib/cpu";
import { percentile } from "./lib/sse-fanout";
import { StatementCounter, type StatementCount } from "./lib/statements";

const seconds = Number(process.env.BENCH_SECONDS || 10);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS || 32);
const TAGS = Array.from({ length: 20 }, (_, i) => `tag${i}`);
const QUERY_ENTRIES = 10_000;
/** BENCH_SCENARIOS=memory_write runs the writes only (the query scenarios need their 10,000 seeded entries). */
/** BENCH_STATEMENTS=1: PostgreSQL statements and transactions per successful request of each scenario (bench/lib/statements.ts). */
const countStatements = ["1", "true", "yes"].includes((process.env.BENCH_STATEMENTS ?? "").toLowerCase());
/**
 * BENCH_MEMORY_SCOPE=intent: every memory_write entry is scoped to one intent (scope.intent_id),
 * so each write also asks the intents service for the intent's ACL and governance policy.
 */
const scopeToIntent = process.env.BENCH_MEMORY_SCOPE === "intent";
const runQueries = !process.env.BENCH_SCENARIOS || process.env.BENCH_SCENARIOS.split(",").includes("memory_query");

async function main() {
  // Every service of the cluster: the gateway's /readyz waits for each of them.
  // BENCH_PROFILE=1: the gateway, memory and registry write V8 CPU profiles to bench/results/profiles/memory-<time>/<name>.
  const profileDir = path.join(BENCH_DIR, "results", "profiles", `memory-${Date.now()}`);
  const profFlags = (name: string) => (process.env.BENCH_PROFILE === "1" && ["gateway", "memory", "registry"].includes(name) ? ["--cpu-prof", `--cpu-prof-dir=${path.join(profileDir, name)}`] : []);
  const cluster = await startBenchCluster("mem", profFlags);
  const { base, headers, services: children, gateway } = cluster;
  try {
    await waitForServices(base, ["intents", "registry", "memory"], [...children, gateway]);
    const load = os.loadavg()[0]!.toFixed(2);
    const meter = new CpuMeter([
      ...CLUSTER_SERVICES.map((name, i) => ({ name, pids: () => [children[i]!.pid] })),
      { name: "gateway", pids: () => [gateway.pid] },
      { name: "postgres", pids: () => pidsByCommand("postgres") },
      { name: "nats-server", pids: () => pidsByCommand("nats-server") },
      { name: "bench (load)", pids: () => [process.pid] },
    ]);

    // memory_write: a warm-up (JIT, pools), then the measured run
    let n = 0;
    const scope = scopeToIntent ? { intent_id: await createIntent(base, headers) } : undefined;
    const writeLoad = (duration: number) =>
      autocannon({
      url: `${base}/api/v1/memory`,
      connections,
      duration,
      requests: [
        {
          method: "POST",
          setupRequest: (req) => {
            const i = n++;
            return {
              ...req,
              headers: { ...headers, "x-agent-id": `writer-${i % 32}` },
              body: JSON.stringify({ namespace: `bench.ns${i % 10}`, key: `k${i}`, value: { i, note: "a bench entry" }, tags: [TAGS[i % 20], TAGS[(i + 7) % 20]], scope }),
            };
          },
        },
      ],
    });
    if (warmupSeconds > 0) await writeLoad(warmupSeconds);
    const statements = countStatements ? await StatementCounter.open(cluster.adminUrl, cluster.dbName, (line) => console.error(line)) : null;
    await statements?.begin();
    meter.begin();
    const write = await writeLoad(seconds);
    const writeCpu = meter.end();
    const writeStatements = await statements?.end(ok(write));
    if (writeStatements) logStatements("memory_write", writeStatements);

    if (!runQueries) {
      await statements?.close();
      console.log(JSON.stringify({ date: new Date().toISOString(), memory_write: { ...writeReport(write, writeCpu), statements: writeStatements } }, null, 2));
      return;
    }
    // memory_query: seed 10,000 entries of one agent by batches of 100
    const agent = "reader-0";
    for (let b = 0; b < QUERY_ENTRIES / 100; b++) {
      const entries = Array.from({ length: 100 }, (_, j) => {
        const i = b * 100 + j;
        return { namespace: `bench.q${i % 10}`, key: `q${i}`, value: { i }, memory_type: "episodic", tags: [TAGS[i % 20]] };
      });
      const res = await fetch(`${base}/api/v1/memory/batch`, { method: "POST", headers: { ...headers, "x-agent-id": agent }, body: JSON.stringify({ entries }) });
      if (res.status !== 200) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
    }
    // The steady state a query meets: statistics that know the table's 10,000 new rows, as
    // autovacuum makes them within a minute of a bulk load. Right after the load, the planner
    // would still plan for the empty table it last analyzed.
    const seeded = new pg.Client({ connectionString: cluster.databaseUrl });
    await seeded.connect();
    await seeded.query("analyze memory.entries");
    await seeded.end();
    let q = 0;
    await statements?.begin();
    meter.begin();
    const query = await autocannon({
      url: `${base}/api/v1/memory`,
      connections: Math.min(connections, 16),
      duration: seconds,
      requests: [{ method: "GET", setupRequest: (req) => ({ ...req, path: `/api/v1/memory?agent_id=${agent}&memory_type=episodic&tags=${TAGS[q++ % 20]}`, headers: { ...headers, "x-agent-id": agent } }) }],
    });
    const queryCpu = meter.end();
    const queryStatements = await statements?.end(ok(query));
    if (queryStatements) logStatements("memory_query", queryStatements);
    await statements?.close();
    // Unloaded latency of a single query, sequential (what one agent sees).
    const single: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      await (await fetch(`${base}/api/v1/memory?agent_id=${agent}&memory_type=episodic&tags=${TAGS[i % 20]}`, { headers: { ...headers, "x-agent-id": agent } })).arrayBuffer();
      single.push(performance.now() - t);
    }
    const report = {
      date: new Date().toISOString(),
      machine: `${os.cpus().length} x ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, load ${load} at start`,
      memory_write: { ...writeReport(write, writeCpu), statements: writeStatements },
      memory_query: { req_s: Math.round(ok(query) / seconds), p50_ms: query.latency.p50, p99_ms: query.latency.p99, non2xx: query.non2xx, errors: query.errors, ...cpuPerRequest(queryCpu, ok(query)), statements: queryStatements },
      memory_query_sequential: { p50_ms: Math.round(percentile(single.sort((a, b) => a - b), 50) * 100) / 100, p99_ms: Math.round(percentile(single, 99) * 100) / 100 },
    };
    console.log(JSON.stringify(report, null, 2));
  } finally {
    await cluster.stop();
  }
}

async function createIntent(base: string, headers: Record<string, string>): Promise<string> {
  const res = await fetch(`${base}/api/v1/intents`, { method: "POST", headers, body: JSON.stringify({ title: "memory bench", status: "active" }) });
  if (res.status !== 201) throw new Error(`creating the bench intent failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** As bench/run.ts logs them: per request, then the most frequent statements. */
function logStatements(scenario: string, count: StatementCount): void {
  console.error(`${scenario}: statements per request ${count.perRequest.toFixed(2)}, transactions ${count.transactionsPerRequest.toFixed(2)}`);
  for (const top of count.top) console.error(`    ${top.perRequest.toFixed(2)}  ${top.query}`);
}

const ok = (r: autocannon.Result) => r.requests.total - r.non2xx - r.errors;
const writeReport = (write: autocannon.Result, cpu: CpuReport) => ({
  req_s: Math.round(ok(write) / seconds),
  p50_ms: write.latency.p50,
  p99_ms: write.latency.p99,
  non2xx: write.non2xx,
  errors: write.errors,
  ...cpuPerRequest(cpu, ok(write)),
});

/** CPU microseconds per successful request, per process group and in all, and the machine's busy share. */
function cpuPerRequest(cpu: CpuReport, requests: number) {
  const us = (cores: number) => Math.round((cores * cpu.seconds * 1e6) / Math.max(1, requests));
  const perProcess = Object.fromEntries(Object.entries(cpu.cores).map(([name, cores]) => [name, us(cores)]));
  const total = Object.values(cpu.cores).reduce((a, b) => a + b, 0);
  return { cpu_us_per_request: { ...perProcess, total: us(total) }, machine_busy: cpu.machineBusy };
}

await main();
