/**
 * `pnpm bench:scale`: how far replicas carry the load (docs/benchmarks.md, "Scale benchmark").
 * For each R of `R=1,2` (env, or argv `R=1,2,4`), against one PostgreSQL and one NATS:
 *   1. a fresh database and bus namespace;
 *   2. R gateways and R replicas of every service the cluster runs (CLUSTER_SERVICES, each from
 *      its manifest's main.ts; BENCH_SERVICES narrows the list), plus R baseline pairs
 *      (bench/baseline: express -> NATS -> pg, the floor);
 *   3. per scenario, one autocannon per gateway with the connections split between them; req/s,
 *      p50/p99, non-2xx, errors and CPU per successful request of every process group;
 *   4. every acknowledged write checked in the database and in its stream (bench/lib/exactly-once.ts);
 *   5. teardown (processes, streams, database), also on failure.
 * Prints one table per R, a comparison across R, and writes bench/results/scale-latest.json.
 * Exits non-zero when the harness fails or an acknowledged write is lost or duplicated.
 */
import { fork, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { connectBus, type Bus } from "@intentmesh/bus";
import { CLUSTER_SERVICES, MAX_MAX_MESSAGES } from "@intentmesh/contracts";
import { BENCH_DIR, freePort, killAllNow, startNode, stopAll, tailOf, waitForOk, waitForServices, type Child } from "./lib/processes";
import { CpuMeter, pidsByCommand, type CpuReport, type Group } from "./lib/cpu";
import { percentile } from "./lib/sse-fanout";
import { formatReports, verifyWrites, WRITE_SCENARIOS, type ExactlyOnceReport, type WriteScenario } from "./lib/exactly-once";
import { mapLimit } from "./lib/map-limit";
import { slotsPerWorker, splitConnections, type Slot } from "./lib/load-split";
import { benchApi, type BenchApi, type IntentRef } from "./lib/api-client";

const SCENARIOS = ["baseline", "get_intent", "create_intent", "state_patch", "post_message", "memory_write", "append_event"] as const;
type Scenario = (typeof SCENARIOS)[number];

const num = (name: string, fallback: number) => {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, not ${raw}`);
  return value;
};

function parseReplicas(): number[] {
  const fromArgv = process.argv.slice(2).find((arg) => /^(R=|--r=|--replicas=)/.test(arg));
  const raw = fromArgv ? fromArgv.split("=")[1]! : (process.env.R ?? "1,2");
  const list = raw.split(",").map((s) => Number(s.trim()));
  if (!list.length || list.some((r) => !Number.isInteger(r) || r < 1 || r > 32)) throw new Error(`R must be a comma list of replica counts from 1 to 32, not ${raw}`);
  return list;
}

function parseList<T extends string>(name: string, known: readonly T[]): T[] {
  const raw = process.env[name];
  if (!raw?.trim()) return [...known];
  const wanted = raw.split(",").map((s) => s.trim()).filter(Boolean);
  const unknown = wanted.filter((s) => !(known as readonly string[]).includes(s));
  if (unknown.length) throw new Error(`${name} names unknown entries: ${unknown.join(", ")} (known: ${known.join(", ")})`);
  return known.filter((s) => wanted.includes(s));
}

const config = {
  replicas: parseReplicas(),
  seconds: num("BENCH_SECONDS", 10),
  warmupSeconds: num("BENCH_WARMUP_SECONDS", 2),
  connections: num("BENCH_CONNECTIONS", 32),
  scenarios: parseList("BENCH_SCENARIOS", SCENARIOS),
  // Every service, as `pnpm start` and the manifests define the cluster: intents serves the
  // intent scenarios, channels post_message, memory memory_write; the others are asked on the way
  // (registry for agents, governance for policies) or idle, as they would be in production.
  services: parseList("BENCH_SERVICES", CLUSTER_SERVICES),
  /**
   * Processes the load driver runs in (BENCH_LOAD_PROCESSES, default 1: this one). One Node
   * process drives about 20,000 requests a second; on a big machine several keep it from being
   * the limit (each is a fork of this script running its share of the connections).
   */
  loadProcesses: Math.max(1, Math.floor(num("BENCH_LOAD_PROCESSES", 1))),
  adminUrl: process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test",
  natsUrl: process.env.NATS_URL || "nats://127.0.0.1:4222",
};

const log = (message: string) => console.log(`[scale ${new Date().toISOString().slice(11, 19)}] ${message}`);
const RESULTS_DIR = path.join(BENCH_DIR, "results");
const LOG_DIR = path.join(RESULTS_DIR, "logs", "scale");

// ---------------------------------------------------------------------------------------------
// One replica count: its cluster, fixtures, scenarios, check, teardown.

interface ScenarioResult {
  replicas: number;
  scenario: Scenario;
  connections: number;
  seconds: number;
  ok: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  cpu: CpuReport;
  /** CPU microseconds per successful request, per process group and in total. */
  perRequestUs: Record<string, number>;
  totalUs: number;
  vsBaseline: number | null;
}

interface ReplicaRun {
  replicas: number;
  loadAverage: number[];
  results: ScenarioResult[];
  checks: ExactlyOnceReport[];
}

interface Cluster {
  gateways: string[];
  baselines: string[];
  children: Child[];
  groups: Group[];
  headers: Record<string, string>;
  bus: Bus;
  db: pg.Pool;
  teardown(): Promise<void>;
}

async function startCluster(replicas: number): Promise<Cluster> {
  const namespace = `scale${replicas}r${randomBytes(3).toString("hex")}`;
  const dbName = `im_bench_scale_${replicas}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: config.adminUrl });
  await admin.connect();
  await admin.query(`create database ${dbName}`).finally(() => admin.end());
  const dbUrl = new URL(config.adminUrl);
  dbUrl.pathname = `/${dbName}`;
  const databaseUrl = dbUrl.toString();
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  db.on("error", () => undefined);
  const bus = await connectBus(config.natsUrl, "bench-scale", namespace);
  const teardown = async () => {
    await stopAll();
    await db.end().catch(() => undefined);
    const prefix = bus.streamName("IM_");
    for await (const stream of bus.jsm.streams.list()) if (stream.config.name.startsWith(prefix)) await bus.jsm.streams.delete(stream.config.name).catch(() => undefined);
    await bus.close();
    const dropper = new pg.Client({ connectionString: config.adminUrl });
    await dropper.connect();
    await dropper.query(`drop database if exists ${dbName} with (force)`).finally(() => dropper.end());
  };
  try {
    const apiKey = `bench_${randomBytes(24).toString("base64url")}`;
    const common = { NATS_URL: config.natsUrl, DATABASE_URL: databaseUrl, BUS_NAMESPACE: namespace, LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: undefined };
    const services = new Map<string, Child[]>();
    for (const name of config.services) {
      const started: Child[] = [];
      for (let i = 0; i < replicas; i++) {
        // Replicas start together, as in Kubernetes: migrations run under one advisory lock (libs/db).
        started.push(startNode({ name: `r${replicas}-${name}-${i}`, script: `services/${name}/src/main.ts`, env: common, logDir: LOG_DIR }));
      }
      services.set(name, started);
    }
    const gatewayChildren: Child[] = [];
    const gateways: string[] = [];
    for (let i = 0; i < replicas; i++) {
      const port = await freePort();
      gatewayChildren.push(
        startNode({
          name: `r${replicas}-gateway-${i}`,
          script: "services/gateway/src/main.ts",
          env: { ...common, API_KEYS: JSON.stringify([{ key: apiKey, principal: "bench", roles: ["admin"] }]), PORT: String(port), HOST: "127.0.0.1" },
          logDir: LOG_DIR,
        }),
      );
      gateways.push(`http://127.0.0.1:${port}`);
    }
    const serviceChildren = [...services.values()].flat();
    for (const url of gateways) await waitForServices(url, config.services, [...serviceChildren, ...gatewayChildren], 120_000);

    const baselineChildren: Child[] = [];
    const baselines: string[] = [];
    if (config.scenarios.includes("baseline")) {
      await db.query(`create table bench_baseline (id integer primary key, title text not null, state jsonb not null, version integer not null, updated_at timestamptz not null default now())`);
      await db.query(`insert into bench_baseline (id, title, state, version) select i, 'baseline row ' || i, jsonb_build_object('counter', i, 'note', 'bench'), 1 from generate_series(1, 100) i`);
      for (let i = 0; i < replicas; i++) {
        const port = await freePort();
        baselineChildren.push(startNode({ name: `r${replicas}-baseline-responder-${i}`, script: "bench/baseline/responder.ts", env: common, logDir: LOG_DIR }));
        baselineChildren.push(startNode({ name: `r${replicas}-baseline-server-${i}`, script: "bench/baseline/server.ts", env: { ...common, PORT: String(port), HOST: "127.0.0.1" }, logDir: LOG_DIR }));
        baselines.push(`http://127.0.0.1:${port}`);
      }
      for (const url of baselines) await waitForOk(`${url}/healthz`, baselineChildren);
    }
    const groups: Group[] = [
      { name: "gateway", pids: () => gatewayChildren.map((c) => c.pid) },
      ...[...services].map(([name, children]) => ({ name, pids: () => children.map((c) => c.pid) })),
      { name: "baseline", pids: () => baselineChildren.map((c) => c.pid) },
      { name: "postgres", pids: () => pidsByCommand("postgres") },
      { name: "nats-server", pids: () => pidsByCommand("nats-server") },
      { name: "bench (load)", pids: () => [process.pid, ...loadWorkers.map((w) => w.pid!)] },
    ];
    return {
      gateways,
      baselines,
      children: [...serviceChildren, ...gatewayChildren, ...baselineChildren],
      groups,
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      bus,
      db,
      teardown,
    };
  } catch (error) {
    await teardown().catch(() => undefined);
    throw error;
  }
}

async function runReplicas(replicas: number): Promise<ReplicaRun> {
  log(`R=${replicas}: starting ${replicas} gateway(s) and ${replicas} replica(s) of ${config.services.join(", ")}`);
  const cluster = await startCluster(replicas);
  try {
    const api = benchApi(cluster.gateways[0]!, cluster.headers);
    log(`R=${replicas}: cluster ready (gateways ${cluster.gateways.join(", ")}); creating fixtures`);
    const pool = await mapLimit(100, 16, (i) => api.createIntent(`pool ${i}`));
    const patchIntents = await mapLimit(config.connections, 16, (i) => api.createIntent(`patch ${i}`));
    // Each channel keeps its newest max_messages messages (spec 8): at the ceiling, so that the
    // exactly-once check finds every acknowledged message in the database (up to 3.2 million).
    const channels = await mapLimit(32, 8, async (i) =>
      String((await api.expect(201, "POST", `/api/v1/intents/${pool[i]!.id}/channels`, { name: `bench-${i}`, options: { max_messages: MAX_MAX_MESSAGES } })).id),
    );
    const acknowledged = noneAcknowledged();
    const meter = new CpuMeter(cluster.groups);
    const results: ScenarioResult[] = [];
    let baselineRps: number | null = null;
    for (const scenario of config.scenarios) {
      const input = { pool, patchIntents, channels, headers: cluster.headers, acknowledged, api };
      const plan = scenarioPlan(scenario, input);
      const targets = scenario === "baseline" ? cluster.baselines : cluster.gateways;
      const load = (seconds: number) => (config.loadProcesses > 1 ? loadInWorkers(scenario, input, targets, seconds) : loadHere(splitConnections(targets, config.connections), plan.options, seconds));
      if (config.warmupSeconds > 0) {
        await plan.resync?.();
        await load(config.warmupSeconds);
        // autocannon ends with requests still in flight; they are let finish before the
        // versions are read again, or one served by another replica after that read is a 409.
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      await plan.resync?.();
      meter.begin();
      const run = await load(config.seconds);
      const cpu = meter.end();
      const rps = run.ok / run.seconds;
      if (scenario === "baseline") baselineRps = rps;
      const perRequestUs = Object.fromEntries(Object.entries(cpu.cores).map(([name, cores]) => [name, rps > 0 ? Math.round((cores * 1e6) / rps) : 0]));
      const totalUs = Object.entries(perRequestUs)
        .filter(([name]) => name !== "bench (load)")
        .reduce((sum, [, us]) => sum + us, 0);
      const result: ScenarioResult = {
        replicas,
        scenario,
        connections: config.connections,
        seconds: run.seconds,
        ok: run.ok,
        rps,
        p50: percentile(run.latencies, 50),
        p99: percentile(run.latencies, 99),
        non2xx: run.non2xx,
        statusCodes: run.statusCodes,
        errors: run.errors,
        timeouts: run.timeouts,
        cpu,
        perRequestUs,
        totalUs,
        vsBaseline: scenario === "baseline" ? 1 : baselineRps ? rps / baselineRps : null,
      };
      results.push(result);
      log(`R=${replicas} ${scenario}: ${rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, non-2xx ${run.non2xx}${run.non2xx ? ` (${Object.entries(run.statusCodes).filter(([code]) => !code.startsWith("2")).map(([code, n]) => `${n}x ${code}`).join(", ")})` : ""}, errors ${run.errors}, ${totalUs} us CPU/request`);
      if (scenario !== "baseline") await waitForOutbox(api, config.services, 60_000);
    }
    for (const child of cluster.children) {
      if (!child.isRunning()) throw new Error(`${child.name} exited during the run (${await child.exited}); its log ends:\n${tailOf(child.logFile)}`);
    }
    // Every acknowledged write must be published before the streams are read: a relay still
    // behind is said so, and its messages then count as missing in the stream.
    const leftBehind = await waitForOutbox(api, config.services, 180_000);
    if (leftBehind) log(`R=${replicas}: the exactly-once check reads the streams with outbox rows still unpublished (${leftBehind})`);
    const wanted = Object.fromEntries(WRITE_SCENARIOS.filter((s) => config.scenarios.includes(s)).map((s) => [s, acknowledged[s]]));
    const checks = await verifyWrites(cluster.db, cluster.bus, wanted);
    log(`R=${replicas}: exactly-once check\n${formatReports(checks)}`);
    return { replicas, loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100), results, checks };
  } finally {
    await cluster.teardown();
  }
}

// ---------------------------------------------------------------------------------------------
// Scenarios (the same requests as bench/run.ts and bench/memory.ts), recording acknowledged keys

/** Each write scenario's acknowledged keys, none yet. */
const noneAcknowledged = () => Object.fromEntries(WRITE_SCENARIOS.map((s) => [s, [] as string[]])) as Record<WriteScenario, string[]>;

interface PlanInput {
  pool: IntentRef[];
  patchIntents: IntentRef[];
  channels: string[];
  headers: Record<string, string>;
  acknowledged: Record<WriteScenario, string[]>;
  /** Reads state_patch's versions again before each phase; a load worker has none (its coordinator reads them). */
  api?: BenchApi;
  /** Makes the memory keys of one load process's job its own (`w<k>.<job>-`; empty with one process). */
  keyPrefix?: string;
}

interface Plan {
  options: Partial<autocannon.Options>;
  resync?: () => Promise<void>;
}

/** Records the key of each 2xx answer's body (`key` returns undefined when there is none). */
function recorder(into: string[], key: (body: Record<string, unknown>) => unknown) {
  return (status: number, body: string) => {
    if (status < 200 || status >= 300) return;
    try {
      const value = key(JSON.parse(body) as Record<string, unknown>);
      if (value !== undefined && value !== null) into.push(String(value));
    } catch {
      into.push(`(unparseable ${status} answer: ${body.slice(0, 80)})`);
    }
  };
}

const TAGS = Array.from({ length: 20 }, (_, i) => `tag${i}`);

function scenarioPlan(scenario: Scenario, input: PlanInput): Plan {
  const { pool, headers, acknowledged } = input;
  let i = 0;
  switch (scenario) {
    case "baseline":
      return { options: { requests: [{ method: "GET", setupRequest: (req) => ({ ...req, path: `/baseline/${(i++ % 100) + 1}` }) }] } };
    case "get_intent":
      return { options: { headers, requests: [{ method: "GET", setupRequest: (req) => ({ ...req, path: `/api/v1/intents/${pool[i++ % pool.length]!.id}` }) }] } };
    case "create_intent": {
      const body = JSON.stringify({ title: "bench intent", description: "created by the benchmark", state: { phase: "start", counter: 0 } });
      return { options: { headers, requests: [{ method: "POST", path: "/api/v1/intents", body, onResponse: recorder(acknowledged.create_intent, (b) => b.id) }] } };
    }
    case "append_event": {
      const body = JSON.stringify({ event_type: "bench.append", payload: { note: "benchmark event", n: 1 } });
      return {
        options: {
          headers,
          requests: [{ method: "POST", body, setupRequest: (req) => ({ ...req, path: `/api/v1/intents/${pool[i++ % pool.length]!.id}/events` }), onResponse: recorder(acknowledged.append_event, (b) => b.id) }],
        },
      };
    }
    case "post_message": {
      const body = JSON.stringify({ message_type: "notify", payload: { note: "benchmark message", n: 1 } });
      return {
        options: {
          headers,
          requests: [
            { method: "POST", body, setupRequest: (req) => ({ ...req, path: `/api/v1/channels/${input.channels[i++ % input.channels.length]}/messages` }), onResponse: recorder(acknowledged.post_message, (b) => b.id) },
          ],
        },
      };
    }
    case "memory_write":
      return {
        options: {
          headers,
          requests: [
            {
              method: "POST",
              path: "/api/v1/memory",
              setupRequest: (req) => {
                const n = i++;
                return {
                  ...req,
                  headers: { ...headers, "x-agent-id": `writer-${n % 32}` },
                  body: JSON.stringify({ namespace: `bench.ns${n % 10}`, key: `k${input.keyPrefix ?? ""}${n}`, value: { n, note: "a bench entry" }, tags: [TAGS[n % 20], TAGS[(n + 7) % 20]] }),
                };
              },
              onResponse: recorder(acknowledged.memory_write, (b) => b.id),
            },
          ],
        },
      };
    case "state_patch": {
      // As in bench/run.ts: each connection owns one intent and carries its version from one
      // answer's ETag to its next If-Match; the acknowledged key is "<intent>:v<version>".
      const owned = input.patchIntents.map((intent) => ({ ...intent }));
      let next = 0;
      return {
        resync: input.api
          ? async () => {
              for (const o of owned) o.version = (await input.api!.getIntent(o.id)).version;
            }
          : undefined,
        options: {
          headers,
          requests: [{ method: "GET", path: "/healthz" }],
          setupClient: (client) => {
            const own = owned[next++ % owned.length]!;
            const record = recorder(acknowledged.state_patch, (b) => `${own.id}:v${b.version}`);
            client.setRequests([
              {
                method: "POST",
                path: `/api/v1/intents/${own.id}/state`,
                setupRequest: (req) => ({
                  ...req,
                  headers: { ...req.headers, "If-Match": `"${own.version}"` },
                  body: JSON.stringify([{ op: "set", path: "/progress", value: { step: own.version, note: "benchmark" } }]),
                }),
                onResponse: (status, body) => {
                  record(status, body);
                  try {
                    const parsed = JSON.parse(body) as { version?: number; current_version?: number };
                    if (status >= 200 && status < 300 && typeof parsed.version === "number") own.version = parsed.version;
                    else if (status === 409 && typeof parsed.current_version === "number") own.version = parsed.current_version;
                  } catch {
                    /* keep */
                  }
                },
              },
            ]);
          },
        },
      };
    }
  }
}

interface LoadResult {
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  seconds: number;
  latencies: number[];
  /** Responses by status code, every instance together. */
  statusCodes: Record<string, number>;
}

/** One autocannon per slot, in this process, run together; results summed. */
async function loadHere(slots: readonly Slot[], options: Partial<autocannon.Options>, seconds: number): Promise<LoadResult> {
  const latencies: number[] = [];
  const runs = await Promise.all(
    slots.map(
      ({ url, connections }) =>
        new Promise<autocannon.Result>((resolve, reject) => {
          const instance = autocannon({ ...options, url, connections, duration: seconds, timeout: 10 }, (error, result) => (error ? reject(error as Error) : resolve(result)));
          instance.on("response", (_client, statusCode, _bytes, responseTime) => {
            if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
          });
        }),
    ),
  );
  const results = runs.map(
    (r): LoadResult => ({
      statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, stat]) => [code, stat?.count ?? 0])),
      ok: r["2xx"],
      non2xx: r.non2xx,
      errors: r.errors,
      timeouts: r.timeouts,
      seconds: r.duration,
      latencies: [],
    }),
  );
  return { ...sumLoadResults(results), latencies: latencies.sort((a, b) => a - b) };
}

/** Several loads run together, as one: counts summed, latencies merged in order, the longest duration. */
function sumLoadResults(results: readonly LoadResult[]): LoadResult {
  const statusCodes: Record<string, number> = {};
  for (const r of results) for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  const sum = (key: "ok" | "non2xx" | "errors" | "timeouts") => results.reduce((total, r) => total + r[key], 0);
  return {
    statusCodes,
    ok: sum("ok"),
    non2xx: sum("non2xx"),
    errors: sum("errors"),
    timeouts: sum("timeouts"),
    seconds: Math.max(...results.map((r) => r.seconds)),
    latencies: results.flatMap((r) => r.latencies).sort((a, b) => a - b),
  };
}

// ---------------------------------------------------------------------------------------------
// Fixtures and outbox

/**
 * Waits until every service's outbox is published (the check reads the streams afterwards);
 * undefined when it is, else the backlog left after `timeoutMs`.
 */
async function waitForOutbox(api: BenchApi, services: readonly string[], timeoutMs: number): Promise<string | undefined> {
  const deadline = Date.now() + timeoutMs;
  let backlog: Record<string, unknown> = {};
  while (Date.now() < deadline) {
    const report = (await api.request("GET", "/readyz")).body as { services?: Record<string, { outbox_backlog?: number }> };
    backlog = Object.fromEntries(services.map((name) => [name, report?.services?.[name]?.outbox_backlog]));
    if (Object.values(backlog).every((n) => n === 0 || n === undefined)) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const left = JSON.stringify(Object.fromEntries(Object.entries(backlog).filter(([, n]) => n)));
  log(`  (outbox backlog still ${left} after ${timeoutMs} ms; going on)`);
  return left;
}


// ---------------------------------------------------------------------------------------------
// The load from several processes (BENCH_LOAD_PROCESSES)

/** What a load worker is asked: its connections, and the fixtures its scenario's requests are made from. */
interface LoadJob {
  /** The worker's index: its memory keys are its own. */
  worker: number;
  scenario: Scenario;
  slots: Slot[];
  seconds: number;
  fixtures: Pick<PlanInput, "pool" | "patchIntents" | "channels" | "headers">;
}

type LoadReply = { ok: true; result: LoadResult; acknowledged: string[] } | { ok: false; error: string };

const loadWorkers: ChildProcess[] = [];

/** Forks of this script that run LoadJobs (started once, for every R). */
function startLoadWorkers(): void {
  while (loadWorkers.length < config.loadProcesses) {
    const worker = fork(process.argv[1]!, [], { env: { ...process.env, BENCH_LOAD_WORKER: "1" }, stdio: ["ignore", "inherit", "inherit", "ipc"] });
    loadWorkers.push(worker);
  }
}

function runJob(worker: ChildProcess, job: LoadJob): Promise<LoadReply> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`a load worker exited (${code}) during ${job.scenario}`));
    worker.once("exit", onExit);
    worker.once("message", (reply: LoadReply) => {
      worker.off("exit", onExit);
      resolve(reply);
    });
    worker.send(job);
  });
}

/**
 * The scenario's connections spread over the load workers: each worker gets an even share of each
 * target's connections; for state_patch, each connection its own intent, at the version just read.
 * Latencies, counts and acknowledged keys come back and are summed here.
 */
async function loadInWorkers(scenario: Scenario, input: PlanInput & { api: BenchApi }, targets: string[], seconds: number): Promise<LoadResult> {
  startLoadWorkers();
  if (scenario === "state_patch") for (const intent of input.patchIntents) intent.version = (await input.api.getIntent(intent.id)).version;
  const perWorker = slotsPerWorker(targets, config.connections, loadWorkers.length);
  let nextIntent = 0;
  const replies = await Promise.all(
    loadWorkers.map((worker, k) => {
      const slots = perWorker[k]!;
      if (!slots.length) return Promise.resolve(undefined);
      const connections = slots.reduce((sum, slot) => sum + slot.connections, 0);
      const patchIntents = input.patchIntents.slice(nextIntent, (nextIntent += connections));
      return runJob(worker, { worker: k, scenario, slots, seconds, fixtures: { pool: input.pool, patchIntents, channels: input.channels, headers: input.headers } });
    }),
  );
  const results: LoadResult[] = [];
  for (const reply of replies) {
    if (!reply) continue;
    if (!reply.ok) throw new Error(`a load worker failed: ${reply.error}`);
    results.push(reply.result);
    if ((WRITE_SCENARIOS as readonly string[]).includes(scenario)) input.acknowledged[scenario as WriteScenario].push(...reply.acknowledged);
  }
  return sumLoadResults(results);
}

/** A load worker: runs each job it is sent with the scenario's own requests, and answers its results. */
function serveLoadJobs(): void {
  // Each job builds its requests afresh: the job's number keeps its memory keys apart from the last one's.
  let jobs = 0;
  process.on("message", (job: LoadJob) => {
    const acknowledged = noneAcknowledged();
    const plan = scenarioPlan(job.scenario, { ...job.fixtures, acknowledged, keyPrefix: `w${job.worker}.${jobs++}-` });
    loadHere(job.slots, plan.options, job.seconds).then(
      (result) => process.send!({ ok: true, result, acknowledged: (acknowledged as Record<string, string[]>)[job.scenario] ?? [] } satisfies LoadReply),
      (error: unknown) => process.send!({ ok: false, error: String((error as Error)?.stack ?? error) } satisfies LoadReply),
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Reporting

const SERVICE_GROUPS = () => ["gateway", ...config.services, "baseline", "postgres", "nats-server"];

function renderRun(run: ReplicaRun): string {
  const head = ["scenario", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors", "vs baseline", ...SERVICE_GROUPS().map((g) => `${g} us`), "total us", "load cores", "other cores"];
  const rows = run.results.map((r) => [
    r.scenario,
    r.rps.toFixed(0),
    r.p50.toFixed(1),
    r.p99.toFixed(1),
    String(r.non2xx),
    String(r.errors + r.timeouts),
    r.vsBaseline === null ? "-" : `${r.vsBaseline.toFixed(2)}x`,
    ...SERVICE_GROUPS().map((g) => String(r.perRequestUs[g] ?? 0)),
    String(r.totalUs),
    // The load driver's cores: near 1 per load process, it, not the cluster, is the limit.
    (r.cpu.cores["bench (load)"] ?? 0).toFixed(2),
    otherCores(r.cpu).toFixed(2),
  ]);
  return markdownTable(head, rows);
}

/** Cores busy with processes outside the benchmark (other work on the machine skews the numbers). */
function otherCores(cpu: CpuReport): number {
  const ours = Object.values(cpu.cores).reduce((sum, cores) => sum + cores, 0);
  return Math.max(0, cpu.machineBusy * os.cpus().length - ours);
}

function renderComparison(runs: ReplicaRun[]): string {
  const head = ["scenario", ...runs.flatMap((run) => [`R=${run.replicas} req/s`, `R=${run.replicas} p50/p99 ms`, `R=${run.replicas} us/req`]), ...(runs.length > 1 ? [`R=${runs.at(-1)!.replicas} / R=${runs[0]!.replicas}`] : [])];
  const rows = config.scenarios.map((scenario) => {
    const of = (run: ReplicaRun) => run.results.find((r) => r.scenario === scenario);
    const first = of(runs[0]!);
    const last = of(runs.at(-1)!);
    return [
      scenario,
      ...runs.flatMap((run) => {
        const r = of(run);
        return r ? [r.rps.toFixed(0), `${r.p50.toFixed(1)}/${r.p99.toFixed(1)}`, String(r.totalUs)] : ["-", "-", "-"];
      }),
      ...(runs.length > 1 ? [first && last && first.rps > 0 ? `${(last.rps / first.rps).toFixed(2)}x` : "-"] : []),
    ];
  });
  return markdownTable(head, rows);
}

function markdownTable(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
  return [line(head), `|${widths.map((w, i) => (i === 0 ? "-".repeat(w + 2) : `${"-".repeat(w + 1)}:`)).join("|")}|`, ...rows.map(line)].join("\n");
}

// ---------------------------------------------------------------------------------------------

process.on("exit", killAllNow);
// A load worker starts no process and is ended by its coordinator.
for (const signal of process.env.BENCH_LOAD_WORKER === "1" ? [] : (["SIGINT", "SIGTERM", "SIGHUP"] as const)) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping`);
    void stopAll().finally(() => process.exit(130));
  });
}

async function main(): Promise<boolean> {
  const loadAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
  const machine = `${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? "unknown"}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  log(`machine: ${machine}; load average ${loadAtStart.join(" ")}`);
  log(`R=${config.replicas.join(",")}; scenarios ${config.scenarios.join(", ")}; ${config.seconds}s each after ${config.warmupSeconds}s warm-up; ${config.connections} connections spread over the gateways`);
  const runs: ReplicaRun[] = [];
  for (const replicas of config.replicas) runs.push(await runReplicas(replicas));
  console.log(`\nmachine: ${machine}; load average at start ${loadAtStart.join(" ")}`);
  for (const run of runs) {
    console.log(`\nR=${run.replicas} (load average after: ${run.loadAverage.join(" ")}); CPU per successful request in microseconds, per process group (all replicas):\n`);
    console.log(renderRun(run));
  }
  console.log(`\nAcross R (us/req: CPU of every process but the load driver per successful request):\n`);
  console.log(renderComparison(runs));
  console.log(`\nExactly-once check of acknowledged writes:\n`);
  for (const run of runs) console.log(`R=${run.replicas}\n${formatReports(run.checks)}`);
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const json = { date: new Date().toISOString(), machine, loadAverageAtStart: loadAtStart, config: { ...config, adminUrl: undefined }, runs };
  fs.writeFileSync(path.join(RESULTS_DIR, "scale-latest.json"), JSON.stringify(json, null, 2) + "\n");
  return runs.every((run) => run.checks.every((check) => check.ok));
}

if (process.env.BENCH_LOAD_WORKER === "1") {
  serveLoadJobs();
  // Its coordinator gone (ended, or killed), a worker has nothing left to do.
  process.on("disconnect", () => process.exit(0));
} else {
  try {
    const ok = await main();
    if (!ok) console.error("\nbench:scale: acknowledged writes were lost or duplicated (above)");
    process.exitCode = ok ? 0 : 1;
  } catch (error) {
    console.error(`\nbench:scale failed: ${(error as Error).stack ?? error}`);
    process.exitCode = 1;
  } finally {
    for (const worker of loadWorkers) worker.kill();
    await stopAll().catch(() => undefined);
  }
  process.exit(process.exitCode);
}
