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
import { sqlEventInserts, sqlEventMsgId, traceCarrier, traceFields } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { GovernancePolicy } from "@intentmesh/contracts";
import type { NewEvent } from "./event-log";
import type { leases } from "../db/schema";
import { advanceChainSql, canonicalAroundChain, chainHashSql, sealedWireSql } from "./event-chain";

/**
 * The hot paths of the intents service as single SQL statements, run as named prepared
 * statements. Each write is ONE statement: the change, its event-log row and its outbox row
 * are CTEs of it, so they commit together without a transaction round trip, and the outbox
 * message id is built by the same statement that takes the sequence number:
 * `intent:<id>:e<sequence>` (the catalogue's intentEventMsgId).
 *
 * The outbox payload is the event's JSON with its sequence spliced in by SQL, so the event is
 * serialized once, in JS, before the sequence is known. Its RFC 0019 hash is computed by the same
 * UPDATE that takes the sequence, from the chain head on the intent row and the event's canonical
 * JSON in two parts made here (kernel/event-chain.ts): no trigger, no lookup of the event before.
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


/** An event about to be written, serialized once: the JSON of everything but its sequence. */
function prepareEvent(intentId: string, event: NewEvent, at: Date) {
  const id = randomUUID();
  const createdAt = isoTimestamp(at);
  const tracing = traceFields(event);
  const content = { id, intent_id: intentId, event_type: event.eventType, actor: event.actor, payload: event.payload, created_at: createdAt, ...tracing };
  // The JSON between the braces: the statement writes `{"sequence":N,` before it and the hash fields after it.
  const inner = JSON.stringify(content).slice(1, -1);
  const canonical = canonicalAroundChain(content);
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
  const subject = intentEventSubject(intentId, event.eventType);
  /** The event's parameters in the order the create and change statements take them. */
  const params = [id, event.eventType, event.actor, JSON.stringify(event.payload), subject, inner, headers, canonical.before, canonical.after];
  return { id, inner, headers, subject, params, canonical, complete };
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

const CREATE_EVENT = intentEventInserts("w", {
  id: "$10", intentId: "$1::uuid", sequence: "1", eventType: "$11", actor: "$12", payload: "$13::jsonb", createdAt: "$9", wire: "w.wire", subject: "$14", headers: "$16::jsonb",
  chain: { eventHash: "w.hash", previousEventHash: "null" },
});
const APPEND_EVENT = intentEventInserts("s", {
  id: "$3", intentId: "$1::uuid", sequence: "s.event_seq", eventType: "$4", actor: "$5", payload: "$6::jsonb", createdAt: "$7", wire: "s.wire", subject: "$8", headers: "$10::jsonb", traceId: "$11", parentEventId: "$12::uuid",
  chain: { eventHash: "s.chain_head", previousEventHash: "s.chain_previous" },
});
const CHANGE_EVENT = intentEventInserts("u", {
  id: "$7", intentId: "u.id", sequence: "u.event_seq", eventType: "$8", actor: "$9", payload: "$10::jsonb", createdAt: "$5", wire: "u.wire", subject: "$11", headers: "$13::jsonb",
  chain: { eventHash: "u.chain_head", previousEventHash: "u.chain_previous" },
});

export async function selectIntent(query: Query, intentId: string): Promise<(RawIntent & { leases?: unknown }) | undefined> {
  const rows = await query<RawIntent>("intents_get", `select ${INTENT_COLUMNS} from intents.intents where id = $1`, [intentId]);
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
    `with h as (select ${chainHashSql("$17", "null", "1", "$18")} as hash),
     w as (select h.hash, ${sealedWireSql(`'{"sequence":1,' || $15::text`, "null", "h.hash")} as wire from h),
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
      at,
      ...prepared.params,
    ],
  );
}

/**
 * POST /intents/{id}/events as one statement: takes the next sequence (locking the intent row,
 * honouring an If-Match), writes the event and its outbox row. Undefined when the intent is
 * absent or past the If-Match version.
 */
export async function appendEventStatement(
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
): Promise<IntentEvent | undefined> {
  const prepared = prepareEvent(intentId, event, at);
  const rows = await query<{ sequence: string | number } & ChainFields>(
    "intents_append_event",
    `with s as (
       update intents.intents x set event_seq = x.event_seq + 1, ${advanceChainSql("x", "$14", "$15")}
       where x.id = $1 and ($2::int is null or x.version = $2::int) and (not $13::bool or (x.governance_policy is null and x.acl_policy is null))
       returning x.event_seq, x.chain_head, x.chain_previous,
         ${sealedWireSql(`'{"sequence":' || x.event_seq || ',' || $9::text`, "x.chain_previous", "x.chain_head")} as wire),
     e as (${APPEND_EVENT.events}),
     o as (${APPEND_EVENT.outbox})
     select event_seq as sequence, chain_head as event_hash, chain_previous as previous_event_hash from s`,
    [intentId, ifMatch, prepared.id, event.eventType, event.actor, JSON.stringify(event.payload), at, prepared.subject, prepared.inner, prepared.headers, event.traceId ?? null, event.parentEventId ?? null, onlyUngoverned, prepared.canonical.before, prepared.canonical.after],
  );
  const row = rows[0];
  return row ? prepared.complete(Number(row.sequence), row) : undefined;
}

/**
 * A change to the intent object itself (state or status) as one statement: conditional on the
 * version it was computed from and, for state writes, on the lease epoch it was checked
 * against; version + 1; its event and outbox row. Undefined when either condition failed.
 */
export async function commitChangeStatement(
  query: Query,
  intentId: string,
  expected: { version: number; leaseEpoch: number | null },
  change: { state?: JsonObject; status?: IntentStatus },
  event: NewEvent,
  at: Date,
): Promise<Intent | undefined> {
  const prepared = prepareEvent(intentId, event, at);
  const rows = await query<RawIntent>(
    "intents_commit_change",
    `with u as (
       update intents.intents x
       set state = coalesce($3::jsonb, x.state), status = coalesce($4::text, x.status),
           -- a status change ends whatever block the server had put on the intent
           blocked_reason = case when $4::text is null then x.blocked_reason end,
           version = x.version + 1, event_seq = x.event_seq + 1, updated_at = $5,
           ${advanceChainSql("x", "$14", "$15")}
       where x.id = $1 and x.version = $2::int and ($6::int is null or x.lease_epoch = $6::int)
       returning ${INTENT_COLUMNS.split(", ").map((c) => `x.${c}`).join(", ")}, x.chain_head, x.chain_previous,
         ${sealedWireSql(`'{"sequence":' || x.event_seq || ',' || $12::text`, "x.chain_previous", "x.chain_head")} as wire),
     e as (${CHANGE_EVENT.events}),
     o as (${CHANGE_EVENT.outbox})
     select * from u`,
    [
      intentId,
      expected.version,
      change.state === undefined ? null : JSON.stringify(change.state),
      change.status ?? null,
      at,
      expected.leaseEpoch,
      ...prepared.params,
    ],
  );
  return rows[0] ? rawToIntent(rows[0]) : undefined;
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
