import { SYSTEM_EVENT_SCHEMA, systemEventMsgId, systemEventSubject, type SystemEvent } from "@intentmesh/contracts";
import type { Queryable } from "@intentmesh/db";
import { enqueue, type OutboxTable } from "./outbox";

/**
 * Puts system events (shared contract point 1, libs/contracts/src/system-events.ts) into the
 * caller's transaction as outbox rows: the service's relay publishes them on stream
 * IM_SYSTEM_EVENTS, and the intents service appends each to its intent's log, once per `id`.
 */
export async function enqueueSystemEvents(tx: Queryable, outbox: OutboxTable, events: SystemEvent[]): Promise<void> {
  await enqueue(
    tx,
    outbox,
    events.map((event) => ({
      subject: systemEventSubject(event.intent_id, event.event_type),
      msgId: systemEventMsgId(event.source, event.id),
      payload: event,
      headers: { "Im-Schema": SYSTEM_EVENT_SCHEMA },
    })),
  );
}
