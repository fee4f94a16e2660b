/**
 * `pnpm bench`: the benchmark harness. One command that
 *   1. creates a fresh database and a bus namespace of its own,
 *   2. starts the intents service and the gateway as separate processes, plus a baseline pair
 *      (a minimal express -> NATS -> pg responder pipeline, the floor on this machine),
 *   3. runs autocannon scenarios against them and an SSE fan-out measurement,
 *   4. prints one table (and writes bench/results/latest.json),
 *   5. tears everything down, even on failure.
 * It exits non-zero only when the harness itself fails, never because a target was missed.
 * See docs/benchmarks.md.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { CLUSTER_SERVICES } from "@intentmesh/contracts";
import { BENCH_DIR, freePort, killAllNow, startNode, stopAll, tailOf, waitForOk, waitForServices, type Child } from "./lib/processes";
import { CpuMeter, pidsByCommand, type CpuReport, type Group } from "./lib/cpu";
import { percentile, runFanout, type FanoutResult } from "./lib/sse-fanout";
import { heartbeatClientSetup, registerHeartbeatAgents, registerRequests } from "./lib/agents";
import { COST_FIXTURE_RECORDS, costFixtureIntent, getCostsRequests, recordCostRequests, registerBenchAgents } from "./lib/costs";
import { answerLeftovers, governIntent, respondLatency, suspendRespondClientSetup } from "./lib/governance";
import { taskClientSetup, taskWorkers } from "./lib/tasks";
import { formatProfile, loadProfile, summarizeProfile, type ProfileSummary } from "./lib/profile";
import { mapLimit } from "./lib/map-limit";
import { benchApi, type BenchApi } from "./lib/api-client";
import { StatementCounter, type StatementCount } from "./lib/statements";

// ---------------------------------------------------------------------------------------------
// Configuration

const ALL_SCENARIOS = ["baseline", "get_intent", "list_events", "create_intent", "append_event", "state_patch", "record_cost", "get_costs", "register_agent", "heartbeat", "task_claim_complete", "state_patch_governed", "suspend_respond", "post_message", "pull_messages", "sse_fanout", "sse_channel"] as const;
type ScenarioName = (typeof ALL_SCENARIOS)[number];

const num = (name: string, fallback: number) => {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, not ${raw}`);
  return value;
};

const config = {
  seconds: num("BENCH_SECONDS", 10),
  warmupSeconds: num("BENCH_WARMUP_SECONDS", 2),
  connections: num("BENCH_CONNECTIONS", 32),
  sseSubscribers: num("BENCH_SSE_SUBSCRIBERS", 200),
  sseEvents: num("BENCH_SSE_EVENTS", 200),
  sseRate: num("BENCH_SSE_RATE", 200),
  profile: ["1", "true", "yes"].includes((process.env.BENCH_PROFILE ?? "").toLowerCase()),
  /** BENCH_STATEMENTS=1: count PostgreSQL statements per request (bench/lib/statements.ts). */
  statements: ["1", "true", "yes"].includes((process.env.BENCH_STATEMENTS ?? "").toLowerCase()),
  adminUrl: process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test",
  natsUrl: process.env.NATS_URL || "nats://127.0.0.1:4222",
  scenarios: parseScenarios(process.env.BENCH_SCENARIOS),
};

/**
 * The services this run starts: all of the cluster's, less `BENCH_OMIT_SERVICES` (a comma list),
 * which compares a tree against an older one that did not have those services yet, like for like.
 * The intents service cannot be left out: every scenario goes through it.
 */
const STARTED_SERVICES: readonly string[] = (() => {
  const omitted = (process.env.BENCH_OMIT_SERVICES ?? "").split(",").map((name) => name.trim()).filter(Boolean);
  for (const name of omitted) {
    if (!(CLUSTER_SERVICES as readonly string[]).includes(name)) throw new Error(`BENCH_OMIT_SERVICES: ${name} is not a service of the cluster (${CLUSTER_SERVICES.join(", ")})`);
    if (name === "intents") throw new Error("BENCH_OMIT_SERVICES: every scenario needs the intents service");
  }
  return CLUSTER_SERVICES.filter((name) => !omitted.includes(name));
})();

function parseScenarios(raw: string | undefined): ScenarioName[] {
  if (!raw?.trim()) return [...ALL_SCENARIOS];
  const wanted = raw.split(",").map((s) => s.trim()).filter(Boolean);
  const unknown = wanted.filter((s) => !(ALL_SCENARIOS as readonly string[]).includes(s));
  if (unknown.length) throw new Error(`BENCH_SCENARIOS names unknown scenarios: ${unknown.join(", ")} (known: ${ALL_SCENARIOS.join(", ")})`);
  return ALL_SCENARIOS.filter((s) => wanted.includes(s));
}

/** Targets: successful requests/s for the HTTP scenarios; p99 and loss for the fan-out. */
const TARGETS: Partial<Record<ScenarioName, number>> = {
  get_intent: 4000,
  create_intent: 2000,
  state_patch: 1500,
  append_event: 2000,
  post_message: 2000,
  list_events: 1000,
  record_cost: 2000,
  heartbeat: 2500,
};
const SSE_P99_TARGET_MS = 25;
/** Latency targets: p50 of the successful responses, in ms. */
const P50_TARGETS_MS: Partial<Record<ScenarioName, number>> = { get_costs: 10 };

const DESCRIPTIONS: Record<ScenarioName, string> = {
  baseline: "GET /baseline/:id on a minimal express -> NATS -> pg responder (one row by primary key)",
  get_intent: "GET /api/v1/intents/{id}, rotating over 100 intents",
  list_events: "GET /api/v1/intents/{id}/events?limit=200 of an intent with 200 events",
  create_intent: "POST /api/v1/intents",
  append_event: "POST /api/v1/intents/{id}/events, rotating over 100 intents",
  post_message: "POST /api/v1/channels/{id}/messages (a notify), rotating over 32 channels of different intents",
  pull_messages: "GET /api/v1/channels/{id}/messages?limit=100 of a channel with 100 messages (an agent pulling its view)",
  sse_channel: "SSE: subscribers on one channel's stream, notify messages posted at the SSE rate; latency from POST to channel_message frame",
  state_patch: "POST /api/v1/intents/{id}/state, If-Match, one intent per connection, version from the ETag",
  record_cost: "POST /api/v1/intents/{id}/costs (tokens with cents), rotating over 100 intents and 4 agents",
  get_costs: `GET /api/v1/intents/{id}/costs (first page of 100 and the summary) of an intent with ${COST_FIXTURE_RECORDS} records`,
  register_agent: "POST /api/v1/agents, a new agent id per request",
  heartbeat: "POST /api/v1/agents/{id}/heartbeat, each connection its own registered agent",
  task_claim_complete: "POST /intents/{id}/tasks, then /tasks/{tid}/claim, /start, /complete; each connection one agent and one intent (4 requests per task)",
  state_patch_governed: "state_patch on intents with a governance policy (every rule checked on each write, none refusing): the overhead of enforcement",
  suspend_respond: "POST /intents/{id}/suspend then /suspend/respond, each connection its own intent (2 requests per cycle); respond latency alone measured after the run",
  sse_fanout: "SSE subscribers on one intent; per-delivery latency from POST sent to frame received",
};

// ---------------------------------------------------------------------------------------------
// Results

interface HttpResult {
  scenario: ScenarioName;
  kind: "http";
  description: string;
  seconds: number;
  connections: number;
  requests: number;
  ok: number;
  /** Successful (2xx) responses per second: what the targets are about. */
  rps: number;
  /** Every response (any status) per second. */
  rpsAll: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  ratioToBaseline: number | null;
  target: string;
  pass: boolean | null;
  cpu: CpuReport;
  outboxBacklogAfter: number | null;
  /** BENCH_STATEMENTS=1 only. */
  statements?: StatementCount;
  /** suspend_respond: the latency of respond alone, measured sequentially after the run (ms). */
  /** With BENCH_STATEMENTS=1, `statements` per sequential cycle (suspend + respond): no request in flight at either end, so no load skews it. */
  respondAlone?: { cycles: number; p50: number; p90: number; p99: number; statements?: StatementCount };
}

interface SseResult extends FanoutResult {
  scenario: "sse_fanout" | "sse_channel";
  kind: "sse";
  description: string;
  rate: number;
  target: string;
  pass: boolean;
  cpu: CpuReport;
}

type Result = HttpResult | SseResult;

// ---------------------------------------------------------------------------------------------
// Teardown: always, once, whatever happened.

const RESULTS_DIR = path.join(BENCH_DIR, "results");
const runId = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "_");
const LOG_DIR = path.join(RESULTS_DIR, "logs");
const PROFILE_DIR = path.join(RESULTS_DIR, "profiles", runId);

const state: { dbName?: string; namespace?: string; nc?: NatsConnection } = {};
let teardownPromise: Promise<void> | undefined;

function teardown(): Promise<void> {
  teardownPromise ??= (async () => {
    const problems: string[] = [];
    await stopAll().catch((error) => problems.push(`stopping processes: ${(error as Error).message}`));
    if (state.namespace) {
      try {
        const nc = state.nc && !state.nc.isClosed() ? state.nc : await connect({ servers: config.natsUrl.split(",") });
        state.nc = nc;
        const jsm = await jetstreamManager(nc);
        const prefix = `${state.namespace.toUpperCase().replace(/-/g, "_")}_`;
        for await (const stream of jsm.streams.list()) {
          if (stream.config.name.startsWith(prefix)) await jsm.streams.delete(stream.config.name);
        }
      } catch (error) {
        problems.push(`deleting streams of ${state.namespace}: ${(error as Error).message}`);
      }
    }
    await state.nc?.close().catch(() => undefined);
    if (state.dbName) {
      const admin = new pg.Client({ connectionString: config.adminUrl });
      try {
        await admin.connect();
        await admin.query(`drop database if exists ${state.dbName} with (force)`);
      } catch (error) {
        problems.push(`dropping database ${state.dbName}: ${(error as Error).message}`);
      } finally {
        await admin.end().catch(() => undefined);
      }
    }
    if (problems.length) throw new Error(`teardown incomplete: ${problems.join("; ")}`);
  })();
  return teardownPromise;
}

process.on("exit", killAllNow);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: tearing down`);
    void teardown()
      .catch((error) => console.error((error as Error).message))
      .finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------
// Main

const log = (message: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

async function main(): Promise<void> {
  const machine = await machineInfo();
  const load1 = Number(os.loadavg()[0]!.toFixed(2));
  if (load1 > 1) log(`WARNING: 1-minute load average is ${load1}: other work on this machine will skew the numbers`);
  log(`scenarios: ${config.scenarios.join(", ")}; ${config.seconds}s each after ${config.warmupSeconds}s warm-up, ${config.connections} connections`);

  // (a) a fresh database and namespace
  const namespace = `bench${randomBytes(4).toString("hex")}`;
  state.namespace = namespace;
  const dbName = `im_bench_${Date.now()}`;
  const admin = new pg.Client({ connectionString: config.adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${dbName}`);
    state.dbName = dbName;
  } finally {
    await admin.end();
  }
  const dbUrl = new URL(config.adminUrl);
  dbUrl.pathname = `/${dbName}`;
  const databaseUrl = dbUrl.toString();
  log(`database ${dbName}, namespace ${namespace}`);

  state.nc = await connect({ servers: config.natsUrl.split(","), name: "bench-harness" });
  machine.nats = state.nc.info?.version ?? "unknown";
  log(machine.line);

  // (b) the cluster, as separate processes
  const apiKey = `bench_${randomBytes(24).toString("base64url")}`;
  const gatewayPort = await freePort();
  const baseUrl = `http://127.0.0.1:${gatewayPort}`;
  const common = {
    NATS_URL: config.natsUrl,
    DATABASE_URL: databaseUrl,
    BUS_NAMESPACE: namespace,
    LOG_LEVEL: "warn",
    OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
  };
  // One folder per process: tsx's loader runs in a worker thread that writes a profile of its own.
  const profFlags = (name: string) => (config.profile ? ["--cpu-prof", `--cpu-prof-dir=${path.join(PROFILE_DIR, name)}`] : []);
  // Every service of the cluster, each its own process from its manifest (services/<name>/src/main.ts);
  // the gateway's /readyz asks each of them. Federation runs disabled (FEDERATION_ENABLED unset).
  const services = STARTED_SERVICES.map((name) => ({
    name,
    child: startNode({ name, script: `services/${name}/src/main.ts`, env: common, logDir: LOG_DIR, nodeFlags: profFlags(name) }),
  }));
  const intents = services.find((service) => service.name === "intents")!.child;
  const gateway = startNode({
    name: "gateway",
    script: "services/gateway/src/main.ts",
    env: { ...common, API_KEYS: JSON.stringify([{ key: apiKey, principal: "bench", roles: ["admin"] }]), PORT: String(gatewayPort), HOST: "127.0.0.1" },
    logDir: LOG_DIR,
    nodeFlags: profFlags("gateway"),
  });
  await waitForServices(baseUrl, [...STARTED_SERVICES], [...services.map((service) => service.child), gateway]);
  log(`cluster ready: gateway pid ${gateway.pid} on ${baseUrl}, intents pid ${intents.pid}`);

  // (c) the baseline pair
  let baselineUrl: string | undefined;
  const baselineChildren: Child[] = [];
  if (config.scenarios.includes("baseline")) {
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      await db.query(`create table bench_baseline (id integer primary key, title text not null, state jsonb not null, version integer not null, updated_at timestamptz not null default now())`);
      await db.query(`insert into bench_baseline (id, title, state, version) select i, 'baseline row ' || i, jsonb_build_object('counter', i, 'note', 'bench'), 1 from generate_series(1, 100) i`);
    } finally {
      await db.end();
    }
    const port = await freePort();
    baselineChildren.push(startNode({ name: "baseline-responder", script: "bench/baseline/responder.ts", env: common, logDir: LOG_DIR }));
    baselineChildren.push(startNode({ name: "baseline-server", script: "bench/baseline/server.ts", env: { ...common, PORT: String(port), HOST: "127.0.0.1" }, logDir: LOG_DIR }));
    baselineUrl = `http://127.0.0.1:${port}`;
    await waitForOk(`${baselineUrl}/healthz`, baselineChildren);
    log(`baseline ready on ${baselineUrl}`);
  }

  const groups: Group[] = [
    { name: "gateway", pids: () => [gateway.pid] },
    ...services.map(({ name, child }) => ({ name, pids: () => [child.pid] })),
    { name: "baseline", pids: () => baselineChildren.map((c) => c.pid) },
    { name: "postgres", pids: () => pidsByCommand("postgres") },
    { name: "nats-server", pids: () => pidsByCommand("nats-server") },
    { name: "bench (load)", pids: () => [process.pid] },
  ];
  const meter = new CpuMeter(groups);
  const api = benchApi(baseUrl, { "X-API-Key": apiKey });

  // Fixtures
  log("creating fixtures");
  const pool = await mapLimit(100, 16, (i) => api.createIntent(`pool ${i}`));
  const patchIntents = await mapLimit(config.connections, 16, (i) => api.createIntent(`patch ${i}`));
  const logIntent = await api.createIntent("log of 200 events");
  await mapLimit(199, 4, (i) => api.appendEvent(logIntent.id, { event_type: "bench.fixture", payload: { n: i } }));
  const logCheck = await api.request("GET", `/api/v1/intents/${logIntent.id}/events?limit=200`);
  const logEvents = (logCheck.body as { events?: unknown[] }).events?.length ?? 0;
  if (logEvents !== 200) throw new Error(`the list_events fixture has ${logEvents} events, not 200`);
  const wantsCosts = config.scenarios.includes("record_cost") || config.scenarios.includes("get_costs");
  const benchAgents = wantsCosts ? await registerBenchAgents(api, log) : null;
  const costIntent = config.scenarios.includes("get_costs") ? await api.createIntent(`${COST_FIXTURE_RECORDS} cost records`) : undefined;
  if (costIntent) await costFixtureIntent(api, costIntent.id, benchAgents, mapLimit);
  const heartbeatAgents = config.scenarios.includes("heartbeat") ? await registerHeartbeatAgents(api, config.connections, namespace, mapLimit) : [];
  const taskWorkersOfRun = config.scenarios.includes("task_claim_complete")
    ? await taskWorkers(api, config.connections, namespace, mapLimit, (title) => api.createIntent(title))
    : [];
  const governedIntents = config.scenarios.includes("state_patch_governed")
    ? await mapLimit(config.connections, 16, async (i) => governIntent(api, await api.createIntent(`governed patch ${i}`)))
    : [];
  const suspendIntents = config.scenarios.includes("suspend_respond") ? await mapLimit(config.connections + 1, 16, (i) => api.createIntent(`suspend ${i}`)) : [];
  const wantsChannels = config.scenarios.includes("post_message") || config.scenarios.includes("pull_messages");
  const benchChannels = wantsChannels
    ? await mapLimit(32, 8, async (i) => {
        const created = await api.request("POST", `/api/v1/intents/${pool[i]!.id}/channels`, { name: `bench-${i}` });
        if (created.status !== 201) throw new Error(`creating a bench channel answered ${created.status}: ${JSON.stringify(created.body).slice(0, 300)}`);
        return String((created.body as { id: string }).id);
      })
    : [];
  if (wantsChannels) await mapLimit(100, 8, (i) => api.request("POST", `/api/v1/channels/${benchChannels[0]}/messages`, { message_type: "notify", payload: { fixture: i } }));
  await waitForOutbox(api, 30_000);

  // (d) and (e) the scenarios
  const statementCounter = config.statements ? await StatementCounter.open(config.adminUrl, dbName, log) : null;
  const results: Result[] = [];
  const windows: { scenario: ScenarioName; startUs: number; endUs: number }[] = [];
  const hrUs = () => Number(process.hrtime.bigint() / 1000n);
  let baselineRps: number | null = null;
  const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
  for (const scenario of config.scenarios) {
    log(`${scenario}: ${DESCRIPTIONS[scenario]}`);
    if (scenario === "sse_fanout" || scenario === "sse_channel") {
      const intent = await api.createIntent("sse fanout");
      const channelId =
        scenario === "sse_channel" ? String(((await api.request("POST", `/api/v1/intents/${intent.id}/channels`, { name: "fanout" })).body as { id: string }).id) : undefined;
      const startUs = hrUs();
      meter.begin();
      const fan = await runFanout({
        baseUrl,
        apiKey,
        intentId: intent.id,
        subscribers: config.sseSubscribers,
        events: config.sseEvents,
        rate: config.sseRate,
        warmupEvents: 20,
        drainMs: 10_000,
        probe: { nc: state.nc!, subject: channelId ? `${namespace}.evt.channel.${channelId}.>` : `${namespace}.evt.intent.${intent.id}.>` },
        channelId,
      });
      const cpu = meter.end();
      windows.push({ scenario, startUs, endUs: hrUs() });
      const pass = fan.p99 <= SSE_P99_TARGET_MS && fan.loss === 0 && fan.connected === config.sseSubscribers;
      results.push({
        ...fan,
        scenario,
        kind: "sse",
        description: DESCRIPTIONS[scenario],
        rate: config.sseRate,
        target: `p99<=${SSE_P99_TARGET_MS}ms, loss 0`,
        pass,
        cpu,
      });
      log(`  ${fan.received}/${fan.expected} deliveries, p50 ${fan.p50.toFixed(1)} ms, p99 ${fan.p99.toFixed(1)} ms, loss ${fan.loss}`);
      log(
        `  POST -> published on NATS p50 ${fan.toBusP50.toFixed(1)} / p99 ${fan.toBusP99.toFixed(1)} ms; ` +
          `NATS -> SSE frame p50 ${fan.busToSseP50.toFixed(1)} / p99 ${fan.busToSseP99.toFixed(1)} ms; POST answered p50 ${fan.appendP50.toFixed(1)} / p99 ${fan.appendP99.toFixed(1)} ms`,
      );
      continue;
    }

    let url = baseUrl;
    let options: Partial<autocannon.Options> = { headers };
    let resync: (() => Promise<void>) | undefined;
    switch (scenario) {
      case "baseline": {
        url = baselineUrl!;
        let i = 0;
        options = { requests: [{ method: "GET", setupRequest: (req) => ({ ...req, path: `/baseline/${(i++ % 100) + 1}` }) }] };
        break;
      }
      case "get_intent": {
        let i = 0;
        options.requests = [{ method: "GET", setupRequest: (req) => ({ ...req, path: `/api/v1/intents/${pool[i++ % pool.length]!.id}` }) }];
        break;
      }
      case "list_events":
        options.requests = [{ method: "GET", path: `/api/v1/intents/${logIntent.id}/events?limit=200` }];
        break;
      case "create_intent":
        options.requests = [{ method: "POST", path: "/api/v1/intents", body: JSON.stringify({ title: "bench intent", description: "created by the benchmark", state: { phase: "start", counter: 0 } }) }];
        break;
      case "append_event": {
        let i = 0;
        const body = JSON.stringify({ event_type: "bench.append", payload: { note: "benchmark event", n: 1 } });
        options.requests = [{ method: "POST", body, setupRequest: (req) => ({ ...req, path: `/api/v1/intents/${pool[i++ % pool.length]!.id}/events` }) }];
        break;
      }
      case "post_message": {
        let i = 0;
        const body = JSON.stringify({ message_type: "notify", payload: { note: "benchmark message", n: 1 } });
        options.requests = [{ method: "POST", body, setupRequest: (req) => ({ ...req, path: `/api/v1/channels/${benchChannels[i++ % benchChannels.length]}/messages` }) }];
        break;
      }
      case "pull_messages":
        options.requests = [{ method: "GET", path: `/api/v1/channels/${benchChannels[0]}/messages?limit=100` }];
        break;
      case "record_cost":
        options.requests = recordCostRequests(pool.map((intent) => intent.id), benchAgents);
        break;
      case "get_costs":
        options.requests = getCostsRequests(costIntent!.id);
        break;
      case "register_agent":
        options.requests = registerRequests(namespace);
        break;
      case "heartbeat":
        options.requests = [{ method: "GET", path: "/healthz" }];
        options.setupClient = heartbeatClientSetup(heartbeatAgents);
        break;
      case "task_claim_complete":
        options.requests = [{ method: "GET", path: "/healthz" }];
        options.setupClient = taskClientSetup(taskWorkersOfRun);
        break;
      case "suspend_respond":
        options.requests = [{ method: "GET", path: "/healthz" }];
        options.setupClient = suspendRespondClientSetup(suspendIntents.slice(1).map((i) => i.id));
        resync = () => answerLeftovers(api, suspendIntents.slice(1).map((i) => i.id));
        break;
      case "state_patch_governed":
      case "state_patch": {
        // Each connection owns one intent and carries its version from one response's ETag to the
        // next request's If-Match. autocannon resets a request's context between requests, so the
        // state lives per client, bound in setupClient.
        const owned = (scenario === "state_patch" ? patchIntents : governedIntents).map((intent) => ({ id: intent.id, version: intent.version }));
        let next = 0;
        resync = async () => {
          next = 0;
          for (const o of owned) o.version = (await api.getIntent(o.id)).version;
        };
        options.requests = [{ method: "GET", path: "/healthz" }];
        options.setupClient = (client) => {
          const own = owned[next++ % owned.length]!;
          client.setRequests([
            {
              method: "POST",
              path: `/api/v1/intents/${own.id}/state`,
              setupRequest: (req) => ({
                ...req,
                headers: { ...req.headers, "If-Match": `"${own.version}"` },
                body: JSON.stringify([{ op: "set", path: "/progress", value: { step: own.version, note: "benchmark" } }]),
              }),
              onResponse: (status, body, _context, resHeaders) => {
                if (status >= 200 && status < 300) {
                  const etag = headerOf(resHeaders, "etag");
                  const version = etag ? Number(etag.replace(/[^0-9]/g, "")) : NaN;
                  own.version = Number.isFinite(version) ? version : own.version + 1;
                } else if (status === 409) {
                  // Counted as non-2xx; resynchronise so one miss does not become a run of them.
                  try {
                    const current = (JSON.parse(body) as { current_version?: number }).current_version;
                    if (typeof current === "number") own.version = current;
                  } catch {
                    /* keep */
                  }
                }
              },
            },
          ]);
        };
        break;
      }
    }

    // warm-up, then the measured run
    if (config.warmupSeconds > 0) {
      await resync?.();
      await cannon(url, options, config.warmupSeconds);
      await waitForOutbox(api, 30_000);
    }
    await resync?.();
    await statementCounter?.begin();
    const startUs = hrUs();
    meter.begin();
    const run = await cannon(url, options, config.seconds);
    const cpu = meter.end();
    windows.push({ scenario, startUs, endUs: hrUs() });
    const backlog = scenario === "baseline" ? null : await outboxBacklog(api);
    const r = run.result;
    const ok = r["2xx"];
    const rps = ok / r.duration;
    if (scenario === "baseline") baselineRps = rps;
    const target = TARGETS[scenario];
    const p50Target = P50_TARGETS_MS[scenario];
    const statusCodes: Record<string, number> = {};
    for (const [code, stat] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = stat?.count ?? 0;
    const result: HttpResult = {
      scenario,
      kind: "http",
      description: DESCRIPTIONS[scenario],
      seconds: r.duration,
      connections: config.connections,
      requests: r.requests.total,
      ok,
      rps,
      rpsAll: r.requests.total / r.duration,
      p50: percentile(run.latencies, 50),
      p90: percentile(run.latencies, 90),
      p99: percentile(run.latencies, 99),
      max: run.latencies.length ? run.latencies[run.latencies.length - 1]! : NaN,
      non2xx: r.non2xx,
      statusCodes,
      errors: r.errors,
      timeouts: r.timeouts,
      ratioToBaseline: baselineRps && scenario !== "baseline" ? rps / baselineRps : scenario === "baseline" ? 1 : null,
      target: target ? `>= ${target} req/s` : p50Target ? `p50 <= ${p50Target} ms` : "-",
      pass: target ? rps >= target : p50Target ? percentile(run.latencies, 50) <= p50Target : null,
      cpu,
      outboxBacklogAfter: backlog,
    };
    if (scenario === "suspend_respond") {
      await waitForOutbox(api, 60_000);
      // Counted before the sequential cycles below, which are not among the run's requests.
      if (statementCounter) result.statements = await statementCounter.end(ok);
      await answerLeftovers(api, [suspendIntents[0]!.id]);
      await statementCounter?.begin();
      const alone = await respondLatency(api, suspendIntents[0]!.id, 200);
      result.respondAlone = { cycles: alone.length, p50: percentile(alone, 50), p90: percentile(alone, 90), p99: percentile(alone, 99) };
      log(`  respond alone (200 sequential): p50 ${result.respondAlone.p50.toFixed(2)} ms, p90 ${result.respondAlone.p90.toFixed(2)} ms, p99 ${result.respondAlone.p99.toFixed(2)} ms`);
      if (statementCounter) {
        // The consumers' share of the cycles is in the count once the events are out and taken.
        await waitForOutbox(api, 60_000);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const sequential = await statementCounter.end(alone.length);
        result.respondAlone.statements = sequential;
        log(`  sequential cycles: statements per cycle ${sequential.perRequest.toFixed(2)}, transactions ${sequential.transactionsPerRequest.toFixed(2)}, executing ${sequential.execUsPerRequest.toFixed(0)} us`);
        for (const top of sequential.top) log(`    ${top.perRequest.toFixed(2)}  ${top.execUsPerRequest.toFixed(0).padStart(5)}  ${top.planUsPerRequest.toFixed(0).padStart(5)}  ${top.query}`);
      }
    }
    if (statementCounter && scenario !== "baseline") {
      result.statements ??= await statementCounter.end(ok);
      log(`  statements per request ${result.statements.perRequest.toFixed(2)}, transactions ${result.statements.transactionsPerRequest.toFixed(2)}, executing ${result.statements.execUsPerRequest.toFixed(0)} us`);
      log("    calls   exec   plan  (per request; microseconds; plan is 0 unless pg_stat_statements.track_planning is on)");
      for (const top of result.statements.top) log(`    ${top.perRequest.toFixed(2)}  ${top.execUsPerRequest.toFixed(0).padStart(5)}  ${top.planUsPerRequest.toFixed(0).padStart(5)}  ${top.query}`);
    }
    results.push(result);
    log(`  ${rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, non-2xx ${r.non2xx}, errors ${r.errors}`);
    if (scenario !== "baseline") await waitForOutbox(api, 60_000);
  }

  // Make sure nothing died under load before reporting.
  for (const child of [...services.map((service) => service.child), gateway, ...baselineChildren]) {
    if (!child.isRunning()) throw new Error(`${child.name} exited during the run (${await child.exited}); its log ends:\n${tailOf(child.logFile)}`);
  }

  await statementCounter?.close();
  // (g) teardown, then profiles (written by the processes as they exit)
  await teardown();
  let profiles: ProfileSummary[] = [];
  if (config.profile) {
    // Main threads only: CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile with thread id 0.
    for (const name of ["gateway", "intents", "channels", "governance"]) {
      const dir = path.join(PROFILE_DIR, name);
      const main = fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f)) : undefined;
      if (main) {
        const target = path.join(PROFILE_DIR, `${name}.cpuprofile`);
        fs.renameSync(path.join(dir, main), target);
        const loaded = loadProfile(target);
        for (const w of windows) {
          if (w.scenario === "baseline") continue;
          const cores = results.find((r) => r.scenario === w.scenario)?.cpu.cores[name];
          const processCpuMs = cores === undefined ? undefined : Math.round(cores * (w.endUs - w.startUs) / 1000);
          profiles.push({ ...summarizeProfile(target, w, 25, loaded), label: `${name} during ${w.scenario}`, processCpuMs });
        }
      } else log(`no main-thread profile was written for ${name}`);
    }
  }

  // (f) the table and the JSON
  const table = renderTable(results);
  const cpuTable = renderCpuTable(results);
  const costTable = renderCostTable(results);
  const wakeupTable = renderWakeupTable(results);
  console.log(`\n${machine.line}\n${config.connections} connections, ${config.seconds}s per scenario after ${config.warmupSeconds}s warm-up; load average at start ${load1}\n`);
  console.log(table);
  const noisy = results.filter((r) => otherCores(r.cpu) > NOISY_CORES).map((r) => r.scenario);
  if (noisy.length) console.log(`\nWARNING: other processes used more than ${NOISY_CORES} cores during ${noisy.join(", ")}: rerun when the machine is quiet.`);
  console.log(`\nCPU used during each scenario (cores; the machine has ${machine.cpus}):\n`);
  console.log(cpuTable);
  console.log(`\nCPU time per successful request (microseconds):\n`);
  console.log(costTable);
  console.log(`\nWake-ups per successful request (a thread that slept and was woken: about one per message it waited for):\n`);
  console.log(wakeupTable);
  for (const profile of profiles) console.log(`\n${formatProfile(profile, 10)}`);
  if (profiles.length) console.log(`\nprofiles: ${path.relative(process.cwd(), PROFILE_DIR)} (open in Chrome DevTools or speedscope)`);
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const json = {
    date: new Date().toISOString(),
    machine,
    loadAverageAtStart: load1,
    config: { ...config, adminUrl: redact(config.adminUrl) },
    /** Variables the services inherit that change what is measured. */
    serviceEnv: Object.fromEntries(
      Object.entries(process.env).filter(([key]) => /^(OTEL_|DATABASE_POOL_SIZE$|BUS_TIMEOUT_MS$|SSE_PING_SECONDS$|NODE_OPTIONS$|UV_THREADPOOL_SIZE$)/.test(key)),
    ),
    results: results.map((r) => ({ ...r, otherCores: Math.round(otherCores(r.cpu) * 100) / 100 })),
    profiles: profiles.map((p) => ({ ...p, file: path.relative(BENCH_DIR, p.file) })),
    table,
    cpuTable,
    costTable,
    wakeupTable,
  };
  fs.writeFileSync(path.join(RESULTS_DIR, "latest.json"), JSON.stringify(json, null, 2) + "\n");
  fs.writeFileSync(path.join(RESULTS_DIR, `run-${runId}.json`), JSON.stringify(json, null, 2) + "\n");
  console.log(`\nresults written to ${path.relative(process.cwd(), path.join(RESULTS_DIR, "latest.json"))}`);
}

// ---------------------------------------------------------------------------------------------
// autocannon

async function cannon(url: string, options: Partial<autocannon.Options>, seconds: number): Promise<{ result: autocannon.Result; latencies: number[] }> {
  const latencies: number[] = [];
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ ...options, url, connections: config.connections, duration: seconds, timeout: 10 }, (error, result) =>
      error ? reject(error as Error) : resolve(result),
    );
    // autocannon's own histogram has 1 ms resolution: keep the exact times of the 2xx responses.
    instance.on("response", (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
  latencies.sort((a, b) => a - b);
  return { result, latencies };
}

function headerOf(headers: Record<string, unknown> | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return Array.isArray(value) ? String(value[0]) : String(value);
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// API helpers for fixtures

type Api = BenchApi;

async function outboxBacklog(api: Api): Promise<number | null> {
  const res = await api.request("GET", "/readyz");
  const backlog = (res.body as { services?: { intents?: { outbox_backlog?: number } } })?.services?.intents?.outbox_backlog;
  return typeof backlog === "number" ? backlog : null;
}

/** Lets the outbox relay catch up, so one scenario's events are not published during the next. */
async function waitForOutbox(api: Api, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let backlog: number | null = null;
  while (Date.now() < deadline) {
    backlog = await outboxBacklog(api);
    if (backlog === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  log(`  (outbox backlog still ${backlog} after ${timeoutMs} ms; going on)`);
}


// ---------------------------------------------------------------------------------------------
// Reporting

async function machineInfo() {
  let cpuModel = os.cpus()[0]?.model ?? "unknown";
  try {
    const line = fs.readFileSync("/proc/cpuinfo", "utf8").split("\n").find((l) => l.startsWith("model name"));
    if (line) cpuModel = line.split(":")[1]!.trim();
  } catch {
    /* not Linux */
  }
  let postgres = "unknown";
  const admin = new pg.Client({ connectionString: config.adminUrl });
  try {
    await admin.connect();
    postgres = String((await admin.query("show server_version")).rows[0]?.server_version ?? "unknown");
  } finally {
    await admin.end().catch(() => undefined);
  }
  const info = {
    cpus: os.cpus().length,
    cpuModel,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    postgres,
    nats: "unknown",
    get line() {
      return `machine: ${this.cpus} CPUs (${this.cpuModel}), ${this.memoryGiB} GiB RAM, Node ${this.node}, PostgreSQL ${this.postgres}, nats-server ${this.nats}`;
    },
  };
  return info;
}

function renderTable(results: Result[]): string {
  const head = ["scenario", "req/s", "p50 ms", "p99 ms", "non-2xx", "vs baseline", "target", "result"];
  const rows = results.map((r) => {
    if (r.kind === "sse") {
      return [
        r.scenario,
        `${r.deliveriesPerSecond.toFixed(0)} dlv/s`,
        r.p50.toFixed(1),
        r.p99.toFixed(1),
        String(r.appendFailures),
        "-",
        r.target,
        `${r.pass ? "pass" : "MISS"} (loss ${r.loss}${r.duplicates ? `, dup ${r.duplicates}` : ""}${r.outOfOrder ? `, out of order ${r.outOfOrder}` : ""}` +
          `${otherCores(r.cpu) > NOISY_CORES ? `, noisy: ${otherCores(r.cpu).toFixed(2)} cores of other work` : ""})`,
      ];
    }
    const other = otherCores(r.cpu);
    const notes = [
      r.errors ? `${r.errors} errors` : "",
      r.timeouts ? `${r.timeouts} timeouts` : "",
      other > NOISY_CORES ? `noisy: ${other.toFixed(2)} cores of other work` : "",
    ]
      .filter(Boolean)
      .join(", ");
    return [
      r.scenario,
      r.rps.toFixed(0),
      r.p50.toFixed(1),
      r.p99.toFixed(1),
      String(r.non2xx),
      r.ratioToBaseline === null ? "-" : `${r.ratioToBaseline.toFixed(2)}x`,
      r.target,
      (r.pass === null ? "-" : r.pass ? "pass" : "MISS") + (notes ? ` (${notes})` : ""),
    ];
  });
  return markdownTable(head, rows, [false, true, true, true, true, true, false, false]);
}

/** Every process the harness measures (the groups above); the rest of the machine is "other". */
const GROUP_NAMES = ["gateway", ...STARTED_SERVICES, "baseline", "postgres", "nats-server", "bench (load)"];

/** Cores busy with processes that are not part of the benchmark (other people's work). */
function otherCores(cpu: CpuReport): number {
  const ours = GROUP_NAMES.reduce((sum, n) => sum + (cpu.cores[n] ?? 0), 0);
  return Math.max(0, cpu.machineBusy * os.cpus().length - ours);
}

/** Above this many cores of outside work during a scenario, its numbers are flagged as noisy. */
const NOISY_CORES = 0.2;

function renderCpuTable(results: Result[]): string {
  const names = GROUP_NAMES;
  const cpus = os.cpus().length;
  const head = ["scenario", ...names, "other", "machine busy"];
  const rows = results.map((r) => {
    const ours = names.reduce((sum, n) => sum + (r.cpu.cores[n] ?? 0), 0);
    const other = Math.max(0, r.cpu.machineBusy * cpus - ours);
    return [r.scenario, ...names.map((n) => (r.cpu.cores[n] ?? 0).toFixed(2)), other.toFixed(2), `${Math.round(r.cpu.machineBusy * 100)}%`];
  });
  return markdownTable(head, rows, [false, ...names.map(() => true), true, true]);
}

/** CPU time per successful request: on a saturated machine, throughput is cores / this sum. */
function renderCostTable(results: Result[]): string {
  const names = GROUP_NAMES;
  const head = ["scenario", ...names.map((n) => `${n} us`), "total us"];
  const rows = results
    .filter((r): r is HttpResult => r.kind === "http" && r.rps > 0)
    .map((r) => {
      const per = names.map((n) => ((r.cpu.cores[n] ?? 0) * 1e6) / r.rps);
      return [r.scenario, ...per.map((v) => v.toFixed(0)), per.reduce((a, b) => a + b, 0).toFixed(0)];
    });
  return markdownTable(head, rows, [false, ...names.map(() => true), true]);
}

/** Wake-ups per successful request (CpuReport.wakeups): roughly the messages each process waited for. */
function renderWakeupTable(results: Result[]): string {
  const names = GROUP_NAMES;
  const head = ["scenario", ...names, "total"];
  const rows = results
    .filter((r): r is HttpResult => r.kind === "http" && r.rps > 0)
    .map((r) => {
      const requests = r.rps * r.cpu.seconds;
      const per = names.map((n) => (r.cpu.wakeups[n] ?? 0) / requests);
      return [r.scenario, ...per.map((v) => v.toFixed(1)), per.reduce((a, b) => a + b, 0).toFixed(1)];
    });
  return markdownTable(head, rows, [false, ...names.map(() => true), true]);
}

function markdownTable(head: string[], rows: string[][], right: boolean[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (right[i] ? `${"-".repeat(w + 1)}:` : `${"-".repeat(w + 2)}`)).join("|")}|`;
  return [line(head), rule, ...rows.map(line)].join("\n");
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url;
  }
}

// ---------------------------------------------------------------------------------------------

try {
  await main();
  process.exitCode = 0;
} catch (error) {
  console.error(`\nbench failed: ${(error as Error).stack ?? error}`);
  process.exitCode = 1;
} finally {
  try {
    await teardown();
  } catch (error) {
    console.error((error as Error).message);
    process.exitCode = 1;
  }
}
process.exit(process.exitCode);
