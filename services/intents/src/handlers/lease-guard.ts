import { and, desc, eq, or } from "drizzle-orm";
import { AppError, type Caller } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { leases, type intents } from "../db/schema";
import { keysOverlap, scopeKey } from "../domain/lease-scope";
import { toLease } from "../mapping";

type LeaseRow = typeof leases.$inferSelect;

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
 * are free to write.
 */
export async function assertLeasesAllowWrite(
  tx: Tx,
  intent: typeof intents.$inferSelect,
  caller: Caller,
  paths: string[],
  now: Date,
): Promise<void> {
  const rows = await tx
    .select()
    .from(leases)
    .where(and(eq(leases.intentId, intent.id), or(eq(leases.holdsScope, true), eq(leases.agentId, caller.actor))))
    .orderBy(desc(leases.acquiredAt));
  if (!rows.length) return;
  for (const path of paths) {
    const key = scopeKey(path);
    const touching = rows.filter((lease) => keysOverlap(lease.scopeKey, key));
    const held = touching.find((lease) => lease.agentId !== caller.actor && leaseIsLive(lease, intent.status, now));
    if (held) {
      throw new AppError(
        "LEASE_HELD",
        409,
        `${path} is leased to agent ${held.agentId} (scope ${held.scope}) until ${held.expiresAt.toISOString()}`,
        { path, lease: toLease(held) },
        { lease: toLease(held) },
      );
    }
    const own = touching.filter((lease) => lease.agentId === caller.actor);
    if (own.some((lease) => leaseIsLive(lease, intent.status, now))) continue;
    const latest = own[0];
    if (latest && !latest.releasedAt) {
      throw new AppError(
        "LEASE_EXPIRED",
        412,
        `the lease of agent ${caller.actor} on scope ${latest.scope} expired at ${latest.expiresAt.toISOString()}; acquire a new lease before writing ${path}`,
        { path, lease: toLease(latest) },
      );
    }
  }
}
