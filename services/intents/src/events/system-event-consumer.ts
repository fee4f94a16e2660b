import { eq } from "drizzle-orm";
import { federationEvents, governanceEvents, isAppError, jsonBytes, LIMITS, memoryEvents, SystemEvent, systemEventPayloadSchema, systemEvents, systemEventStream, type Clock, type EventDefinition, type SystemEventSource } from "@intentmesh/contracts";
import { startDurableConsumer, type Bus } from "@intentmesh/bus";
import type { Database, Tx } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import { events, inbox } from "../db/schema";
import { appendToLog } from "../kernel/event-log";

/**
 * The event types each source service may put into an intent's log (spec part 6). A source can
 * only speak for its own facts: memory cannot forge a governance decision, nor anyone a
 * lifecycle event of the intents service itself.
 */
const namesOf = (...definitions: EventDefinition[]): ReadonlySet<string> => new Set(definitions.map((definition) => definition.name));
const ALLOWED_TYPES: Record<SystemEventSource, ReadonlySet<string>> = {
  channels: namesOf(systemEvents.channelMessage),
  memory: namesOf(...Object.values(memoryEvents)),
  governance: namesOf(...Object.values(governanceEvents)),
  federation: namesOf(...Object.values(federationEvents)),
  registry: namesOf(),
  // RFC-0014 §6.1: the tool proxy's audit record of an invocation made for the intent.
  vault: namesOf(systemEvents.toolInvoked),
  // RFC-0017 §3.2, §5.2: the firing that created the intent, with its lineage.
  triggers: namesOf(systemEvents.triggerFired),
};

/** Whether `source` may append `eventType` to an intent's log. */
export const mayAppendSystemEvent = (source: SystemEventSource, eventType: string): boolean => ALLOWED_TYPES[source].has(eventType);

/** The largest payload a system event may carry: an intent state's worth (a memory.archived snapshot is the large one). */
const MAX_SYSTEM_EVENT_PAYLOAD_BYTES = LIMITS.stateBytes;

/**
 * Appends the system events of other services (stream IM_SYSTEM_EVENTS, contract in
 * libs/contracts/src/system-events.ts) to their intents' logs. Each goes in at the intent's next
 * sequence number with its outbox row, in the transaction that also records the message in the
 * inbox, so it reaches SSE subscribers like any other event and a redelivery appends nothing.
 * The event keeps the id its source gave it, which is checked too: a second message carrying an
 * id already in the log (a source that re-sent under another message id) appends nothing either.
 *
 * A message that cannot be valid (bad shape, a type its source may not write, a payload that is
 * not the catalogue's shape for its type, a payload past the limit) is terminated and logged; an event for an intent that does not exist is dropped and
 * logged. Neither holds back the events behind it.
 */
export async function startSystemEventConsumer(bus: Bus, db: Database, clock: Clock, logger: Logger, onCommitted: () => void) {
  return startDurableConsumer(bus, {
    stream: systemEventStream.name,
    durable: "intents-system-events",
    filterSubject: "im.sys.intent.>",
    db,
    inbox,
    logger,
    parse: (data) => {
      const event = SystemEvent.parse(data);
      if (!mayAppendSystemEvent(event.source, event.event_type)) {
        throw new Error(`source ${event.source} may not write ${event.event_type} events`);
      }
      // The payload must be what the event catalogue promises readers of the log (part 6 shapes).
      const schema = systemEventPayloadSchema(event.event_type);
      if (!schema) throw new Error(`${event.event_type} is not a system event of the event catalogue`);
      const checked = schema.safeParse(event.payload);
      if (!checked.success) {
        const issue = checked.error.issues[0];
        throw new Error(`payload of ${event.event_type} does not match the event catalogue: ${issue?.path.join(".") || "(payload)"}: ${issue?.message}`);
      }
      const bytes = jsonBytes(event.payload);
      if (bytes > MAX_SYSTEM_EVENT_PAYLOAD_BYTES) {
        throw new Error(`payload of ${bytes} bytes is past the ${MAX_SYSTEM_EVENT_PAYLOAD_BYTES}-byte limit of a system event`);
      }
      return event;
    },
    handle: async (tx, event) => {
      await appendSystemEvent(tx, event, clock.now(), logger);
    },
    afterCommit: onCommitted,
  });
}

/** Appends one system event unless its id is already in the log; an unknown intent drops it. */
export async function appendSystemEvent(tx: Tx, event: SystemEvent, now: Date, logger: Logger): Promise<boolean> {
  const [existing] = await tx.select({ id: events.id }).from(events).where(eq(events.id, event.id));
  if (existing) return false;
  try {
    await appendToLog(tx, event.intent_id, [
      { id: event.id, eventType: event.event_type, actor: event.actor, payload: event.payload as never, traceId: event.trace_id ?? null },
    ], now);
    return true;
  } catch (error) {
    if (isAppError(error) && error.status === 404) {
      logger.warn({ intentId: event.intent_id, eventType: event.event_type, source: event.source }, "system event for an intent that does not exist; dropped");
      return false;
    }
    throw error;
  }
}
