import path from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_EPISODIC_CAPACITY, memoryCommands as commands, memoryStream, streams, systemClock, systemEventStream, type Clock } from "@intentmesh/contracts";
import { BusClient, ensureStream, OutboxRelay, serveCommand, serveHealth, type Bus, type RelayOptions } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { Subscription } from "@nats-io/transport-node";
import type { MemoryContext } from "./context";
import type { Guardrails } from "./domain/access";
import { outbox } from "./db/schema";
import { ExpirySweeper } from "./sweeper";
import { startTaskConsumer } from "./task-consumer";
import { createEntry, deleteEntry, getEntry, patchEntry } from "./handlers/entries";
import { queryEntries } from "./handlers/query";
import { batchDelete, batchWrite } from "./handlers/batch";
import { getNamespace, listNamespaces, patchNamespace } from "./handlers/namespaces";
import { memorySummary, setEpisodicCapacity } from "./handlers/summary";
import { lookupEntry, putEntry } from "./handlers/by-key";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export interface MemoryServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  /** How often expired entries are swept; default 10 s. */
  sweepIntervalMs?: number;
  episodicCapacity?: number;
  guardrails?: Guardrails;
  relay?: Partial<RelayOptions>;
}

export interface MemoryService {
  ctx: MemoryContext;
  relay: OutboxRelay;
  sweeper: ExpirySweeper;
  stop(): Promise<void>;
}

/** Migrates the schema, ensures the streams, serves every command subject, starts the relay, the sweeper and the task consumer. */
export async function startMemoryService(options: MemoryServiceOptions): Promise<MemoryService> {
  const { bus, database, logger } = options;
  await database.migrate("memory", MIGRATIONS_FOLDER);
  await ensureStream(bus, memoryStream);
  await ensureStream(bus, systemEventStream);
  await ensureStream(bus, streams.intents);

  const relay = new OutboxRelay(database.db, outbox, bus, logger, { name: "memory", ...options.relay });
  const ctx: MemoryContext = {
    db: database.db,
    query: database.query,
    clock: options.clock ?? systemClock,
    logger,
    client: new BusClient(bus, 5000),
    guardrails: options.guardrails ?? {},
    episodicCapacity: options.episodicCapacity ?? DEFAULT_EPISODIC_CAPACITY,
    published: () => relay.kick(),
  };
  const sweeper = new ExpirySweeper(ctx, options.sweepIntervalMs ?? 10_000);

  const subs: Subscription[] = [
    serveCommand(bus, commands.create, (input, caller) => createEntry(ctx, input.body, caller), logger),
    serveCommand(bus, commands.get, (input, caller) => getEntry(ctx, input.entry_id, caller), logger),
    serveCommand(bus, commands.patch, (input, caller) => patchEntry(ctx, input.entry_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, commands.delete, (input, caller) => deleteEntry(ctx, input.entry_id, caller), logger),
    serveCommand(bus, commands.query, async (input, caller) => {
      const page = await queryEntries(ctx, input.query, caller);
      // GET /agents/{id}/memory: the official Python client reads a bare list.
      return input.raw ? page.entries : page;
    }, logger),
    serveCommand(bus, commands.batch, (input, caller) => batchWrite(ctx, input.body, caller), logger),
    serveCommand(bus, commands.deleteBatch, (input, caller) => batchDelete(ctx, input.body, caller), logger),
    serveCommand(bus, commands.namespaces, (_input, caller) => listNamespaces(ctx, caller), logger),
    serveCommand(bus, commands.getNamespace, (input, caller) => getNamespace(ctx, input.namespace, caller), logger),
    serveCommand(bus, commands.patchNamespace, (input, caller) => patchNamespace(ctx, input.namespace, input.body, caller), logger),
    serveCommand(bus, commands.summary, (input, caller) => memorySummary(ctx, input.agent_id, caller), logger),
    serveCommand(bus, commands.lookup, (input, caller) => lookupEntry(ctx, input.agent_id, input.namespace, input.key, caller), logger),
    serveCommand(bus, commands.put, (input, caller) => putEntry(ctx, input.agent_id, input.namespace, input.key, input.if_match, input.body, caller), logger),
    serveCommand(bus, commands.setCapacity, (input, caller) => setEpisodicCapacity(ctx, input.agent_id, input.body.episodic_capacity, caller), logger),
    serveHealth(bus, "memory", { database, relay }, logger),
  ];
  const consumer = await startTaskConsumer(bus, ctx);
  relay.start();
  sweeper.start();
  logger.info({ database: database.kind }, "memory service started");

  return {
    ctx,
    relay,
    sweeper,
    stop: async () => {
      for (const sub of subs) sub.unsubscribe();
      await consumer.stop();
      await sweeper.stop();
      await relay.stop();
    },
  };
}
