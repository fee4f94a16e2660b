import { randomUUID } from "node:crypto";
import { SYSTEM_EVENT_SCHEMA, SCHEMA_HEADER, isoTimestamp, systemEventMsgId, systemEventSubject, type EventDefinition, type EventPayload, type SystemEvent, type SystemEventSource } from "@intentmesh/contracts";
import type { Queryable } from "@intentmesh/db";
import { enqueue, type OutboxMessage, type OutboxTable } from "./outbox";

/**
 * Shared contract point 1: a source service puts facts into an intent's log by writing them to
 * its own outbox, in the transaction of the change they announce. Its relay publishes them on
 * IM_SYSTEM_EVENTS; the intents service appends each once, by `id`.
 */
export async function enqueueSystemEvents(tx: Queryable, outbox: OutboxTable, events: SystemEvent[]): Promise<void> {
  await enqueue(tx, outbox, events.map(systemEventMessage));
}

/** The outbox message of a system event: its subject in the intent's space, its id as message id. */
export function systemEventMessage(event: SystemEvent): OutboxMessage {
  return {
    subject: systemEventSubject(event.intent_id, event.event_type),
    msgId: systemEventMsgId(event.source, event.id),
    payload: event,
    headers: { [SCHEMA_HEADER]: SYSTEM_EVENT_SCHEMA },
  };
}

/** A system event's definition: catalogued with system: true (event-catalogue.ts systemEvents). */
type SystemEventDefinition = EventDefinition & { system: true };

/**
 * A system event of a catalogued definition: the name from the definition, the payload of its
 * schema's shape (checked at compile time; the intents service checks it again when it appends).
 */
export function newSystemEvent<D extends SystemEventDefinition>(
  definition: D,
  event: { source: SystemEventSource; intentId: string; actor: string; payload: EventPayload<D>; at: Date; id?: string; traceId?: string | null },
): SystemEvent & { event_type: D["name"] } {
  return {
    id: event.id ?? randomUUID(),
    source: event.source,
    intent_id: event.intentId,
    event_type: definition.name,
    actor: event.actor,
    payload: event.payload as Record<string, unknown>,
    ...(event.traceId !== undefined ? { trace_id: event.traceId } : {}),
    occurred_at: isoTimestamp(event.at),
  };
}
