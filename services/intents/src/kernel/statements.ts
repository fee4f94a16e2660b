import { randomUUID } from "node:crypto";
import {
  INTENT_EVENT_SCHEMA,
  intentEventSubject,
  isoTimestamp,
  LIMITS,
  SCHEMA_HEADER,
  type Intent,
  type IntentEvent,
  type IntentStatus,
  type JsonObject,
} from "@intentmesh/contracts";
import { RawJson, sqlEventInserts, sqlEventMsgId, traceCarrier, traceFields } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { GovernancePolicy } from "@intentmesh/contracts";
import type { NewEvent } from "./event-log";
import type { leases } from "../db/schema";
import { advanceChainSql, canonicalAroundChain, canonicalWire, canonicalWireSql, chainHashSql } from "./event-chain";

/**
 * The hot paths of the intents service as single SQL statements, run as named prepared
 * statements. Each write is ONE statement: the change, its event-log row and its outbox row
 * are CTEs of it, so they commit together without a transaction round trip, and the outbox
 * message id is built by the same statement that takes the sequence number:
 * `intent:<id>:e<sequence>` (the catalogue's intentEventMsgId).
 *
 * The event is serialised once, in JS, before its sequence is known: its canonical JSON (RFC
 * 8785) in two parts around the fields the statement learns under the row lock (kernel/event-chain.ts).
 * The UPDATE that takes the sequence hashes it (RFC 0019) from the chain head on the intent row,
 * and the same text, with the hash added, is the event's served wire form, its outbox message and
 * (built again here from the returned hash) the command's answer: the payload goes to PostgreSQL
 * twice (in the canonical text, and alone for the jsonb column) and is not serialised again. No
 * trigger, no lookup of the event before.
 */
type Query = DatabaseHandle["query"];

export type RawIntent = {
  id: string;
  title: string;
  description: string | null;
  created_by: string;
  status: string;
  constraints: JsonObject;
  state: JsonObject;
  confidence: number;
  version: number;
  event_seq: string | number;
  lease_epoch: number;
  /** Why the server blocked the intent (`budget_exceeded`); not part of the wire intent. */
  blocked_reason?: string | null;
  /** The governance policy (spec 2.11) the intent's mutations are checked against; not part of the wire intent. */
  governance_policy?: GovernancePolicy | null;
  /** The intent's ACL policy (RFC-0011), null when it has none; not part of the wire intent. */
  acl_policy?: string | null;
  /** RFC-0002: the parent (null for a root) and the dependencies (graph/). */
  parent_intent_id: string | null;
  depends_on: string[];
  created_at: Date;
  updated_at: Date;
};


export type LeaseRow = typeof leases.$inferSelect;

export const INTENT_COLUMNS = "id, title, description, created_by, status, constraints, state, confidence, version, event_seq, lease_epoch, created_at, updated_at, blocked_reason, governance_policy, acl_policy, parent_intent_id, depends_on";

export function rawToIntent(row: RawIntent): Intent {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    created_by: row.created_by,
    status: row.status as IntentStatus,
    constraints: row.constraints,
    state: row.state,
    confidence: Number(row.confidence),
    version: Number(row.version),
    created_at: isoTimestamp(row.created_at),
    updated_at: isoTimestamp(row.updated_at),
    parent_intent_id: row.parent_intent_id ?? null,
    depends_on: row.depends_on ?? [],
  };
}


/** An event about to be written, serialised once: its canonical JSON around the chain fields. */
function prepareEvent(intentId: string, event: NewEvent, at: Date) {
  const id = randomUUID();
  const createdAt = isoTimestamp(at);
  const tracing = traceFields(event);
  const content = { id, intent_id: intentId, event_type: event.eventType, actor: event.actor, payload: event.payload, created_at: createdAt, ...tracing };
  const canonical = canonicalAroundChain(content);
  // The statements close the text themselves, after the sequence (hashed) or after event_hash (served).
  const afterOpen = canonical.after.slice(0, -1);
  const headers = JSON.stringify({ ...traceCarrier(), [SCHEMA_HEADER]: INTENT_EVENT_SCHEMA });
  const complete = (sequence: number, chain: ChainFields): IntentEvent => ({
    id,
    intent_id: intentId,
    sequence,
    event_type: event.eventType,
    actor: event.actor,
    payload: event.payload,
    created_at: createdAt,
    ...tracing,
    previous_event_hash: chain.previous_event_hash,
    event_hash: chain.event_hash,
  });
  /** The event's served JSON, as the statement stored it. */
  const wire = (sequence: number, chain: ChainFields) => canonicalWire(canonical.before, chain.previous_event_hash, sequence, afterOpen, chain.event_hash);
  const subject = intentEventSubject(intentId, event.eventType);
  /**
   * The event's parameters in the order the statements take them (EVENT_PARAMS): id, type,
   * actor, payload, subject, headers, the canonical parts. created_at goes as the ISO text
   * already made (no Date for the driver to format again).
   */
  const params = [id, event.eventType, event.actor, canonical.payload, subject, headers, canonical.before, afterOpen];
  return { id, createdAt, params, complete, wire };
}

/** The $n of prepareEvent's params when they start at `first`. */
function eventParams(first: number) {
  const n = (i: number) => `$${first + i}`;
  return { id: n(0), eventType: n(1), actor: n(2), payload: n(3), subject: n(4), headers: n(5), before: n(6), afterOpen: n(7) };
}

/** SQL expressions of one intent event's columns, as a statement that logs it provides them. */
export interface IntentEventSql {
  id: string;
  intentId: string;
  sequence: string;
  eventType: string;
  actor: string;
  payload: string;
  createdAt: string;
  wire: string;
  subject: string;
  headers: string;
  traceId?: string;
  parentEventId?: string;
  /**
   * The hash fields when the statement computes them itself (the hot paths, from the chain head):
   * the row is then written complete, and `wire` is the served form with them. Absent: the
   * database's trigger fallback completes the row (the budget statement).
   */
  chain?: { eventHash: string; previousEventHash: string };
}

/**
 * The log row and outbox row of intent events, as the INSERTs of one statement (the shared
 * writer of libs/bus, sqlEventInserts): rows come from `from`; message id `intent:<id>:e<sequence>`.
 *
 * With `chain`, the row goes in complete and the outbox row is made from `from`. Without it the
 * events INSERT must be the statement's CTE `e`: the database completes each row with its
 * hash-chain fields (the trigger fallback intents.events_chain, docs/verifiable-logs.md), and the
 * outbox row is made from the completed row, joined back to `from` on `many.on` when `from` has
 * several rows (inserted in `many.order`, the sequence order).
 */
export function intentEventInserts(from: string, e: IntentEventSql, many?: { on: string; order: string }): { events: string; outbox: string } {
  return sqlEventInserts({
    eventsTable: "intents.events",
    outboxTable: "intents.outbox",
    from,
    eventColumns: {
      id: e.id,
      intent_id: e.intentId,
      sequence: e.sequence,
      event_type: e.eventType,
      actor: e.actor,
      payload: e.payload,
      created_at: e.createdAt,
      wire: e.wire,
      ...(e.traceId ? { trace_id: e.traceId } : {}),
      ...(e.parentEventId ? { parent_event_id: e.parentEventId } : {}),
      ...(e.chain ? { event_hash: e.chain.eventHash, previous_event_hash: e.chain.previousEventHash } : {}),
    },
    subject: e.subject,
    ...(e.chain
      ? { msgId: sqlEventMsgId("intent", e.intentId, e.sequence), wire: e.wire, headers: e.headers }
      : {
          msgId: sqlEventMsgId("intent", "e.intent_id", "e.sequence"),
          wire: "e.wire",
          headers: e.headers,
          outboxOrder: many ? "e.sequence" : undefined,
          completedRows: { as: "e", on: many?.on ?? "true", order: many?.order },
        }),
  });
}

/** The chain fields of an event as its statement wrote them. */
export interface ChainFields {
  event_hash: string;
  previous_event_hash: string | null;
}

// create: $1..$8 the intent, $9 created_at, the event from $10.
const CREATE = eventParams(10);
const CREATE_EVENT = intentEventInserts("w", {
  id: CREATE.id, intentId: "$1::uuid", sequence: "1", eventType: CREATE.eventType, actor: CREATE.actor, payload: `${CREATE.payload}::jsonb`, createdAt: "$9::timestamptz", wire: "w.wire", subject: CREATE.subject, headers: `${CREATE.headers}::jsonb`,
  chain: { eventHash: "w.hash", previousEventHash: "null" },
});
// append: $1 intent, $2 If-Match, $3 only ungoverned, $4 created_at, $5 trace id, $6 parent event, the event from $7.
const APPEND = eventParams(7);
const APPEND_EVENT = intentEventInserts("s", {
  id: APPEND.id, intentId: "$1::uuid", sequence: "s.event_seq", eventType: APPEND.eventType, actor: APPEND.actor, payload: `${APPEND.payload}::jsonb`, createdAt: "$4::timestamptz", wire: "s.wire", subject: APPEND.subject, headers: `${APPEND.headers}::jsonb`, traceId: "$5", parentEventId: "$6::uuid",
  chain: { eventHash: "s.chain_head", previousEventHash: "s.chain_previous" },
});
// change: $1 intent, $2 version, $3 state, $4 status, $5 created_at, $6 lease epoch, the event from $7.
const CHANGE = eventParams(7);
const CHANGE_EVENT = intentEventInserts("u", {
  id: CHANGE.id, intentId: "u.id", sequence: "u.event_seq", eventType: CHANGE.eventType, actor: CHANGE.actor, payload: `${CHANGE.payload}::jsonb`, createdAt: "$5::timestamptz", wire: "u.wire", subject: CHANGE.subject, headers: `${CHANGE.headers}::jsonb`,
  chain: { eventHash: "u.chain_head", previousEventHash: "u.chain_previous" },
});

export async function selectIntent(query: Query, intentId: string): Promise<(RawIntent & { leases?: unknown }) | undefined> {
  const rows = await query<RawIntent>("intents_get", `select ${INTENT_COLUMNS} from intents.intents where id = $1`, [intentId]);
  return rows[0];
}

/** A timestamp column as isoTimestamp prints it: UTC, milliseconds (truncated, as a Date holds them), "+00:00". */
export const wireTimestampSql = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"')`;

/**
 * The fields of an intent's wire JSON, from the intents row named `row` (a table alias or a CTE
 * with its columns): the fields and order of rawToIntent, timestamps as isoTimestamp prints them.
 * Every reply that serves an intent as PostgreSQL writes it selects these into row_to_json, so
 * the GET, the writes and the list cannot drift apart. The state and constraints come as
 * PostgreSQL prints jsonb (the same JSON value; spacing and number spelling may differ,
 * docs/compatibility.md).
 */
const intentWireFieldsSql = (row: string) =>
  `${row}.id, ${row}.title, ${row}.description, ${row}.created_by, ${row}.status, ${row}.constraints, ${row}.state, ${row}.confidence, ${row}.version,
    ${wireTimestampSql(`${row}.created_at`)} as created_at, ${wireTimestampSql(`${row}.updated_at`)} as updated_at,
    ${row}.parent_intent_id, coalesce(${row}.depends_on, '{}') as depends_on`;

/** The wire JSON of the intents row named `row` as one text expression (intentWireFieldsSql). */
export const intentJsonSql = (row: string) => `(select row_to_json(w)::text from (select ${intentWireFieldsSql(row)}) w)`;

/**
 * GET /intents/{id}: the intent's wire JSON with what a reader's access is decided on: a read
 * answers these bytes without the service parsing the row and encoding it again.
 */
const INTENT_JSON_SQL = `
  select i.acl_policy, i.version, row_to_json(w)::text as json
  from intents.intents i, lateral (select ${intentWireFieldsSql("i")}) w
  where i.id = $1`;

export async function selectIntentJson(query: Query, intentId: string): Promise<{ acl_policy: string | null; version: number; json: string } | undefined> {
  const rows = await query<{ acl_policy: string | null; version: number; json: string }>("intents_get_json", INTENT_JSON_SQL, [intentId]);
  return rows[0];
}

/**
 * The intent with the leases a state write by `actor` must respect: every lease still holding
 * its scope, and the actor's own history on it (newest first).
 */
export async function selectIntentForWrite(query: Query, intentId: string, actor: string): Promise<{ intent: RawIntent; leases: LeaseRow[] } | undefined> {
  const rows = await query<RawIntent & { leases: Record<string, unknown>[] }>(
    "intents_get_for_write",
    `select ${INTENT_COLUMNS.split(", ").map((c) => `i.${c}`).join(", ")},
       (select coalesce(json_agg(l order by l.acquired_at desc), '[]'::json)
        from intents.leases l where l.intent_id = i.id and (l.holds_scope or l.agent_id = $2)) as leases
     from intents.intents i where i.id = $1`,
    [intentId, actor],
  );
  const row = rows[0];
  if (!row) return undefined;
  return { intent: row, leases: row.leases.map(leaseFromRaw) };
}

/**
 * A lease row read by raw SQL (`returning l.*`, `json_agg(l)`: column names, timestamps as Date
 * or as JSON strings) in the shape drizzle gives it.
 */
export function leaseFromRaw(row: Record<string, unknown>): LeaseRow {
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string | Date));
  return {
    id: String(row.id),
    intentId: String(row.intent_id),
    agentId: String(row.agent_id),
    scope: String(row.scope),
    scopeKey: String(row.scope_key),
    acquiredAt: date(row.acquired_at)!,
    expiresAt: date(row.expires_at)!,
    releasedAt: date(row.released_at),
    holdsScope: row.holds_scope === true,
    endReason: (row.end_reason as string | null) ?? null,
    endedAt: date(row.ended_at),
  };
}

/** POST /intents as one statement: the intent at version 1, its intent_created event and outbox row. */
export async function insertIntent(query: Query, intent: Intent, event: NewEvent, at: Date): Promise<void> {
  const prepared = prepareEvent(intent.id, event, at);
  await query(
    "intents_create",
    `with h as (select ${chainHashSql(CREATE.before, "null", "1", CREATE.afterOpen)} as hash),
     w as (select h.hash, ${canonicalWireSql(CREATE.before, "null", "1", CREATE.afterOpen, "h.hash")} as wire from h),
     i as (
       insert into intents.intents (id, title, description, created_by, status, constraints, state, confidence, version, event_seq, chain_seq, chain_head, chain_previous, created_at, updated_at)
       select $1::uuid, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::jsonb, $8::float8, 1, 1, 1, w.hash, null, $9::timestamptz, $9::timestamptz from w),
     e as (${CREATE_EVENT.events})
     ${CREATE_EVENT.outbox}`,
    [
      intent.id,
      intent.title,
      intent.description,
      intent.created_by,
      intent.status,
      JSON.stringify(intent.constraints),
      JSON.stringify(intent.state),
      intent.confidence,
      prepared.createdAt,
      ...prepared.params,
    ],
  );
}

/**
 * POST /intents/{id}/events as one statement: takes the next sequence (locking the intent row,
 * honouring an If-Match), writes the event and its outbox row. Undefined when the intent is
 * absent or past the If-Match version. The answer carries the event and its served JSON (`json`,
 * the bytes the log stores), which the handler replies with as it is.
 */
export async function appendEventReply(
  query: Query,
  intentId: string,
  ifMatch: number | null,
  event: NewEvent,
  at: Date,
  /**
   * Write only when the intent has neither a governance policy nor an access-control list (the
   * caller checks those itself, then appends without this).
   */
  onlyUngoverned = false,
): Promise<{ event: IntentEvent; json: string } | undefined> {
  const prepared = prepareEvent(intentId, event, at);
  const rows = await query<{ sequence: string | number } & ChainFields>(
    "intents_append_event",
    `with s as (
       update intents.intents x set event_seq = x.event_seq + 1, ${advanceChainSql("x", APPEND.before, APPEND.afterOpen)}
       where x.id = $1 and ($2::int is null or x.version = $2::int) and (not $3::bool or (x.governance_policy is null and x.acl_policy is null))
       returning x.event_seq, x.chain_head, x.chain_previous,
         ${canonicalWireSql(APPEND.before, "x.chain_previous", "x.event_seq", APPEND.afterOpen, "x.chain_head")} as wire),
     e as (${APPEND_EVENT.events}),
     o as (${APPEND_EVENT.outbox})
     select event_seq as sequence, chain_head as event_hash, chain_previous as previous_event_hash from s`,
    [intentId, ifMatch, onlyUngoverned, prepared.createdAt, event.traceId ?? null, event.parentEventId ?? null, ...prepared.params],
  );
  const row = rows[0];
  if (!row) return undefined;
  const sequence = Number(row.sequence);
  return { event: prepared.complete(sequence, row), json: prepared.wire(sequence, row) };
}

/** appendEventReply's event alone. */
export async function appendEventStatement(...args: Parameters<typeof appendEventReply>): Promise<IntentEvent | undefined> {
  return (await appendEventReply(...args))?.event;
}

/**
 * A change to the intent object itself (state or status) as one statement: conditional on the
 * version it was computed from and, for state writes, on the lease epoch it was checked
 * against; version + 1; its event and outbox row. Undefined when either condition failed.
 * The answer is the written intent's wire JSON as PostgreSQL writes it (intentJsonSql, as GET
 * serves it) with its version: the handlers reply with it as it is, nothing parsed or encoded again.
 */
export async function commitChangeStatement(
  query: Query,
  intentId: string,
  expected: { version: number; leaseEpoch: number | null },
  change: { state?: JsonObject; status?: IntentStatus },
  event: NewEvent,
  at: Date,
): Promise<RawJson<Intent> | undefined> {
  const prepared = prepareEvent(intentId, event, at);
  const rows = await query<{ version: number; json: string }>(
    "intents_commit_change",
    `with u as (
       update intents.intents x
       set state = coalesce($3::jsonb, x.state), status = coalesce($4::text, x.status),
           -- a status change ends whatever block the server had put on the intent
           blocked_reason = case when $4::text is null then x.blocked_reason end,
           version = x.version + 1, event_seq = x.event_seq + 1, updated_at = $5,
           ${advanceChainSql("x", CHANGE.before, CHANGE.afterOpen)}
       where x.id = $1 and x.version = $2::int and ($6::int is null or x.lease_epoch = $6::int)
       returning ${INTENT_COLUMNS.split(", ").map((c) => `x.${c}`).join(", ")}, x.chain_head, x.chain_previous,
         ${canonicalWireSql(CHANGE.before, "x.chain_previous", "x.event_seq", CHANGE.afterOpen, "x.chain_head")} as wire),
     e as (${CHANGE_EVENT.events}),
     o as (${CHANGE_EVENT.outbox})
     select u.version, ${intentJsonSql("u")} as json from u`,
    [
      intentId,
      expected.version,
      change.state === undefined ? null : JSON.stringify(change.state),
      change.status ?? null,
      prepared.createdAt,
      expected.leaseEpoch,
      ...prepared.params,
    ],
  );
  const row = rows[0];
  return row ? new RawJson<Intent>(row.json, Number(row.version)) : undefined;
}

/**
 * GET /intents/{id}/events without a type filter, the common page read: the stored wire forms
 * of the events joined into one JSON array by Postgres; nothing is parsed or encoded again. `fetched` counts up to
 * limit + 1 rows, so more than `limit` means another page follows.
 */
export async function selectEventPageJson(query: Query, intentId: string, after: number, limit: number) {
  const rows = await query<{ fetched: number; shown: number; last: string | number | null; events: string }>(
    "intents_events_page_json",
    `with page as (
       select sequence, wire from intents.events
       where intent_id = $1 and sequence > $2 order by sequence limit $3::int + 1),
     ${SHOWN_WITHIN_PAGE_BYTES("sequence", "$3", "$4")}
     select (select count(*)::int from page) as fetched,
            (select count(*)::int from shown) as shown,
            (select max(sequence) from shown) as last,
            (select '[' || coalesce(string_agg(wire, ',' order by sequence), '') || ']' from shown) as events`,
    [intentId, after, limit, LIMITS.pageBytes],
  );
  const row = rows[0]!;
  return { hasMore: Number(row.fetched) > Number(row.shown), fetched: Number(row.fetched), last: row.last === null ? null : Number(row.last), eventsJson: row.events };
}

/**
 * The CTE \`shown\`: the first rows of \`page\` (ordered by orderColumn) up to limitParam rows and
 * pageBytesParam bytes of wire form, and always the first row, so no page outgrows a bus message
 * (LIMITS.pageBytes) and every page moves the cursor.
 */
export const SHOWN_WITHIN_PAGE_BYTES = (orderColumn: string, limitParam: string, pageBytesParam: string) =>
  `sized as (
       select *, sum(octet_length(wire)) over (order by ${orderColumn}) as running_bytes,
              row_number() over (order by ${orderColumn}) as n
       from page),
     shown as (
       select * from sized
       where n <= ${limitParam}::int and (running_bytes <= ${pageBytesParam}::bigint or n = 1))`;
