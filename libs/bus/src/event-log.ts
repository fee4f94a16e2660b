import { randomUUID } from "node:crypto";
import { isoTimestamp, SCHEMA_HEADER, type EventDefinition, type EventPayload, type JsonObject } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { enqueue, type OutboxTable } from "./outbox";

/** An event about to be appended to an aggregate's log. */
export interface NewEvent {
  /** The event's id when it was given one already (a system event from another service); else a new UUID. */
  id?: string;
  eventType: string;
  actor: string;
  payload: JsonObject;
  /** Tracing links a client may give an event it appends (RFC-0020 of the clients; spec part 6 propagates trace_id). */
  traceId?: string | null;
  parentEventId?: string | null;
}

/**
 * An event of a catalogued definition, ready for writeEventLog: the name comes from the
 * definition and the payload must have its schema's shape, so a writer cannot misspell the one
 * or get the other wrong (it does not compile). The payload is not parsed again at run time (hot
 * paths); the test cluster checks every written event against its schema (event-check.ts).
 */
export function newEvent<D extends EventDefinition>(
  definition: D,
  actor: string,
  payload: EventPayload<D>,
  extra: Pick<NewEvent, "id" | "traceId" | "parentEventId"> = {},
): NewEvent & { eventType: D["name"] } {
  return { ...extra, eventType: definition.name, actor, payload: payload as JsonObject };
}

/** The optional tracing fields of an event's wire form: present only when set, as the clients write them. */
export function traceFields(event: Pick<NewEvent, "traceId" | "parentEventId">): { trace_id?: string; parent_event_id?: string } {
  return {
    ...(event.traceId ? { trace_id: event.traceId } : {}),
    ...(event.parentEventId ? { parent_event_id: event.parentEventId } : {}),
  };
}

/** The wire form every aggregate's events share; the aggregate's id field is added by name. */
export interface WireEvent {
  id: string;
  sequence: number;
  event_type: string;
  actor: string;
  payload: JsonObject;
  created_at: string;
  trace_id?: string;
  parent_event_id?: string;
}

/**
 * How one aggregate kind logs its events: the id field its events carry (`intent_id`,
 * `portfolio_id`, `agent_id`), its subjects, message ids and schema header, its outbox, and how
 * a batch of events becomes rows of its log table.
 */
export interface EventLogSpec<E extends WireEvent> {
  idField: Exclude<keyof E, keyof WireEvent> & string;
  outbox: OutboxTable;
  schema: string;
  subject(aggregateId: string, eventType: string): string;
  msgId(aggregateId: string, sequence: number): string;
  /**
   * Writes the rows, in the order given (the sequence order). A log whose table completes rows as
   * they are inserted (the intent log's hash chain) returns the fields it added, by event id;
   * they join the returned events and their messages.
   */
  insert(tx: Tx, rows: { event: E; wire: string; at: Date }[]): Promise<CompletedFields[] | void>;
}

/** Fields the log table added to an event as it was inserted (see EventLogSpec.insert). */
export type CompletedFields = { id: string } & Record<string, unknown>;

/** The wire form of events about to be logged at `firstSequence` and on: new ids, one timestamp. */
export function buildEvents<E extends WireEvent>(spec: Pick<EventLogSpec<E>, "idField">, aggregateId: string, firstSequence: number, newEvents: NewEvent[], at: Date): E[] {
  const createdAt = isoTimestamp(at);
  return newEvents.map(
    (event, i) =>
      ({
        id: event.id ?? randomUUID(),
        [spec.idField]: aggregateId,
        sequence: firstSequence + i,
        event_type: event.eventType,
        actor: event.actor,
        payload: event.payload,
        created_at: createdAt,
        ...traceFields(event),
      }) as unknown as E,
  );
}

/**
 * Writes events at the sequence numbers the caller reserved for them (in the same transaction,
 * by bumping the aggregate row's counter, which also locks it), and their outbox rows. The
 * event's JSON is frozen once: it is both the log row's wire text and the message.
 */
export async function writeEventLog<E extends WireEvent>(
  tx: Tx,
  spec: EventLogSpec<E>,
  aggregateId: string,
  firstSequence: number,
  newEvents: NewEvent[],
  at: Date,
): Promise<E[]> {
  if (!newEvents.length) return [];
  const built = buildEvents(spec, aggregateId, firstSequence, newEvents, at);
  const completed = await spec.insert(
    tx,
    built.map((event) => ({ event, wire: JSON.stringify(event), at })),
  );
  const added = new Map((completed ?? []).map(({ id, ...fields }) => [id, fields]));
  const written = added.size ? built.map((event) => ({ ...event, ...added.get(event.id) }) as E) : built;
  await enqueue(
    tx,
    spec.outbox,
    written.map((event) => ({
      subject: spec.subject(aggregateId, event.event_type),
      msgId: spec.msgId(aggregateId, event.sequence),
      payload: event,
      headers: { [SCHEMA_HEADER]: spec.schema },
    })),
  );
  return written;
}

/**
 * The message id rule of every aggregate log, `<kind>:<aggregate>:e<sequence>` (intentEventMsgId,
 * portfolioEventMsgId, agentEventMsgId), for SQL statements that learn the sequence only when they
 * take it. `aggregateSql` must already be the id as it appears in subjects (agents: the token).
 */
export const sqlEventMsgId = (kind: "intent" | "portfolio" | "agent", aggregateSql: string, sequenceSql: string): string =>
  `'${kind}:' || ${aggregateSql}::text || ':e' || ${sequenceSql}`;

/** Where and what a single SQL statement writes for a batch of events (see sqlEventInserts). */
export interface SqlEventRows {
  /** The aggregate's log table and outbox, schema-qualified (`intents.events`, `intents.outbox`). */
  eventsTable: string;
  outboxTable: string;
  /** The relation the rows come from: a CTE name, with joins when needed. */
  from: string;
  /** The log table's columns and the SQL expression of each. */
  eventColumns: Record<string, string>;
  /** The outbox row: subject, message id (sqlEventMsgId), the event's frozen wire text, headers. */
  subject: string;
  msgId: string;
  wire: string;
  headers: string;
  /** The order outbox rows are inserted in (the relay publishes by row id): the sequence order. */
  outboxOrder?: string;
  /**
   * When the log table completes each row as it is inserted (the intent log's hash-chain trigger
   * adds event_hash and previous_event_hash to the row and its wire text): the name the caller
   * gives the events INSERT as a CTE and how its rows join back to `from` ("true" for a one-row
   * source). The events INSERT then returns its rows, in sequence order, and the outbox rows are
   * made from them, so the message carries the completed wire text. `wire` and `msgId` may then
   * name the inserted row's columns (`e.wire`, `e.sequence`). `order`: the sequence order of a
   * source of several rows (each row's chain link reads the row before it, so they go in in order).
   */
  completedRows?: { as: string; on: string; order?: string };
}

/**
 * writeEventLog as SQL text, for hot paths that do the change, the log row and the outbox row
 * in one statement (no transaction round trips): the two INSERTs, for the caller to place as CTEs
 * or as the final statement. The log row and the message carry the same wire text, as in writeEventLog.
 */
export function sqlEventInserts(rows: SqlEventRows): { events: string; outbox: string } {
  const columns = Object.keys(rows.eventColumns);
  const completed = rows.completedRows;
  const order = rows.outboxOrder ? ` order by ${rows.outboxOrder}` : "";
  if (!completed) {
    return {
      events: `insert into ${rows.eventsTable} (${columns.join(", ")})
       select ${columns.map((c) => rows.eventColumns[c]).join(", ")} from ${rows.from}`,
      outbox: `insert into ${rows.outboxTable} (subject, msg_id, payload, headers)
       select ${rows.subject}, ${rows.msgId}, ${rows.wire}, ${rows.headers} from ${rows.from}${order}`,
    };
  }
  return {
    events: `insert into ${rows.eventsTable} (${columns.join(", ")})
       select ${columns.map((c) => rows.eventColumns[c]).join(", ")} from ${rows.from}${completed.order ? ` order by ${completed.order}` : ""}
       returning *`,
    outbox: `insert into ${rows.outboxTable} (subject, msg_id, payload, headers)
       select ${rows.subject}, ${rows.msgId}, ${rows.wire}, ${rows.headers} from ${completed.as} join ${rows.from} on ${completed.on}${order}`,
  };
}
