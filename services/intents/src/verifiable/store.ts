import crypto from "node:crypto";
import { and, asc, between, eq, gt, lte, sql } from "drizzle-orm";
import { canonicalJson, isoTimestamp, publicKeyOfDidKey, type LogCheckpoint, type TimestampAnchor } from "@intentmesh/contracts";
import type { Queryable } from "@intentmesh/db";
import { events } from "../db/schema";
import { checkpoints } from "../db/schema-checkpoints";
import type { StoredEvent } from "./chain";

/** The statements of verifiable logs: pages of an intent's stored events, checkpoint rows. */

export type CheckpointRow = typeof checkpoints.$inferSelect;

/** Rows are read in pages of this many, so a long log is verified in bounded memory. */
const PAGE = 500;

/** The stored events of an intent from `fromSequence` (up to `toSequence`), oldest first, page by page. */
export async function* storedEvents(db: Queryable, intentId: string, fromSequence = 1, toSequence: number | null = null): AsyncGenerator<StoredEvent> {
  let after = fromSequence - 1;
  for (;;) {
    const conditions = [eq(events.intentId, intentId), gt(events.sequence, after)];
    if (toSequence !== null) conditions.push(lte(events.sequence, toSequence));
    const rows = await db.select().from(events).where(and(...conditions)).orderBy(asc(events.sequence)).limit(PAGE);
    for (const row of rows) yield row;
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1]!.sequence;
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

