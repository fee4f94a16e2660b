import path from "node:path";
import { fileURLToPath } from "node:url";
import { streams, systemEventStream, triggersCommands as commands, type Clock } from "@intentmesh/contracts";
import type { Bus, OutboxRelay, RelayOptions } from "@intentmesh/bus";
import { IntentAccessChecks, openServiceCore } from "@intentmesh/service";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { TriggersContext } from "./context";
import { outbox } from "./db/schema";
import { startEventConsumer } from "./consumer";
import { TriggerScheduler, fireManually } from "./firing";
import { createScopedTrigger, createTrigger, deleteTrigger, getTrigger, listScopedTriggers, listTriggers, triggerHistory, updateTrigger } from "./handlers/triggers";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export interface TriggersServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  /** How often due schedules are claimed and pending firings dispatched; default 1 s. */
  schedulerIntervalMs?: number;
  relay?: Partial<RelayOptions>;
}

export interface TriggersService {
  ctx: TriggersContext;
  relay: OutboxRelay;
  scheduler: TriggerScheduler;
  stop(): Promise<void>;
}

/** Migrates the schema, ensures the streams, serves every trigger subject, starts the relay, the scheduler and the event consumer. */
export async function startTriggersService(options: TriggersServiceOptions): Promise<TriggersService> {
  const core = await openServiceCore({
    name: "triggers",
    ...options,
    migrationsFolder: MIGRATIONS_FOLDER,
    streams: [systemEventStream, streams.intents, streams.registry],
    outbox,
  });
  let scheduler: TriggerScheduler | undefined;
  const ctx: TriggersContext = {
    db: core.database.db,
    clock: core.clock,
    logger: core.logger,
    client: core.client,
    published: core.published,
    dispatchSoon: () => scheduler?.kick(),
  };
  scheduler = new TriggerScheduler(ctx, options.schedulerIntervalMs ?? 1000);

  // RFC-0011: the MCP server's triggers scoped to an intent are checked against its ACL first.
  const access = new IntentAccessChecks(core.client);
  core.serve(commands, access.wrap(commands, {
    create: (input, caller) => createTrigger(ctx, input.body, caller),
    list: (input) => listTriggers(ctx, input.query),
    get: (input) => getTrigger(ctx, input.trigger_id),
    update: (input) => updateTrigger(ctx, input.trigger_id, input.if_match, input.body),
    delete: (input) => deleteTrigger(ctx, input.trigger_id),
    fire: (input) => fireManually(ctx, input.trigger_id),
    history: (input) => triggerHistory(ctx, input.trigger_id, input.query.limit),
    createScoped: (input, caller) => createScopedTrigger(ctx, input.intent_id, input.body, caller),
    listScoped: (input) => listScopedTriggers(ctx, input.intent_id),
    deleteScoped: (input) => deleteTrigger(ctx, input.trigger_id, input.intent_id),
  }));
  const consumer = await startEventConsumer(core.bus, ctx);
  const running = core.launch({ workers: [scheduler], running: [consumer] });
  return { ctx, relay: core.relay, scheduler, stop: running.stop };
}
