import type { Clock } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { Database } from "@intentmesh/db";
import type { Connector, GuardedFetchOptions, Resolver } from "@intentmesh/ssrf";
import type { Logger } from "@intentmesh/telemetry";
import type { KeyRing } from "./crypto/envelope";

/** How the tool proxy calls out (docs/vaults.md, "Tool proxy"). */
export interface ToolProxySettings {
  /** The SSRF guard's policy: global unicast only, plus the operator's allow-listed networks. */
  outbound: Pick<GuardedFetchOptions, "allowedNetworks" | "resolve" | "connect" | "ca">;
  /** Default and ceiling of one call, every hop included. */
  timeoutMs: number;
  maxTimeoutMs: number;
  maxResponseBytes: number;
}

/** RFC-0018 timings. */
export interface IdentitySettings {
  /** How long a registration challenge may be answered (RFC: 5 minutes). */
  challengeTtlMs: number;
  /** How long the key a rotation replaced still verifies new signatures. */
  rotationOverlapMs: number;
}

/** What every handler of the vault service works with. */
export interface VaultContext {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** Requests to the intents service (recording a tool's cost). */
  client: BusClient;
  keys: KeyRing;
  proxy: ToolProxySettings;
  identity: IdentitySettings;
  /** Tells the outbox relay that a commit enqueued messages. */
  published(): void;
}

export type { Connector, Resolver };

/**
 * Who may do what in the vault, beyond the route's roles (libs/contracts/src/caller.ts):
 * admins manage every vault, grant and identity; coordinators and admins read every grant
 * (coordinators hand out work and need to see who can use what) and invoke for any agent.
 */
export { isAdmin, isCoordinatorOrAdmin as mayReadAllGrants } from "@intentmesh/contracts";
