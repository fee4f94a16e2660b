import { SCHEMA_HEADER, SYSTEM_EVENT_SCHEMA, SystemEvent, systemEventMsgId, systemEventSubject } from "@intentmesh/contracts";
import type { Queryable } from "@intentmesh/db";
import { enqueue, type OutboxTable } from "./outbox";

/**
 * Puts system events (shared contract point 1, libs/contracts/src/system-events.ts) into the
 * source service's outbox, inside the caller's transaction: each is validated, then published by
 * the service's relay on im.sys.intent.<intent_id>.<event_type> with the message id
 * sys:<source>:<id>, for the intents service to append to the intent's log.
 */
export async function enqueueSystemEvents(tx: Queryable, outbox: OutboxTable, events: SystemEvent[]): Promise<void> {
  await enqueue(
    tx,
    outbox,
    events.map((event) => {
      const valid = SystemEvent.parse(event);
      return {
        subject: systemEventSubject(valid.intent_id, valid.event_type),
        msgId: systemEventMsgId(valid.source, valid.id),
        payload: valid,
        headers: { [SCHEMA_HEADER]: SYSTEM_EVENT_SCHEMA },
      };
    }),
  );
}
