import path from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_EPISODIC_CAPACITY, memoryCommands as commands, memoryStream, streams, systemEventStream, type Clock } from "@intentmesh/contracts";
import type { Bus, OutboxRelay, RelayOptions } from "@intentmesh/bus";
import { GovernanceChecks, IntentAccessChecks, IntentWriteChecks, openServiceCore } from "@intentmesh/service";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
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
import { intentsTouched } from "./intent-scope";

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
  const core = await openServiceCore({
    name: "memory",
    ...options,
    migrationsFolder: MIGRATIONS_FOLDER,
    streams: [memoryStream, systemEventStream, streams.intents],
    outbox,
  });
  const { database, logger, relay } = core;
  const ctx: MemoryContext = {
    db: database.db,
    query: database.query,
    clock: core.clock,
    logger,
    client: core.client,
    governance: new GovernanceChecks(core.client),
    writes: new IntentWriteChecks(core.client),
    guardrails: options.guardrails ?? {},
    episodicCapacity: options.episodicCapacity ?? DEFAULT_EPISODIC_CAPACITY,
    published: core.published,
  };
  const sweeper = new ExpirySweeper(ctx, options.sweepIntervalMs ?? 10_000);

  // Memory scoped to an intent is the intent's (RFC-0011, spec 5.6): each request is checked
  // against the ACL of every intent it touches before it runs. A create, a PATCH and a DELETE of
  // one entry ask it in their handlers, with their governance check in the same request
  // (scope-write-checks.ts).
  const access = new IntentAccessChecks(core.client);
  core.serve(commands, access.wrap(commands, {
    create: (input, caller) => createEntry(ctx, input.body, caller),
    get: (input, caller) => getEntry(ctx, input.entry_id, caller),
    patch: (input, caller) => patchEntry(ctx, input.entry_id, input.if_match, input.body, caller),
    delete: (input, caller) => deleteEntry(ctx, input.entry_id, caller),
    query: async (input, caller) => {
      const page = await queryEntries(ctx, input.query, caller);
      // GET /agents/{id}/memory: the official Python client reads a bare list.
      return input.raw ? page.entries : page;
    },
    batch: (input, caller) => batchWrite(ctx, input.body, caller),
    deleteBatch: (input, caller) => batchDelete(ctx, input.body, caller),
    namespaces: (_input, caller) => listNamespaces(ctx, caller),
    getNamespace: (input, caller) => getNamespace(ctx, input.namespace, caller),
    patchNamespace: (input, caller) => patchNamespace(ctx, input.namespace, input.body, caller),
    summary: (input, caller) => memorySummary(ctx, input.agent_id, caller),
    lookup: (input, caller) => lookupEntry(ctx, input.agent_id, input.namespace, input.key, caller),
    put: (input, caller) => putEntry(ctx, input.agent_id, input.namespace, input.key, input.if_match, input.body, caller),
    setCapacity: (input, caller) => setEpisodicCapacity(ctx, input.agent_id, input.body.episodic_capacity, caller),
  }, (command, input) => intentsTouched(ctx, command, input), ["create", "patch", "delete"]));
  const consumer = await startTaskConsumer(core.bus, ctx);
  const running = core.launch({ workers: [sweeper], running: [consumer] });
  return { ctx, relay, sweeper, stop: running.stop };
}
