import path from "node:path";
import { fileURLToPath } from "node:url";
import { governanceCommands as commands, streams, systemClock, systemEventStream, type Caller, type Clock, type HumanRetryPolicy } from "@intentmesh/contracts";
import { BusClient, ensureStream, OutboxRelay, serveCommand, serveHealth, type Bus, type RelayOptions } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { Subscription } from "@nats-io/transport-node";
import type { GovernanceContext } from "./context";
import { outbox } from "./db/schema";
import { respond, suspend } from "./handlers/suspension";
import { createApproval, decideApproval, getApproval, grantedApprovals, listApprovals } from "./handlers/approvals";
import { engagementDecision } from "./handlers/engagement";
import { SuspensionTimer } from "./timer";
import { startSuspensionTracker } from "./tracker";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export interface GovernanceServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  /** How often the suspension timer looks for due suspensions; default 1 s. */
  timerIntervalMs?: number;
  /** The platform default human retry policy (SUSPENSION_DEFAULT_RETRY_POLICY). */
  defaultRetryPolicy?: HumanRetryPolicy | null;
  relay?: Partial<RelayOptions>;
}

export interface GovernanceService {
  ctx: GovernanceContext;
  relay: OutboxRelay;
  timer: SuspensionTimer;
  stop(): Promise<void>;
}

const SYSTEM_CALLER: Caller = { principal: "governance", roles: ["admin"], actor: "system", agent_id: null };

/** Migrates the schema, ensures the streams, serves every command subject, starts the relay, the tracker and the timer. */
export async function startGovernanceService(options: GovernanceServiceOptions): Promise<GovernanceService> {
  const { bus, database, logger } = options;
  await database.migrate("governance", MIGRATIONS_FOLDER);
  await ensureStream(bus, streams.intents);
  await ensureStream(bus, systemEventStream);

  const relay = new OutboxRelay(database.db, outbox, bus, logger, { name: "governance", ...options.relay });
  const ctx: GovernanceContext = {
    db: database.db,
    clock: options.clock ?? systemClock,
    logger,
    client: new BusClient(bus, 5000),
    defaultRetryPolicy: options.defaultRetryPolicy ?? null,
    systemCaller: SYSTEM_CALLER,
    published: () => relay.kick(),
  };
  const timer = new SuspensionTimer(ctx, options.timerIntervalMs ?? 1000);

  const subs: Subscription[] = [
    serveCommand(bus, commands.suspend, (input, caller) => suspend(ctx, input, caller), logger),
    serveCommand(bus, commands.respond, (input, caller) => respond(ctx, input, caller), logger),
    serveCommand(bus, commands.createApproval, (input, caller) => createApproval(ctx, input.intent_id, input.body, caller), logger),
    serveCommand(bus, commands.getApproval, (input) => getApproval(ctx, input.intent_id, input.approval_id), logger),
    serveCommand(bus, commands.listApprovals, (input) => listApprovals(ctx, input.intent_id, input.query), logger),
    serveCommand(bus, commands.approve, (input, caller) => decideApproval(ctx, input, "approved", caller), logger),
    serveCommand(bus, commands.deny, (input, caller) => decideApproval(ctx, input, "denied", caller), logger),
    serveCommand(bus, commands.serverConfig, async () => ({ protocol_version: "0.1", suspension: { default_retry_policy: ctx.defaultRetryPolicy } }), logger),
    serveCommand(bus, commands.grantedApprovals, (input) => grantedApprovals(ctx, input.intent_id, input.action), logger),
    serveCommand(bus, commands.decideEngagement, (input, caller) => engagementDecision(ctx, input.intent_id, input.body, caller), logger),
    serveHealth(bus, "governance", { database, relay }, logger),
  ];
  const tracker = await startSuspensionTracker(ctx, bus);
  relay.start();
  timer.start();
  logger.info({ database: database.kind }, "governance service started");

  return {
    ctx,
    relay,
    timer,
    stop: async () => {
      for (const sub of subs) sub.unsubscribe();
      await tracker.stop();
      await timer.stop();
      await relay.stop();
    },
  };
}
