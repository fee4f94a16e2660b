import { SYSTEM_EVENT_SCHEMA, SCHEMA_HEADER, systemEventMsgId, systemEventSubject, type SystemEvent } from "@intentmesh/contracts";
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
