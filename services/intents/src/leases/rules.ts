import { appError, isoTimestamp, type Caller } from "@intentmesh/contracts";
import type { LeaseRow } from "../kernel/statements";
import { keysOverlap, scopeKey } from "./lease-scope";
import { toLease } from "../kernel/mapping";
import { allows } from "../kernel/access";
import { TERMINAL_STATUSES } from "../intents/status";

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

/** Leases are taken on open intents only (409 INTENT_CLOSED on a terminal one). */
export function assertMayTakeLease(intentId: string, intentStatus: string): void {
  if (TERMINAL_STATUSES.includes(intentStatus as never)) {
    throw appError("INTENT_CLOSED", `intent ${intentId} is ${intentStatus}; leases are taken on open intents only`, { status: intentStatus });
  }
}

/**
 * A renewal: only by its holder (403 NOT_LEASE_HOLDER), never of a released lease (412
 * LEASE_RELEASED), and only while it is live (412 LEASE_EXPIRED; always live while the intent is
 * suspended). Nobody renews for another agent, a coordinator included: the holder's clock is the lease.
 */
export function assertMayRenew(lease: LeaseRow, intentStatus: string, caller: Caller, now: Date): void {
  if (!allows(caller, { permission: "lease.renew", holder: lease.agentId })) {
    throw appError("NOT_LEASE_HOLDER", `lease ${lease.id} is held by agent ${lease.agentId}, not ${caller.actor}`, { holder: lease.agentId });
  }
  if (lease.releasedAt) throw appError("LEASE_RELEASED", `lease ${lease.id} was released; acquire a new one`, { lease: toLease(lease) });
  if (!leaseIsLive(lease, intentStatus, now)) {
    throw appError("LEASE_EXPIRED", `lease ${lease.id} expired at ${isoTimestamp(lease.expiresAt)}; acquire a new one`, { lease: toLease(lease) });
  }
}

/** A release: by its holder, a coordinator or an admin (403 NOT_LEASE_HOLDER for anyone else). */
export function assertMayRelease(lease: LeaseRow, caller: Caller): void {
  if (!allows(caller, { permission: "lease.release", holder: lease.agentId })) {
    throw appError("NOT_LEASE_HOLDER", `lease ${lease.id} is held by agent ${lease.agentId}; only it, a coordinator or an admin may release it`, { holder: lease.agentId });
  }
}
