import { isoTimestamp } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import type { FederationEventType, SystemEvent } from "@intentmesh/contracts";

/** A federation fact for an intent's log (shared contract point 1): written with its outbox row through enqueueSystemEvents. */
export function federationEvent(intentId: string, eventType: FederationEventType, actor: string, payload: Record<string, unknown>, now: Date, id: string = randomUUID()): SystemEvent {
  return { id, source: "federation", intent_id: intentId, event_type: eventType, actor, payload, trace_id: null, occurred_at: isoTimestamp(now) };
}
