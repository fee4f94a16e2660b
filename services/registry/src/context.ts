import type { Clock } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { Database, DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { AddressPolicy } from "@intentmesh/ssrf";

/** What every handler of the registry service works with. */
export interface RegistryContext {
  db: Database;
  query: DatabaseHandle["query"];
  clock: Clock;
  logger: Logger;
  /** Requests to other services (the intents service, for the leases a draining agent holds). */
  client: BusClient;
  /** How often a draining agent's leases are checked, in seconds. */
  drainCheckSeconds: number;
  /** The SSRF guard's policy for origin_server_url (loopback only in tests). */
  outboundPolicy: AddressPolicy;
  /** Tells the outbox relay that a commit enqueued messages. */
  published(): void;
}
