import type { Clock } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { Database } from "@intentmesh/db";
import type { GuardedFetchOptions } from "@intentmesh/ssrf";
import type { Logger } from "@intentmesh/telemetry";
import type { ServerIdentity } from "./identity";
import type { FederationSettings } from "./settings";
import type { DidResolver } from "./did-resolver";

/** What every handler of the federation service works with. */
export interface FederationContext {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** Requests to the intents service and the registry. */
  client: BusClient;
  settings: FederationSettings;
  identity: ServerIdentity;
  /**
   * The identity that signs RFC 0019 checkpoints: the server identity when federation is enabled
   * or a key is configured; otherwise the development key, loaded on first use (throws when it
   * cannot be read or written).
   */
  checkpointSigner(): ServerIdentity;
  /** Options of every outbound call (the SSRF guard's policy, the deadline). */
  outbound: GuardedFetchOptions;
  dids: DidResolver;
  /** Tells the outbox relay that a commit enqueued messages. */
  published(): void;
  /** Tells the callback sender that a commit enqueued callbacks. */
  callbacksQueued(): void;
}
