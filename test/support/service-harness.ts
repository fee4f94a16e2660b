import { expect, inject } from "vitest";
import { ManualClock, type OperationId, type ServiceName, type CommandDef, type CommandInput, type CommandOutput, type Caller } from "@intentmesh/contracts";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, type DatabaseHandle } from "@intentmesh/db";
import { createLogger } from "@intentmesh/telemetry";
import type { AnyServiceDefinition, OptionsOf, ServiceOf } from "@intentmesh/service";
import { clusterServices, type ClusterServices } from "../../services/cluster";
import { createTestDatabase, testNamespace } from "./backends";
import { createClient } from "@intentmesh/sdk";
import { deleteNamespaceStreams, startTestGateway, TEST_KEYS, type TestCluster } from "./cluster";
import { typedApi, type OperationResponse } from "./typed-api";
import { eventsOffCatalogue } from "./event-check";

/** What a service's start function takes in tests: the harness's connections and clock. */
export interface HarnessConnections {
  bus: Bus;
  database: DatabaseHandle;
  logger: ReturnType<typeof createLogger>;
  clock: ManualClock;
  /** The connection URL of the harness's database, for a test that opens a pool of its own on it. */
  databaseUrl: string;
}

export interface ServiceHarness<S> {
  service: S;
  bus: Bus;
  database: DatabaseHandle;
  /** The connection URL of the harness's own database, as TestCluster's `databaseUrl`. */
  databaseUrl: string;
  clock: ManualClock;
  /** Speaks to the services over the bus, as TestCluster's `client` does. */
  client: BusClient;
  /** Commands over the bus, with inputs typed by the catalogue. */
  call<C extends CommandDef>(command: C, input: CommandInput<C>, caller?: Caller): Promise<CommandOutput<C>>;
  /** The REST API through a gateway in front of this one service (other services' routes answer 503). */
  api: ReturnType<typeof typedApi>;
  rawApi: TestCluster["api"];
  /** The harness's gateway, for a client built by hand. */
  baseUrl: string;
  /** The same typed client as TestCluster's `sdk`, against this harness's gateway: a test moves between lanes by its setup alone. */
  sdk: TestCluster["sdk"];
  stop(): Promise<void>;
}

const ADMIN: Caller = { principal: "harness", roles: ["admin"], actor: "harness", agent_id: null };

/**
 * One service alone against the real NATS and PostgreSQL, in a database and bus namespace of its
 * own, with a gateway in front: for the rules a service keeps by itself, without the whole cluster.
 */
export async function startServiceHarness<S extends { stop(): Promise<void> }>(start: (connections: HarnessConnections) => Promise<S>): Promise<ServiceHarness<S>> {
  const testDb = await createTestDatabase(inject("databaseUrl"));
  const namespace = testNamespace();
  const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
  const database = await openDatabase({ url: testDb.url, poolSize: 5 });
  const bus = await connectBus(inject("natsUrl"), `harness-${namespace}`, namespace);
  // Every answer and error code of the service is held to its command's catalogue entry.
  bus.checks = { outputs: true, errors: true };
  const clock = new ManualClock(new Date());
  const service = await start({ bus, database, logger, clock, databaseUrl: testDb.url });
  const { gateway, baseUrl, api } = await startTestGateway(bus, logger);
  const client = new BusClient(bus, 10_000);
  return {
    service,
    bus,
    database,
    databaseUrl: testDb.url,
    clock,
    client,
    call: (command, input, caller = ADMIN) => client.request(command, caller, input),
    api: typedApi(api),
    rawApi: api,
    baseUrl,
    sdk: (key = "admin", agentId) => createClient({ baseUrl, apiKey: TEST_KEYS[key], agentId, retry: { baseDelayMs: 10 } }),
    stop: async () => {
      // As in the whole-cluster tests: every event the service wrote must match the event catalogue.
      const offCatalogue = await eventsOffCatalogue(database);
      await gateway.stop();
      await service.stop();
      await deleteNamespaceStreams(bus, namespace);
      await bus.close();
      await database.close();
      await testDb.drop();
      if (offCatalogue.length) throw new Error(`events that do not match the event catalogue:\n${offCatalogue.slice(0, 20).join("\n")}`);
    },
  };
}

/**
 * Services of the manifest (services/cluster.ts) on the harness's connections, as one thing for
 * startServiceHarness: started in the order of `options`' keys, stopped in the reverse order, each
 * with the options the test changes. For the service under test and, before it, only those it
 * asks on every request (the gateway asks the registry whom an X-Agent-ID is bound to; channels
 * ask the intents service for the intent's ACL): the rules under test stay the one service's.
 */
export function manifestServices<const Names extends ServiceName>(options: { [Name in Names]: Partial<OptionsOf<ClusterServices[Name]>> }) {
  type Running = { [Name in Names]: ServiceOf<ClusterServices[Name]> };
  return async ({ databaseUrl: _url, ...connections }: HarnessConnections): Promise<Running & { stop(): Promise<void> }> => {
    const order = Object.keys(options) as Names[];
    const started = {} as Running;
    for (const name of order) {
      const definition = clusterServices[name] as AnyServiceDefinition;
      (started as Record<string, unknown>)[name] = await definition.start({ ...connections, ...options[name] });
    }
    return {
      ...started,
      stop: async () => {
        for (const name of [...order].reverse()) await (started[name] as { stop(): Promise<void> }).stop();
      },
    };
  };
}

/**
 * Each service's options with its timers an hour apart (sweeps, checkpoints, schedulers), so they
 * run only when a test calls them on the manual clock; for manifestServices, e.g.
 * `manifestServices({ registry: QUIET.registry, intents: QUIET.intents })`.
 */
export const QUIET = {
  intents: { leaseSweepIntervalMs: 3_600_000, checkpoints: { intervalMs: 3_600_000 } },
  registry: { sweepIntervalMs: 3_600_000 },
  governance: { timerIntervalMs: 3_600_000 },
  channels: { sweepIntervalMs: 3_600_000 },
  memory: { sweepIntervalMs: 3_600_000 },
} satisfies { [Name in ServiceName]?: Partial<OptionsOf<ClusterServices[Name]>> };

/** An error body with the fields some codes add beside code, message and details (ENTRY_EXISTS' entry_id, a 409's current entry, a title). */
export type ErrorAnswer = { code: string; message: string; details: Record<string, unknown> } & Record<string, unknown>;

/** The error of a refused typed call, its status and code checked and the one error shape held; extra top-level fields of the body included. */
export function expectApiError(res: Pick<OperationResponse<OperationId>, "status" | "error">, status: number, code: string): ErrorAnswer {
  const body = res.error();
  expect({ status: res.status, code: body.code }, JSON.stringify(body)).toEqual({ status, code });
  expect(body.message.length).toBeGreaterThan(0);
  expect(body.details).toBeTypeOf("object");
  expect(body.details).not.toBeNull();
  return body as ErrorAnswer;
}
