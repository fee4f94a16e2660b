import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { inject } from "vitest";
import type { Server } from "node:http";
import { apiRoutes, ManualClock, type Caller, type Clock, type HumanRetryPolicy } from "@intentmesh/contracts";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, type DatabaseHandle } from "@intentmesh/db";
import { baseConfigSchema, createLogger, type Logger } from "@intentmesh/telemetry";
import type { Connector, Resolver } from "@intentmesh/ssrf";
import type { AnyServiceDefinition, OptionsOf, ServiceOf } from "@intentmesh/service";
import { CLUSTER_SERVICES, type ServiceName } from "@intentmesh/contracts";
import { clusterServices, type ClusterServices } from "../../services/cluster";
import type { FederationSettings } from "../../services/federation/src/settings";
import { createGateway, VERSION, type Gateway } from "../../services/gateway/src/app";
import { buildOpenApi } from "../../services/gateway/src/openapi";
import { requestBodyChecker } from "./openapi-bodies";
import { KeyRing } from "../../services/vault/src/crypto/envelope";
import type { IdentitySettings, ToolProxySettings } from "../../services/vault/src/context";
import { ApiKeys } from "../../services/gateway/src/api-keys";
import { createTestDatabase, testNamespace } from "./backends";
import { createClient, type Intentmesh } from "@intentmesh/sdk";
import { eventsOffCatalogue } from "./event-check";

export const TEST_KEYS = {
  admin: "test-admin-key-0000000000000000",
  coordinator: "test-coordinator-key-000000000000",
  operator: "test-operator-key-0000000000000",
  agent: "test-agent-key-000000000000000000",
  other: "test-other-agent-key-000000000000",
  /** A peer server's key (role federation): what another cluster sends to this one's receive and callbacks. */
  federation: "test-federation-peer-key-000000000",
} as const;

/** Every service of the cluster, by name, as it was started (services/cluster.ts). */
export type RunningServices = { [Name in ServiceName]: ServiceOf<ClusterServices[Name]> };

export interface TestCluster extends RunningServices {
  baseUrl: string;
  bus: Bus;
  /** Speaks to the services over the bus, as another team's service would. */
  client: BusClient;
  database: DatabaseHandle;
  /** The connection URL of the cluster's own database (a directory for an embedded one). */
  databaseUrl: string;
  /** `federation` always runs; it is disabled (404 FEDERATION_DISABLED) unless the cluster was started with `federation`. */
  gateway: Gateway;
  clock: Clock;
  namespace: string;
  /** fetch against the gateway with a key (admin by default) and JSON handling. */
  api(path: string, init?: ApiInit): Promise<ApiResponse>;
  /**
   * The typed client (packages/sdk) against the gateway with a test key (admin by default), acting
   * as `agentId` when given: requests and answers typed by the route catalogue, errors thrown as
   * IntentmeshError with the status and code. End-to-end tests use it rather than `api`, whose
   * bodies are `any`, except where a test sends what the types forbid on purpose.
   */
  sdk(key?: keyof typeof TEST_KEYS, agentId?: string): Intentmesh;
  stop(): Promise<void>;
}

export interface ApiInit {
  method?: string;
  body?: unknown;
  rawBody?: string;
  key?: keyof typeof TEST_KEYS | null;
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export interface ClusterOptions {
  clock?: Clock;
  ssePingMs?: number;
  bodyLimit?: string;
  leaseSweepIntervalMs?: number;
  /** The checkpoint schedule of the intents service (its sweeper runs only when a test calls sweep()). */
  checkpoints?: { batchEvents?: number; maxAgeMs?: number };
  /** Run on an embedded PGlite database in a temporary directory instead of PostgreSQL. */
  embedded?: boolean;
  /** A PostgreSQL server of the test's own to create the database on (fault tests crash it). */
  databaseAdminUrl?: string;
  /** A NATS server of the test's own (fault tests stop and restart it). */
  natsUrl?: string;
  /** The platform default human retry policy of the governance service. */
  defaultRetryPolicy?: HumanRetryPolicy;
  /** Where log lines go, at debug level, for tests that read them. */
  logDestination?: { write(line: string): void };
  /** Memory service options (episodic capacity, guardrails). */
  memory?: { episodicCapacity?: number; guardrails?: import("../../services/memory/src/domain/access").Guardrails };
  /** Enables federation; the server URL is the gateway's own address unless given. */
  federation?: FederationClusterOptions;
  /**
   * false: an error code a route does not declare passes through instead of becoming a 500. Only
   * for the fuzz test, whose random inputs reach codes on no fixed schedule; every other test
   * holds the routes to their declarations (routeErrorChecks).
   */
  strictRouteErrors?: boolean;
  /** The vault's key-encryption keys (default: one random test key), its tool proxy (default: global unicast only) and identity timings. */
  vault?: { keys?: KeyRing; proxy?: Partial<ToolProxySettings>; identity?: Partial<IdentitySettings> };
}

/** A key ring of one random key, for tests. */
export function testKeyRing(id = "test-1"): KeyRing {
  return new KeyRing(new Map([[id, crypto.getRandomValues(Buffer.alloc(32))]]), id);
}

export interface FederationClusterOptions extends Partial<Omit<FederationSettings, "enabled">> {
  /** A PKCS#8 PEM Ed25519 key; else a development key is generated under a temporary data directory. */
  signingKeyPem?: string;
  /** Name resolution of outbound calls (tests resolve probe names through a fake resolver, never DNS). */
  resolve?: Resolver;
  /** The connect step of outbound calls (a tripwire that refuses anything but loopback). */
  connect?: Connector;
}

function embeddedDatabase() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "im-pglite-"));
  return { url: dir, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** The whole cluster in this process, on a database and bus namespace of its own, as an agent sees it over HTTP. */
export async function startTestCluster(options: ClusterOptions = {}): Promise<TestCluster> {
  const testDb = options.embedded ? embeddedDatabase() : await createTestDatabase(options.databaseAdminUrl ?? inject("databaseUrl"));
  const namespace = testNamespace();
  const logFile = process.env.TEST_LOG_FILE;
  const logger = options.logDestination
    ? createLogger("test", "debug", options.logDestination)
    : logFile
      ? createLogger("test", "debug", { write: (line: string) => fs.appendFileSync(logFile, line) })
      : createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
  // Named statements as in a service (libs/db statement-names.ts): on unless DATABASE_STATEMENT_NAMES=off.
  const statementNames = baseConfigSchema.shape.DATABASE_STATEMENT_NAMES.parse(process.env.DATABASE_STATEMENT_NAMES) === "on";
  const database = options.embedded ? await openDatabase({ dataDir: testDb.url }) : await openDatabase({ url: testDb.url, poolSize: 5, statementNames });
  const bus = await connectBus(options.natsUrl ?? inject("natsUrl"), `test-${namespace}`, namespace);
  // Every answer of every command is held to its command's output; the services are held to
  // their commands' error codes exactly when the gateway is held to its routes'.
  bus.checks = { outputs: true, errors: options.strictRouteErrors !== false };
  const clock = options.clock ?? new ManualClock(new Date());
  // The gateway first: federation's server URL (and with it its did:web) is the gateway's address.
  const { gateway, baseUrl, api } = await startTestGateway(bus, logger, {
    ssePingMs: options.ssePingMs,
    bodyLimit: options.bodyLimit,
    federation: Boolean(options.federation),
    strictRouteErrors: options.strictRouteErrors,
  });
  const federationDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "im-federation-"));
  const { signingKeyPem, resolve, connect, ...federationSettings } = options.federation ?? {};
  // What tests change of each service. Timers run only when a test calls their sweep() on the
  // manual clock (hour-long intervals); everything else is what the service's own defaults are.
  const testOptions: { [Name in ServiceName]: Partial<OptionsOf<ClusterServices[Name]>> } = {
    intents: { leaseSweepIntervalMs: options.leaseSweepIntervalMs ?? 3_600_000, checkpoints: { intervalMs: 3_600_000, ...options.checkpoints } },
    // TEST-ONLY: the loopback allowance follows the federation option of the one test that sets it.
    registry: { sweepIntervalMs: 3_600_000, outboundPolicy: { allowLoopback: options.federation?.allowLoopback ?? false } },
    memory: { sweepIntervalMs: 3_600_000, ...options.memory },
    federation: {
      settings: { serverUrl: baseUrl, ...federationSettings, enabled: Boolean(options.federation) },
      key: { pem: signingKeyPem, dataDir: federationDataDir },
      resolve,
      connect,
      callbackIntervalMs: 200,
    },
    governance: { timerIntervalMs: 3_600_000, defaultRetryPolicy: options.defaultRetryPolicy },
    channels: { sweepIntervalMs: 3_600_000 },
    triggers: { schedulerIntervalMs: 3_600_000 },
    vault: { sweepIntervalMs: 3_600_000, keys: options.vault?.keys ?? testKeyRing(), proxy: options.vault?.proxy, identity: options.vault?.identity },
  };
  const services = {} as RunningServices;
  for (const name of CLUSTER_SERVICES) {
    const definition = clusterServices[name] as AnyServiceDefinition;
    (services as Record<ServiceName, unknown>)[name] = await definition.start({ bus, database, logger, clock, ...testOptions[name] });
  }

  return {
    baseUrl,
    bus,
    client: new BusClient(bus, 10_000),
    database,
    databaseUrl: testDb.url,
    ...services,
    gateway,
    clock,
    namespace,
    api,
    sdk: (key = "admin", agentId) => createClient({ baseUrl, apiKey: TEST_KEYS[key], agentId, retry: { baseDelayMs: 10 } }),
    stop: async () => {
      // Every event this test wrote must be what the event catalogue promises its readers.
      const offCatalogue = await eventsOffCatalogue(database).catch(() => []);
      await gateway.stop();
      for (const name of [...CLUSTER_SERVICES].reverse()) await services[name].stop();
      await deleteNamespaceStreams(bus, namespace);
      await bus.close();
      await database.close();
      await testDb.drop();
      fs.rmSync(federationDataDir, { recursive: true, force: true });
      if (offCatalogue.length) throw new Error(`events that do not match the event catalogue:\n${offCatalogue.slice(0, 20).join("\n")}`);
    },
  };
}

/** The API keys of TEST_KEYS: admin, coordinator, operator, two agent keys (principals agent-1 and agent-2) and a peer server's key (role federation). */
export function testApiKeys(): ApiKeys {
  return new ApiKeys([
    { key: TEST_KEYS.admin, principal: "admin", roles: ["admin"] },
    { key: TEST_KEYS.coordinator, principal: "coordinator", roles: ["coordinator"] },
    { key: TEST_KEYS.operator, principal: "operator", roles: ["operator"] },
    { key: TEST_KEYS.agent, principal: "agent-1", roles: ["agent"] },
    { key: TEST_KEYS.other, principal: "agent-2", roles: ["agent"] },
    { key: TEST_KEYS.federation, principal: "peer-server", roles: ["federation"] },
  ]);
}

/**
 * Every test gateway answers only the error codes its routes declare (libs/contracts/src/api):
 * an undeclared one becomes a 500 and fails the test that met it. IM_ROUTE_ERRORS_LOG=<file>
 * records every (operation, code) instead, which is how the declarations are gathered.
 */
function routeErrorChecks(strict: boolean) {
  const log = process.env.IM_ROUTE_ERRORS_LOG;
  if (!log) return { strict };
  return { record: (operationId: string, code: string) => fs.appendFileSync(log, `${JSON.stringify([operationId, code])}\n`) };
}

let checker: ReturnType<typeof requestBodyChecker> | undefined;
/** The request-body check of the served document, built once per test file. */
const documentedBodies = () => (checker ??= requestBodyChecker(buildOpenApi(apiRoutes, VERSION)));

/** A gateway with the test keys on a free local port, on the given bus, and `api` against it. */
export async function startTestGateway(
  bus: Bus,
  logger: Logger,
  options: { ssePingMs?: number; bodyLimit?: string; busTimeoutMs?: number; federation?: boolean; corsOrigins?: string[]; strictRouteErrors?: boolean; directRoutes?: boolean } = {},
): Promise<{ gateway: Gateway; baseUrl: string; api: TestCluster["api"] }> {
  const { strictRouteErrors = true, ...gatewayOptions } = options;
  const gateway = await createGateway({
    bus,
    keys: testApiKeys(),
    logger,
    routeErrors: routeErrorChecks(strictRouteErrors),
    checkResponses: true,
    // Every body the server accepts must be one its OpenAPI document accepts (issue 23 item 9).
    checkRequest: documentedBodies(),
    ...gatewayOptions,
  });
  const server: Server = await gateway.listen(0, "127.0.0.1");
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const baseUrl = `http://127.0.0.1:${port}`;
  return { gateway, baseUrl, api: gatewayApi(baseUrl) };
}

/** fetch against a gateway with a key (admin by default) and JSON handling; paths without /api/v1 get it. */
export function gatewayApi(baseUrl: string): TestCluster["api"] {
  return async (path: string, init: ApiInit = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    const key = init.key === undefined ? "admin" : init.key;
    if (key) headers["X-API-Key"] = TEST_KEYS[key];
    let body: string | undefined = init.rawBody;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers["Content-Type"] ??= "application/json";
    }
    const res = await fetch(`${baseUrl}${path.startsWith("/api") || path.startsWith("/v1") || path.startsWith("/.") || path.startsWith("/docs") || path.startsWith("/openapi") || path.startsWith("/healthz") || path.startsWith("/readyz") ? path : `/api/v1${path}`}`, {
      method: init.method ?? (body === undefined ? "GET" : "POST"),
      headers,
      body,
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return { status: res.status, headers: res.headers, body: parsed };
  };
}

/** Deletes every stream of a bus namespace (and with them their consumers). */
export async function deleteNamespaceStreams(bus: Bus, namespace: string): Promise<void> {
  for await (const stream of bus.jsm.streams.list()) {
    if (stream.config.name.startsWith(namespace.toUpperCase())) await bus.jsm.streams.delete(stream.config.name);
  }
}

/** A caller acting as the agent `id`, for tests that speak to the services over the bus. */
export const agentCaller = (id: string): Caller => ({ principal: id, roles: ["agent"], actor: id, agent_id: id });
