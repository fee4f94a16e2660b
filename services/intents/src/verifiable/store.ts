import crypto from "node:crypto";
import { and, asc, between, eq, gt, sql } from "drizzle-orm";
import { canonicalJson, isoTimestamp, publicKeyOfDidKey, type LogCheckpoint, type TimestampAnchor } from "@intentmesh/contracts";
import { rowsOf, withParams, type Queryable } from "@intentmesh/db";
import { events } from "../db/schema";
import { checkpoints } from "../db/schema-checkpoints";
import type { StoredEvent } from "./chain";

/** The statements of verifiable logs: pages of an intent's stored events, checkpoint rows. */

export type CheckpointRow = typeof checkpoints.$inferSelect;

/** Rows are read in pages of this many, so a long log is verified in bounded memory. */
const PAGE = 500;

/**
 * The columns verification reads, as one text statement: a checkpoint verifies every event it
 * covers (about one per append), so the rows are read without the query builder's per-row mapping
 * and without the columns no check needs.
 */
const STORED_EVENTS_PAGE = `
  select id, intent_id, sequence, event_type, actor, payload, created_at, trace_id, parent_event_id, wire, event_hash, previous_event_hash
  from intents.events
  where intent_id = $1 and sequence > $2 and ($3::bigint is null or sequence <= $3::bigint)
  order by sequence limit $4`;

type StoredEventRow = {
  id: string;
  intent_id: string;
  sequence: string | number;
  event_type: string;
  actor: string;
  payload: Record<string, unknown>;
  /** drizzle's driver hands timestamps over as the text PostgreSQL prints. */
  created_at: string | Date;
  trace_id: string | null;
  parent_event_id: string | null;
  wire: string;
  event_hash: string | null;
  previous_event_hash: string | null;
};

const storedEventOf = (row: StoredEventRow): StoredEvent => ({
  id: row.id,
  intentId: row.intent_id,
  sequence: Number(row.sequence),
  eventType: row.event_type,
  actor: row.actor,
  payload: row.payload,
  createdAt: new Date(row.created_at),
  traceId: row.trace_id,
  parentEventId: row.parent_event_id,
  wire: row.wire,
  eventHash: row.event_hash,
  previousEventHash: row.previous_event_hash,
});

/** The stored events of an intent from `fromSequence` (up to `toSequence`), oldest first, page by page. */
export async function* storedEvents(db: Queryable, intentId: string, fromSequence = 1, toSequence: number | null = null): AsyncGenerator<StoredEvent> {
  let after = fromSequence - 1;
  for (;;) {
    const rows = rowsOf<StoredEventRow>(await db.execute(withParams(STORED_EVENTS_PAGE, [intentId, after, toSequence, PAGE])));
    for (const row of rows) yield storedEventOf(row);
    if (rows.length < PAGE) return;
    after = Number(rows[rows.length - 1]!.sequence);
  }
}

/** Sequence, id and hash of the events of a range, oldest first (what a Merkle tree is built from). */
export function rangeHashes(db: Queryable, intentId: string, first: number, last: number) {
  return db
    .select({ sequence: events.sequence, id: events.id, eventHash: events.eventHash })
    .from(events)
    .where(and(eq(events.intentId, intentId), between(events.sequence, first, last)))
    .orderBy(asc(events.sequence));
}

export async function storedHashOf(db: Queryable, intentId: string, sequence: number): Promise<string | null> {
  const [row] = await db.select({ eventHash: events.eventHash }).from(events).where(and(eq(events.intentId, intentId), eq(events.sequence, sequence)));
  return row?.eventHash ?? null;
}

/** The last sequence an intent's checkpoints cover (0 when it has none). */
export async function checkpointedThrough(db: Queryable, intentId: string): Promise<number> {
  const [row] = await db.select({ last: sql<string | null>`max(${checkpoints.lastSequence})` }).from(checkpoints).where(eq(checkpoints.intentId, intentId));
  return Number(row?.last ?? 0);
}

export async function checkpointRow(db: Queryable, checkpointId: string): Promise<CheckpointRow | undefined> {
  const [row] = await db.select().from(checkpoints).where(eq(checkpoints.id, checkpointId));
  return row;
}

export function checkpointsOf(db: Queryable, intentId: string) {
  return db.select().from(checkpoints).where(eq(checkpoints.intentId, intentId)).orderBy(asc(checkpoints.firstSequence));
}

/** Checkpoints listed after `after` (keyset): by sequence within one intent, else by creation. */
export async function listCheckpointRows(db: Queryable, filter: { intentId?: string; scope?: string; after?: CheckpointRow; limit: number }) {
  const conditions = [];
  if (filter.intentId) conditions.push(eq(checkpoints.intentId, filter.intentId));
  if (filter.scope) conditions.push(eq(checkpoints.scope, filter.scope));
  if (filter.intentId) {
    if (filter.after) conditions.push(gt(checkpoints.firstSequence, filter.after.firstSequence));
    return db.select().from(checkpoints).where(and(...conditions)).orderBy(asc(checkpoints.firstSequence)).limit(filter.limit);
  }
  if (filter.after) conditions.push(sql`(${checkpoints.createdAt}, ${checkpoints.id}) > (${filter.after.createdAt}, ${filter.after.id})`);
  return db.select().from(checkpoints).where(and(...conditions)).orderBy(asc(checkpoints.createdAt), asc(checkpoints.id)).limit(filter.limit);
}

/** Sets the anchor of a checkpoint that has none; undefined when it has one already or is absent. */
export async function setAnchor(db: Queryable, checkpointId: string, anchor: TimestampAnchor): Promise<CheckpointRow | undefined> {
  const [row] = await db
    .update(checkpoints)
    .set({ anchor })
    .where(and(eq(checkpoints.id, checkpointId), sql`${checkpoints.anchor} is null`))
    .returning();
  return row;
}

export function toCheckpoint(row: CheckpointRow): LogCheckpoint {
  return {
    checkpoint_id: row.id,
    intent_id: row.intentId,
    scope: row.scope as LogCheckpoint["scope"],
    merkle_root: row.merkleRoot,
    event_count: row.eventCount,
    first_sequence: row.firstSequence,
    last_sequence: row.lastSequence,
    created_at: isoTimestamp(row.createdAt),
    signed_by: row.signedBy,
    signature: row.signature,
    anchor: (row.anchor as TimestampAnchor | null) ?? null,
  };
}

/** Whether a checkpoint's signature is its signer's over its canonical JSON with anchor null (RFC 0019 3.3). */
export function signatureHolds(checkpoint: LogCheckpoint): boolean {
  const key = publicKeyOfDidKey(checkpoint.signed_by);
  if (!key) return false;
  const { signature, ...signed } = checkpoint;
  try {
    return crypto.verify(null, Buffer.from(canonicalJson({ ...signed, anchor: null }), "utf8"), key, Buffer.from(signature, "base64url"));
  } catch {
    return false;
  }
}

