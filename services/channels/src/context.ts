import type { Caller, Clock } from "@intentmesh/contracts";
import type { Bus, BusClient } from "@intentmesh/bus";
import type { IntentWriteChecks } from "@intentmesh/service";
import type { Database, DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { RememberedChannels } from "./remembered-channels";

/** What every handler of the channels service works with. */
export interface ChannelsContext {
  db: Database;
  /** Named prepared statements outside a transaction (the one-statement message write). */
  query: DatabaseHandle["query"];
  clock: Clock;
  logger: Logger;
  /** Requests to the intents service (intent access, governance) and the registry (role_id). */
  client: BusClient;
  /** Each message's access (rule 6) and governance (spec 2.11) checks, asked together, sent together per event-loop turn. */
  writes: IntentWriteChecks;
  /** The bus itself: an ask follows its channel's published messages for the response. */
  bus: Bus;
  /** The channel rows sends have read, for the next message to the same channel. */
  remembered: RememberedChannels;
  /** Tells the outbox relay that a commit enqueued messages. */
  published(): void;
}

/** The identity channels uses for what it does on its own (departure notices, closures). */
export const SYSTEM_SENDER = "system:channels";
export const SERVICE_CALLER: Caller = { principal: "service:channels", roles: ["admin"], actor: SYSTEM_SENDER, agent_id: null };
