import type { Caller, Clock } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { Database } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { EventTriggerCache } from "./event-trigger-cache";

/** What every handler of the triggers service works with. */
export interface TriggersContext {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** Requests to the intents service (the intents a firing creates). */
  client: BusClient;
  /** Tells the outbox relay that a commit enqueued messages. */
  published(): void;
  /** Asks the scheduler to create the intents of pending firings now rather than at its next tick. */
  dispatchSoon(): void;
  /** The enabled event triggers as this replica knows them, for the consumer's skip (event-trigger-cache.ts). */
  eventTriggers: EventTriggerCache;
}

/** The identity the service creates intents under: the firing's intent is the trigger's work, not its creator's call. */
export const SERVICE_CALLER: Caller = { principal: "service:triggers", roles: ["admin"], actor: "system:triggers", agent_id: null };
