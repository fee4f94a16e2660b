import { randomUUID } from "node:crypto";
import { federationEvents, type EventPayload, type SystemEvent } from "@intentmesh/contracts";
import { newSystemEvent } from "@intentmesh/bus";

/** One of this service's events, as defined in the event catalogue. */
type FederationEventDefinition = (typeof federationEvents)[keyof typeof federationEvents];

/**
 * A federation fact for an intent's log (shared contract point 1): written with its outbox row
 * through enqueueSystemEvents. The name comes from the definition, the payload has its schema's shape.
 */
export function federationEvent<D extends FederationEventDefinition>(intentId: string, definition: D, actor: string, payload: EventPayload<D>, now: Date, id: string = randomUUID()): SystemEvent {
  return newSystemEvent(definition, { id, source: "federation", intentId, actor, payload, traceId: null, at: now });
}
