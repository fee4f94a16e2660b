import { isoTimestamp, type Assignment, type IntentEvent, type Lease } from "@intentmesh/contracts";
import type { assignments, events, leases } from "../db/schema";

/** Rows read through drizzle to the wire shapes of spec part 2. */
export function toEvent(row: typeof events.$inferSelect): IntentEvent {
  return {
    id: row.id,
    intent_id: row.intentId,
    sequence: row.sequence,
    event_type: row.eventType,
    actor: row.actor,
    payload: row.payload,
    created_at: isoTimestamp(row.createdAt),
    ...(row.traceId ? { trace_id: row.traceId } : {}),
    ...(row.parentEventId ? { parent_event_id: row.parentEventId } : {}),
    previous_event_hash: row.previousEventHash,
    event_hash: row.eventHash ?? "",
  };
}

export function toLease(row: typeof leases.$inferSelect): Lease {
  return {
    id: row.id,
    intent_id: row.intentId,
    agent_id: row.agentId,
    scope: row.scope,
    acquired_at: isoTimestamp(row.acquiredAt),
    expires_at: isoTimestamp(row.expiresAt),
    released_at: row.releasedAt ? isoTimestamp(row.releasedAt) : null,
  };
}

export function toAssignment(row: typeof assignments.$inferSelect): Assignment {
  return {
    intent_id: row.intentId,
    agent_id: row.agentId,
    role: row.role,
    assigned_by: row.assignedBy,
    assigned_at: isoTimestamp(row.assignedAt),
  };
}
