import { systemClock, type Clock, type CommandDef } from "@intentmesh/contracts";
import { BusClient, ensureStream, OutboxRelay, serveCommand, serveHealth, type Bus, type CommandHandler, type OutboxTable, type RelayOptions, type StreamSpec } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { Subscription } from "@nats-io/transport-node";

/** A group of bus commands as the catalogue in libs/contracts declares them. */
export type CommandGroup = Record<string, CommandDef>;

/**
 * One handler per command of a group. A service that leaves a command of its group without a
 * handler does not type-check: the catalogue, not the service, says what must be answered.
 */
export type HandlersOf<G extends CommandGroup> = { [K in keyof G]: CommandHandler<G[K]> };

/** Something a service runs beside its command handlers: a sweeper, a projection, a consumer. */
export interface Stoppable {
  stop(): Promise<void>;
}
export interface Worker extends Stoppable {
  start(): void;
}

export interface ServiceCoreOptions {
  /** The service's name: its queue group, its migrations table, its relay and its health subject. */
  name: string;
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  migrationsFolder: string;
  /** The JetStream streams the service writes to or reads from, created or checked at start. */
  streams: readonly StreamSpec[];
  /** The service's outbox, relayed to the bus. */
  outbox: OutboxTable;
  relay?: Partial<RelayOptions>;
}

/** What every service shares: migrated schema, ensured streams, outbox relay, bus client, served commands. */
export interface ServiceCore {
  readonly name: string;
  readonly bus: Bus;
  readonly database: DatabaseHandle;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly relay: OutboxRelay;
  /** Requests to other services (5 s timeout). */
  readonly client: BusClient;
  /** Tells the relay a transaction that wrote outbox rows has committed, so it publishes now. */
  readonly published: () => void;
  /** Serves every command of a group (queue group `svc.<name>`); see HandlersOf. */
  serve<G extends CommandGroup>(commands: G, handlers: HandlersOf<G>): void;
  /**
   * Answers `im.<name>.health`, starts the relay and the workers, logs that the service started,
   * and returns how to stop it all: subscriptions first (no new work), then the parts in reverse
   * order, then the relay, so what the parts commit on the way out is still published.
   */
  launch(parts: { workers?: Worker[]; running?: Stoppable[]; health?: () => Promise<Record<string, unknown>>; started?: Record<string, unknown> }): Stoppable;
}

/** Migrates the service's schema and ensures its streams, then hands back the shared parts. */
export async function openServiceCore(options: ServiceCoreOptions): Promise<ServiceCore> {
  const { name, bus, database, logger } = options;
  await database.migrate(name, options.migrationsFolder);
  for (const stream of options.streams) await ensureStream(bus, stream);

  const relay = new OutboxRelay(database.db, options.outbox, bus, logger, { name, ...options.relay });
  const subscriptions: Subscription[] = [];
  return {
    name,
    bus,
    database,
    logger,
    clock: options.clock ?? systemClock,
    relay,
    client: new BusClient(bus, 5000),
    published: () => relay.kick(),
    serve(commands, handlers) {
      for (const key of Object.keys(commands)) {
        subscriptions.push(serveCommand(bus, commands[key]!, handlers[key]!, logger));
      }
    },
    launch({ workers = [], running = [], health, started = {} }) {
      subscriptions.push(serveHealth(bus, name, { database, relay }, logger, health));
      relay.start();
      for (const worker of workers) worker.start();
      logger.info({ database: database.kind, ...started }, `${name} service started`);
      const parts = [...running, ...workers];
      return {
        stop: async () => {
          for (const subscription of subscriptions) subscription.unsubscribe();
          for (const part of [...parts].reverse()) await part.stop();
          await relay.stop();
        },
      };
    },
  };
}
