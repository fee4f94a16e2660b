import path from "node:path";
import { fileURLToPath } from "node:url";
import { attachmentCommands, taskCommands, costsCommands, portfoliosCommands, suspensionCommands, governancePolicyCommands, intentsCommands as commands, retryCommands, streams, systemClock, systemEventStream, type Clock } from "@intentmesh/contracts";
import { BusClient, ensureStream, OutboxRelay, serveCommand, serveHealth, type Bus, type RelayOptions } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { Subscription } from "@nats-io/transport-node";
import type { IntentsContext } from "./context";
import { outbox } from "./db/schema";
import { LeaseSweeper } from "./lease-sweeper";
import { addMember, createPortfolio, getPortfolio, listPortfolioEvents, listPortfolios, portfoliosOfIntent, removeMember, updatePortfolio } from "./handlers/portfolios";
import { beginSuspension, endSuspension } from "./handlers/suspension";
import { startPortfolioProjection, type PortfolioProjection } from "./portfolio-projection";
import { checkGovernanceFor, getGovernancePolicy, removeGovernancePolicy, setGovernancePolicy } from "./handlers/governance";
import { createIntent, getIntent, listIntents } from "./handlers/intents";
import { patchState } from "./handlers/state";
import { transitionStatus } from "./handlers/status";
import { appendEvent, listEvents } from "./handlers/events";
import { assignAgent, listAssignments, unassignAgent } from "./handlers/agents";
import { acquireLease, getLease, leasesHeldBy, listLeases, releaseLease, renewLease } from "./handlers/leases";
import { startAgentLifecycleProjection } from "./agent-lifecycle-projection";
import { startSystemEventConsumer } from "./system-event-consumer";
import { createAttachment, deleteAttachment, listAttachments } from "./handlers/attachments";
import { getRetryPolicy, putRetryPolicy } from "./handlers/retry-policy";
import { listFailures, recordFailure } from "./handlers/failures";
import { listCosts, recordCost, setBudget } from "./handlers/costs";
import { cancelTask, claimTask, completeTask, createTask, failTask, getTask, listTasks, patchTask, startTask, unknownTasksOf } from "./handlers/tasks";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export interface IntentsServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  leaseSweepIntervalMs?: number;
  relay?: Partial<RelayOptions>;
}

export interface IntentsService {
  ctx: IntentsContext;
  relay: OutboxRelay;
  sweeper: LeaseSweeper;
  /** Portfolios follow their members through this consumer of status_changed. */
  portfolioProjection: PortfolioProjection;
  stop(): Promise<void>;
}

/** Migrates the schema, ensures the stream, serves every command subject, starts the relay and the sweeper. */
export async function startIntentsService(options: IntentsServiceOptions): Promise<IntentsService> {
  const { bus, database, logger } = options;
  await database.migrate("intents", MIGRATIONS_FOLDER);
  await ensureStream(bus, streams.intents);
  await ensureStream(bus, streams.portfolios);
  await ensureStream(bus, streams.registry);
  await ensureStream(bus, systemEventStream);

  const relay = new OutboxRelay(database.db, outbox, bus, logger, { name: "intents", ...options.relay });
  const ctx: IntentsContext = {
    db: database.db,
    query: database.query,
    clock: options.clock ?? systemClock,
    logger,
    client: new BusClient(bus, 5000),
    published: () => relay.kick(),
  };
  const sweeper = new LeaseSweeper(ctx, options.leaseSweepIntervalMs ?? 1000);

  const subs: Subscription[] = [
    serveCommand(bus, governancePolicyCommands.set, (input, caller) => setGovernancePolicy(ctx, input.intent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, governancePolicyCommands.get, (input) => getGovernancePolicy(ctx, input.intent_id), logger),
    serveCommand(bus, governancePolicyCommands.remove, (input, caller) => removeGovernancePolicy(ctx, input.intent_id, input.if_match, caller), logger),
    serveCommand(bus, governancePolicyCommands.check, (input, caller) => checkGovernanceFor(ctx, input.intent_id, input.kind, caller), logger),
    serveCommand(bus, commands.create, (input, caller) => createIntent(ctx, input.body, caller, input.intent_id), logger),
    serveCommand(bus, commands.get, (input) => getIntent(ctx, input.intent_id), logger),
    serveCommand(bus, commands.list, (input) => listIntents(ctx, input.query), logger),
    serveCommand(bus, commands.patchState, (input, caller) => patchState(ctx, input.intent_id, input.if_match, input.patches, caller), logger),
    serveCommand(bus, commands.transition, (input, caller) => transitionStatus(ctx, input.intent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, commands.appendEvent, (input, caller) => appendEvent(ctx, input.intent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, commands.listEvents, (input) => listEvents(ctx, input.intent_id, input.query), logger),
    serveCommand(bus, commands.assignAgent, (input, caller) => assignAgent(ctx, input.intent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, commands.listAgents, (input) => listAssignments(ctx, input.intent_id), logger),
    serveCommand(bus, commands.unassignAgent, (input, caller) => unassignAgent(ctx, input.intent_id, input.if_match, input.agent_id, caller), logger),
    serveCommand(bus, commands.acquireLease, (input, caller) => acquireLease(ctx, input.intent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, commands.renewLease, (input, caller) => renewLease(ctx, input.intent_id, input.if_match, input.lease_id, input.body, caller), logger),
    serveCommand(bus, commands.releaseLease, (input, caller) => releaseLease(ctx, input.intent_id, input.if_match, input.lease_id, caller), logger),
    serveCommand(bus, commands.getLease, (input) => getLease(ctx, input.intent_id, input.lease_id), logger),
    serveCommand(bus, commands.leasesHeld, (input) => leasesHeldBy(ctx, input.agent_ids), logger),
    serveCommand(bus, commands.listLeases, (input) => listLeases(ctx, input.intent_id, input.query.active === "true"), logger),
    serveCommand(bus, portfoliosCommands.create, (input, caller) => createPortfolio(ctx, input.body, caller), logger),
    serveCommand(bus, portfoliosCommands.get, (input) => getPortfolio(ctx, input.portfolio_id), logger),
    serveCommand(bus, portfoliosCommands.list, (input) => listPortfolios(ctx, input.query), logger),
    serveCommand(bus, portfoliosCommands.update, (input, caller) => updatePortfolio(ctx, input.portfolio_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, portfoliosCommands.addMember, (input, caller) => addMember(ctx, input.portfolio_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, portfoliosCommands.removeMember, (input, caller) => removeMember(ctx, input.portfolio_id, input.if_match, input.intent_id, caller), logger),
    serveCommand(bus, portfoliosCommands.listEvents, (input) => listPortfolioEvents(ctx, input.portfolio_id, input.query), logger),
    serveCommand(bus, portfoliosCommands.ofIntent, (input) => portfoliosOfIntent(ctx, input.intent_id, input.query), logger),
    serveCommand(bus, suspensionCommands.begin, (input, caller) => beginSuspension(ctx, input, caller), logger),
    serveCommand(bus, suspensionCommands.end, (input, caller) => endSuspension(ctx, input, caller), logger),
    serveCommand(bus, attachmentCommands.create, (input, caller) => createAttachment(ctx, input.intent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, attachmentCommands.list, (input) => listAttachments(ctx, input.intent_id, input.query), logger),
    serveCommand(bus, attachmentCommands.delete, (input, caller) => deleteAttachment(ctx, input.intent_id, input.if_match, input.attachment_id, caller), logger),
    serveCommand(bus, retryCommands.putPolicy, (input) => putRetryPolicy(ctx, input.intent_id, input.if_match, input.body), logger),
    serveCommand(bus, retryCommands.getPolicy, (input) => getRetryPolicy(ctx, input.intent_id), logger),
    serveCommand(bus, retryCommands.recordFailure, (input, caller) => recordFailure(ctx, input.intent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, retryCommands.listFailures, (input) => listFailures(ctx, input.intent_id, input.query), logger),
    serveCommand(bus, costsCommands.record, (input, caller) => recordCost(ctx, input.intent_id, input.body, caller), logger),
    serveCommand(bus, costsCommands.list, (input) => listCosts(ctx, input.intent_id, input.query), logger),
    serveCommand(bus, costsCommands.setBudget, (input, caller) => setBudget(ctx, input.intent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, taskCommands.create, (input, caller) => createTask(ctx, input.intent_id, input.body, caller), logger),
    serveCommand(bus, taskCommands.get, (input) => getTask(ctx, input.task_id), logger),
    serveCommand(bus, taskCommands.list, (input) => listTasks(ctx, input.intent_id, input.query), logger),
    serveCommand(bus, taskCommands.patch, (input, caller) => patchTask(ctx, input.task_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, taskCommands.claim, (input, caller) => claimTask(ctx, input.task_id, input.if_match, caller), logger),
    serveCommand(bus, taskCommands.start, (input, caller) => startTask(ctx, input.task_id, input.if_match, caller), logger),
    serveCommand(bus, taskCommands.complete, (input, caller) => completeTask(ctx, input.task_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, taskCommands.fail, (input, caller) => failTask(ctx, input.task_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, taskCommands.cancel, (input, caller) => cancelTask(ctx, input.task_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, taskCommands.held, (input) => unknownTasksOf(ctx, input.agent_id, input.task_ids), logger),
    serveHealth(bus, "intents", { database, relay }, logger),
  ];
  const agentLifecycle = await startAgentLifecycleProjection(bus, database.db, ctx.clock, logger, () => relay.kick());
  const systemEvents = await startSystemEventConsumer(bus, database.db, ctx.clock, logger, () => relay.kick());
  const portfolioProjection = await startPortfolioProjection(ctx, bus);
  relay.start();
  sweeper.start();
  logger.info({ database: database.kind }, "intents service started");

  return {
    ctx,
    relay,
    sweeper,
    portfolioProjection,
    stop: async () => {
      for (const sub of subs) sub.unsubscribe();
      await portfolioProjection.stop();
      await agentLifecycle.stop();
      await systemEvents.stop();
      await sweeper.stop();
      await relay.stop();
    },
  };
}
