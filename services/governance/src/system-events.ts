import { isoTimestamp, type SystemEvent } from "@intentmesh/contracts";

export { derivedUuid } from "@intentmesh/contracts";

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
