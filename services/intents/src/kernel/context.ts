import type { Clock } from "@intentmesh/contracts";
import type { Database, DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { BusClient } from "@intentmesh/bus";
import type { IntentAccessGuard } from "../acl/guard";

/** What every handler of the intents service works with. */
export interface IntentsContext {
  db: Database;
  /** Named prepared statements for the hot paths (see kernel/statements.ts). */
  query: DatabaseHandle["query"];
  clock: Clock;
  logger: Logger;
  /** Requests to other services (the governance service's approvals, when a completion needs them). */
  client?: BusClient;
  /** Access control (RFC-0011): the check the hot paths make after reading the intent's row (acl/guard.ts). */
  access: IntentAccessGuard;
  /** Tells the outbox relay that a commit enqueued messages, so it publishes without waiting for its poll. */
  published(): void;
}
