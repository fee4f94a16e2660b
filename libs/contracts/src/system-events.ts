import { z } from "./zod";
import { ActorId, Uuid } from "./common";
import { TraceId } from "./intents";

/**
 * System events: facts another service (channels, memory, governance, federation) puts into an
 * intent's event log, where the spec says they belong (part 6: channel_message, memory.*,
 * governance.*, engagement.decision).
 *
 * The path: the source service writes its own state change and an outbox row carrying a
 * SystemEvent in one transaction; its relay publishes the row on
 * `im.sys.intent.<intent_id>.<event_type>` (stream IM_SYSTEM_EVENTS) with the message id
 * `sys:<source>:<id>`; the intents service consumes that stream durably and appends the event
 * to the intent's log at the next sequence number, idempotently by `id` (a redelivery appends
 * nothing), so the per-intent order, the event's outbox row and the SSE stream follow as for any
 * other event. The appended event keeps `id` as its event id.
 */
export const SYSTEM_EVENT_SOURCES = ["channels", "memory", "governance", "federation", "registry", "vault", "triggers"] as const;
export type SystemEventSource = (typeof SYSTEM_EVENT_SOURCES)[number];

export const SystemEvent = z.object({
  /** The event's id in the intent log, and the idempotency key of the append. */
  id: Uuid,
  source: z.enum(SYSTEM_EVENT_SOURCES),
  intent_id: Uuid,
  event_type: z.string().min(1).max(128),
  actor: ActorId,
  payload: z.record(z.string(), z.unknown()),
  trace_id: TraceId.nullable().optional(),
  /** When the source committed the fact (ISO 8601); the log keeps its own created_at. */
  occurred_at: z.string(),
});
export type SystemEvent = z.infer<typeof SystemEvent>;

export const systemEventStream = { name: "IM_SYSTEM_EVENTS", subjects: ["im.sys.intent.>"] } as const;
export const systemEventSubject = (intentId: string, eventType: string) => `im.sys.intent.${intentId}.${eventType}`;
export const systemEventMsgId = (source: SystemEventSource, id: string) => `sys:${source}:${id}`;
export const SYSTEM_EVENT_SCHEMA = "im.system-event/1";
