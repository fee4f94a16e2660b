import { appError, isoTimestamp } from "@intentmesh/contracts";
import type { LeaseRow } from "../db/statements";
import { keysOverlap, scopeKey } from "../domain/lease-scope";
import { toLease } from "../mapping";

/** Whether a lease still owns its scope at `now`. Leases of a suspended intent do not lapse (spec 3.1). */
export function leaseIsLive(lease: LeaseRow, intentStatus: string, now: Date): boolean {
  if (!lease.holdsScope) return false;
  return intentStatus === "suspended_awaiting_input" || lease.expiresAt.getTime() > now.getTime();
}

/**
 * Leases are the authority on who may write a part of the state. For every path written:
 * another agent's live lease touching it is a collision (409 LEASE_HELD); when the writer's own
 * most recent lease touching it has lapsed without being released, the write is refused with
 * 412 LEASE_EXPIRED (split-brain prevention, spec 4.9 heartbeat rule 4). Paths no lease touches
 * are free to write. `leases` are the intent's holding leases and the writer's own, newest first.
 */
export function assertLeasesAllowWrite(leases: LeaseRow[], intentStatus: string, actor: string, paths: string[], now: Date): void {
  if (!leases.length) return;
  for (const path of paths) {
    const key = scopeKey(path);
    const touching = leases.filter((lease) => keysOverlap(lease.scopeKey, key));
    const held = touching.find((lease) => lease.agentId !== actor && leaseIsLive(lease, intentStatus, now));
    if (held) {
      throw appError("LEASE_HELD", `${path} is leased to agent ${held.agentId} (scope ${held.scope}) until ${isoTimestamp(held.expiresAt)}`,
        { path, lease: toLease(held) },
        { lease: toLease(held) },
      );
    }
    const own = touching.filter((lease) => lease.agentId === actor);
    if (own.some((lease) => leaseIsLive(lease, intentStatus, now))) continue;
    const latest = own[0];
    if (latest && !latest.releasedAt) {
      throw appError("LEASE_EXPIRED", `the lease of agent ${actor} on scope ${latest.scope} expired at ${latest.expiresAt.toISOString()}; acquire a new lease before writing ${path}`,
        { path, lease: toLease(latest) },
      );
    }
  }
}
