import { appError, isAdmin, isCoordinatorOrAdmin, isoTimestamp, type Caller, type CoordinatorLease } from "@intentmesh/contracts";
import type { coordinatorLeases } from "../db/schema-coordinators";

/** The pure rules of coordinator leases (RFC-0013; docs/coordinators.md). */

export type CoordinatorLeaseRow = typeof coordinatorLeases.$inferSelect;

/** RFC-0013 5.2: two missed heartbeats make a coordinator unresponsive. */
export const MISSED_HEARTBEATS = 2;

export const expiryAfter = (at: Date, intervalSeconds: number): Date => new Date(at.getTime() + MISSED_HEARTBEATS * intervalSeconds * 1000);

/** Whether the lease is the intent's live coordinator at `now` (server clock). */
export const isLive = (row: Pick<CoordinatorLeaseRow, "holds" | "expiresAt">, now: Date): boolean => row.holds && row.expiresAt.getTime() > now.getTime();

/** What a lease answers: active while live, unresponsive once past its expiry and not taken over, failed_over once ended. */
export function leaseStatus(row: Pick<CoordinatorLeaseRow, "holds" | "expiresAt" | "pausedAt">, now: Date): CoordinatorLease["status"] {
  if (!row.holds) return "failed_over";
  if (!isLive(row, now)) return "unresponsive";
  return row.pausedAt ? "paused" : "active";
}

/** A paused lease's holder may not start or change work (decisions, tasks, plans) until it is resumed: 409 COORDINATOR_PAUSED. */
export function assertNotPaused(row: CoordinatorLeaseRow): void {
  if (!row.pausedAt) return;
  throw appError("COORDINATOR_PAUSED", `coordinator lease ${row.id} of intent ${row.intentId} is paused (${row.pauseReason ?? "no reason"}) by ${row.pausedBy}; it acts again once resumed`, {
    lease_id: row.id,
    paused_by: row.pausedBy,
  });
}

export function toCoordinatorLease(row: CoordinatorLeaseRow, now: Date): CoordinatorLease {
  return {
    id: row.id,
    intent_id: row.intentId,
    portfolio_id: null,
    agent_id: row.agentId,
    role: "coordinator",
    supervisor_id: row.supervisorId,
    coordinator_type: row.coordinatorType as CoordinatorLease["coordinator_type"],
    scope: "intent",
    status: leaseStatus(row, now),
    guardrails: row.guardrails ?? null,
    heartbeat_interval_seconds: row.heartbeatIntervalSeconds,
    failover_candidates: row.failoverCandidates,
    last_heartbeat: isoTimestamp(row.lastHeartbeat),
    granted_at: isoTimestamp(row.grantedAt),
    expires_at: isoTimestamp(row.expiresAt),
    ended_at: row.endedAt ? isoTimestamp(row.endedAt) : null,
    end_reason: (row.endReason as CoordinatorLease["end_reason"]) ?? null,
    paused_at: row.pausedAt ? isoTimestamp(row.pausedAt) : null,
    paused_by: row.pausedBy,
    pause_reason: row.pauseReason,
    predecessor_id: row.predecessorId,
    version: row.version,
    metadata: row.metadata,
  };
}

/** A grant while another lease of the intent is live: 409, its text names the lease (the client's LeaseConflictError) and carries it. */
export function assertNoLiveHolder(intentId: string, holder: CoordinatorLeaseRow | undefined, now: Date): void {
  if (!holder || !isLive(holder, now)) return;
  const existing = toCoordinatorLease(holder, now);
  throw appError(
    "COORDINATOR_LEASE_HELD",
    `agent ${holder.agentId} holds the coordinator lease ${holder.id} of intent ${intentId} until ${existing.expires_at}`,
    { intent_id: intentId, lease_id: holder.id, agent_id: holder.agentId },
    { existing_lease: existing },
  );
}

/**
 * Who takes over from a dead holder: the first candidate that is not the dead agent and that
 * the registry has not reported dead or deregistered (an agent it never reported on counts as
 * alive: standalone agents never register). Undefined: nobody; the intent is left without one.
 */
export function nextCandidate(candidates: readonly string[], deadAgent: string, statusOf: ReadonlyMap<string, string>): { agentId: string; rest: string[] } | undefined {
  for (let i = 0; i < candidates.length; i++) {
    const agentId = candidates[i]!;
    if (agentId === deadAgent) continue;
    const status = statusOf.get(agentId);
    if (status === "dead" || status === "deregistered") continue;
    return { agentId, rest: candidates.slice(i + 1).filter((c) => c !== deadAgent) };
  }
  return undefined;
}

/**
 * Whether the caller supervises the lease (RFC-0013 2.1): its supervisor_id agent, admin and
 * coordinator keys; never its holder, unless with an admin key.
 */
export function supervises(row: Pick<CoordinatorLeaseRow, "agentId" | "supervisorId">, caller: Caller): boolean {
  if (isAdmin(caller)) return true;
  if (caller.actor === row.agentId) return false;
  return isCoordinatorOrAdmin(caller) || (row.supervisorId !== null && caller.actor === row.supervisorId);
}

/** RFC 7396 JSON merge patch: objects merge key by key, null removes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = target && typeof target === "object" && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

