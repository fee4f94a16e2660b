import { governanceEvents, type EventPayload, type SystemEvent } from "@intentmesh/contracts";
import { newSystemEvent } from "@intentmesh/bus";

export { derivedUuid } from "@intentmesh/contracts";

/** One of this service's events (spec part 6), as defined in the event catalogue. */
type GovernanceEventDefinition = (typeof governanceEvents)[keyof typeof governanceEvents];

/** A system event of this service: the name from its definition, the payload of its schema's shape. */
export function governanceEvent<D extends GovernanceEventDefinition>(definition: D, id: string, intentId: string, actor: string, payload: EventPayload<D>, at: Date): SystemEvent {
  return newSystemEvent(definition, { id, source: "governance", intentId, actor, payload, at });
}
