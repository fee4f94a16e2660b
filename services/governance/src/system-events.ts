import { createHash } from "node:crypto";
import { isoTimestamp, type SystemEvent } from "@intentmesh/contracts";

/**
 * A UUID derived from a name (same bytes as a v5 UUID's layout): the id of an event the
 * governance service announces at most once, so a repeated attempt carries the same id and the
 * intents service appends it once.
 */
export function derivedUuid(name: string): string {
  const h = createHash("sha256").update(name).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function governanceEvent(id: string, intentId: string, eventType: string, actor: string, payload: Record<string, unknown>, at: Date): SystemEvent {
  return { id, source: "governance", intent_id: intentId, event_type: eventType, actor, payload, occurred_at: isoTimestamp(at) };
}

/** Event names of this service (spec part 6); the event catalogue (issue 11) lists them too. */
export const governanceEventTypes = {
  renotified: "intent.suspension_renotified",
  escalated: "intent.suspension_escalated",
  approvalGranted: "governance.approval_granted",
  approvalDenied: "governance.approval_denied",
  engagementDecision: "engagement.decision",
} as const;
