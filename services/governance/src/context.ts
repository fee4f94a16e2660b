import type { Caller, Clock, HumanRetryPolicy } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { Database } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { SettledSuspensions } from "./tracking";

/** What every handler of the governance service works with. */
export interface GovernanceContext {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** Requests to the intents service (reads, and the suspension primitives). */
  client: BusClient;
  /** The platform default human retry policy (third level of the cascade, spec 4.5), when configured. */
  defaultRetryPolicy: HumanRetryPolicy | null;
  /** Who the service is when it acts on its own (timers, reads it needs). */
  systemCaller: Caller;
  /** The tracking rows this process's own writes started or ended: the tracker skips their events (tracking.ts). */
  settled: SettledSuspensions;
  /** Tells the outbox relay that a commit enqueued messages. */
  published(): void;
}
