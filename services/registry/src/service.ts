import path from "node:path";
import { fileURLToPath } from "node:url";
import { memoryStream, registryCommands as commands, streams, type Clock } from "@intentmesh/contracts";
import type { Bus, OutboxRelay, RelayOptions } from "@intentmesh/bus";
import { openServiceCore } from "@intentmesh/service";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { AddressPolicy } from "@intentmesh/ssrf";
import type { RegistryContext } from "./context";
import { outbox } from "./db/schema";
import { AgentSweeper } from "./sweeper";
import { startAssignmentProjection } from "./assignment-projection";
import { startMemoryProjection } from "./memory-projection";
import { registerAgent } from "./handlers/registration";
import { heartbeat } from "./handlers/heartbeat";
import { changeAgentStatus, deregisterAgent } from "./handlers/status";
import { agentBinding, getAgent, getAgentHealth, listAgentEvents, listAgents, poolCapacity } from "./handlers/queries";

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

/** Migrates the schema, ensures the streams, serves every command subject, starts the relay, the sweeper and the projections. */
export async function startRegistryService(options: RegistryServiceOptions): Promise<RegistryService> {
  const core = await openServiceCore({
    name: "registry",
    ...options,
    migrationsFolder: MIGRATIONS_FOLDER,
    streams: [streams.registry, streams.intents, memoryStream],
    outbox,
  });
  const { bus, database, logger, clock, relay } = core;
  const ctx: RegistryContext = {
    db: database.db,
    query: database.query,
    clock,
    logger,
    client: core.client,
    drainCheckSeconds: options.drainCheckSeconds ?? 5,
    outboundPolicy: options.outboundPolicy ?? {},
    published: core.published,
  };
  const sweeper = new AgentSweeper(ctx, options.sweepIntervalMs ?? 1000);

  core.serve(commands, {
    register: (input, caller) => registerAgent(ctx, input.body, caller),
    get: (input, caller) => getAgent(ctx, input.agent_id, caller),
    health: (input, caller) => getAgentHealth(ctx, input.agent_id, caller),
    list: (input, caller) => listAgents(ctx, input.query, caller),
    heartbeat: (input, caller) => heartbeat(ctx, input.agent_id, input.body, caller),
    changeStatus: (input, caller) => changeAgentStatus(ctx, input.agent_id, input.if_match, input.body, caller),
    deregister: (input, caller) => deregisterAgent(ctx, input.agent_id, input.if_match, caller),
    listEvents: (input, caller) => listAgentEvents(ctx, input.agent_id, input.query, caller),
    pool: (input, caller) => poolCapacity(ctx, input.role_id, caller),
    binding: (input) => agentBinding(ctx, input.agent_id),
  });
  const projection = await startAssignmentProjection(bus, database.db, clock, logger, core.published);
  const memoryProjection = await startMemoryProjection(bus, database.db, clock, logger, core.published);
  const running = core.launch({ workers: [sweeper], running: [projection, memoryProjection] });
  return { ctx, relay, sweeper, stop: running.stop };
}
