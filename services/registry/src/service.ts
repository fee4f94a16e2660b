import path from "node:path";
import { fileURLToPath } from "node:url";
import { memoryStream, registryCommands as commands, streams, systemClock, type Clock } from "@intentmesh/contracts";
import { BusClient, ensureStream, OutboxRelay, serveCommand, serveHealth, type Bus, type RelayOptions } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { AddressPolicy } from "@intentmesh/ssrf";
import type { Subscription } from "@nats-io/transport-node";
import type { RegistryContext } from "./context";
import { outbox } from "./db/schema";
import { AgentSweeper } from "./sweeper";
import { startAssignmentProjection } from "./assignment-projection";
import { startMemoryProjection } from "./memory-projection";
import { registerAgent } from "./handlers/registration";
import { heartbeat } from "./handlers/heartbeat";
import { changeAgentStatus, deregisterAgent } from "./handlers/status";
import { agentBinding, getAgent, listAgentEvents, listAgents, poolCapacity } from "./handlers/queries";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export interface RegistryServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  sweepIntervalMs?: number;
  /** How often a draining agent's leases are counted; default 5 s. */
  drainCheckSeconds?: number;
  relay?: Partial<RelayOptions>;
  /** TEST-ONLY `allowLoopback` for origin_server_url (two clusters on one machine); never from production configuration. */
  outboundPolicy?: AddressPolicy;
}

export interface RegistryService {
  ctx: RegistryContext;
  relay: OutboxRelay;
  sweeper: AgentSweeper;
  stop(): Promise<void>;
}

/** Migrates the schema, ensures the stream, serves every command subject, starts the relay, the sweeper and the projection. */
export async function startRegistryService(options: RegistryServiceOptions): Promise<RegistryService> {
  const { bus, database, logger } = options;
  await database.migrate("registry", MIGRATIONS_FOLDER);
  await ensureStream(bus, streams.registry);
  await ensureStream(bus, streams.intents);
  await ensureStream(bus, memoryStream);

  const relay = new OutboxRelay(database.db, outbox, bus, logger, { name: "registry", ...options.relay });
  const clock = options.clock ?? systemClock;
  const ctx: RegistryContext = {
    db: database.db,
    query: database.query,
    clock,
    logger,
    client: new BusClient(bus, 5000),
    drainCheckSeconds: options.drainCheckSeconds ?? 5,
    outboundPolicy: options.outboundPolicy ?? {},
    published: () => relay.kick(),
  };
  const sweeper = new AgentSweeper(ctx, options.sweepIntervalMs ?? 1000);

  const subs: Subscription[] = [
    serveCommand(bus, commands.register, (input, caller) => registerAgent(ctx, input.body, caller), logger),
    serveCommand(bus, commands.get, (input, caller) => getAgent(ctx, input.agent_id, caller), logger),
    serveCommand(bus, commands.list, (input, caller) => listAgents(ctx, input.query, caller), logger),
    serveCommand(bus, commands.heartbeat, (input, caller) => heartbeat(ctx, input.agent_id, input.body, caller), logger),
    serveCommand(bus, commands.changeStatus, (input, caller) => changeAgentStatus(ctx, input.agent_id, input.if_match, input.body, caller), logger),
    serveCommand(bus, commands.deregister, (input, caller) => deregisterAgent(ctx, input.agent_id, input.if_match, caller), logger),
    serveCommand(bus, commands.listEvents, (input, caller) => listAgentEvents(ctx, input.agent_id, input.query, caller), logger),
    serveCommand(bus, commands.pool, (input, caller) => poolCapacity(ctx, input.role_id, caller), logger),
    serveCommand(bus, commands.binding, (input) => agentBinding(ctx, input.agent_id), logger),
    serveHealth(bus, "registry", { database, relay }, logger),
  ];
  const projection = await startAssignmentProjection(bus, database.db, clock, logger, () => relay.kick());
  const memoryProjection = await startMemoryProjection(bus, database.db, clock, logger, () => relay.kick());
  relay.start();
  sweeper.start();
  logger.info({ database: database.kind }, "registry service started");

  return {
    ctx,
    relay,
    sweeper,
    stop: async () => {
      for (const sub of subs) sub.unsubscribe();
      await projection.stop();
      await memoryProjection.stop();
      await sweeper.stop();
      await relay.stop();
    },
  };
}
