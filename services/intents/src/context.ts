import type { Clock } from "@intentmesh/contracts";
import type { Database } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";

/** What every handler of the intents service works with. */
export interface IntentsContext {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** Tells the outbox relay that a commit enqueued messages, so it publishes without waiting for its poll. */
  published(): void;
}
