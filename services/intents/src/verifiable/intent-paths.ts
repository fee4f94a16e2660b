import { and, asc, between, desc, eq, gte, lte } from "drizzle-orm";
import { appError, errors, isoTimestamp, MAX_HASH_CHAIN_EVENTS, type HashChain, type LogCheckpoint, type MerkleProof } from "@intentmesh/contracts";
import type { IntentsContext } from "../kernel/context";
import { events, intents } from "../db/schema";
import { checkpoints } from "../db/schema-checkpoints";
import { checkpointRow, toCheckpoint } from "./store";
import { inclusionProof } from "./handlers";

/**
 * RFC 0019 at the official MCP server's paths, under the intent (docs/compatibility.md): the
 * chain of a range, an event's inclusion proof without naming its checkpoint, and the intent's
 * checkpoints by id or the latest. Each reads what the RFC-path handlers read.
 */

async function lastSequenceOf(ctx: IntentsContext, intentId: string): Promise<number> {
  const [row] = await ctx.db.select({ eventSeq: intents.eventSeq }).from(intents).where(eq(intents.id, intentId));
  if (!row) throw errors.notFound("intent", intentId);
  return row.eventSeq;
}

/** GET /intents/{id}/events/hashchain?from&to: at most MAX_HASH_CHAIN_EVENTS links a call. */
export async function hashChain(ctx: IntentsContext, intentId: string, query: { from: number; to?: number | undefined }): Promise<HashChain> {
  const last = await lastSequenceOf(ctx, intentId);
  const to = Math.min(query.to ?? Number.MAX_SAFE_INTEGER, query.from + MAX_HASH_CHAIN_EVENTS - 1);
  const rows = await ctx.db
    .select({ sequence: events.sequence, id: events.id, eventType: events.eventType, createdAt: events.createdAt, previousEventHash: events.previousEventHash, eventHash: events.eventHash })
    .from(events)
    .where(and(eq(events.intentId, intentId), between(events.sequence, query.from, to)))
    .orderBy(asc(events.sequence));
  return {
    intent_id: intentId,
    algorithm: "sha256",
    from_sequence: query.from,
    to_sequence: to,
    last_sequence: last,
    links: rows.map((row) => ({ sequence: row.sequence, event_id: row.id, event_type: row.eventType, created_at: isoTimestamp(row.createdAt), previous_event_hash: row.previousEventHash, event_hash: row.eventHash })),
    has_more: last > to,
  };
}

/** GET /intents/{id}/events/{event_id}/proof: the proof in the checkpoint covering the event. */
export async function eventProof(ctx: IntentsContext, intentId: string, eventId: string): Promise<MerkleProof> {
  const [event] = await ctx.db.select({ sequence: events.sequence }).from(events).where(and(eq(events.intentId, intentId), eq(events.id, eventId)));
  if (!event) {
    await lastSequenceOf(ctx, intentId);
    throw appError("EVENT_NOT_IN_CHECKPOINT", `event ${eventId} is not an event of intent ${intentId}`, { intent_id: intentId, event_id: eventId });
  }
  const [covering] = await ctx.db
    .select({ id: checkpoints.id })
    .from(checkpoints)
    .where(and(eq(checkpoints.intentId, intentId), lte(checkpoints.firstSequence, event.sequence), gte(checkpoints.lastSequence, event.sequence)));
  if (!covering) {
    throw appError(
      "EVENT_NOT_IN_CHECKPOINT",
      `event ${eventId} (sequence ${event.sequence}) of intent ${intentId} is not covered by a checkpoint yet: the checkpoint sweeper makes one on schedule, an admin with POST /admin/checkpoints`,
      { intent_id: intentId, event_id: eventId },
    );
  }
  return inclusionProof(ctx, covering.id, eventId);
}

/** GET /intents/{id}/events/checkpoints/{checkpoint_id}: a checkpoint of another intent is not found here. */
export async function intentCheckpoint(ctx: IntentsContext, intentId: string, checkpointId: string): Promise<LogCheckpoint> {
  const row = await checkpointRow(ctx.db, checkpointId);
  if (!row || row.intentId !== intentId) {
    await lastSequenceOf(ctx, intentId);
    throw errors.notFound("checkpoint", checkpointId);
  }
  return toCheckpoint(row);
}

/** GET /intents/{id}/events/checkpoints/latest: the one covering the newest checkpointed events. */
export async function latestCheckpoint(ctx: IntentsContext, intentId: string): Promise<LogCheckpoint> {
  const [row] = await ctx.db.select().from(checkpoints).where(eq(checkpoints.intentId, intentId)).orderBy(desc(checkpoints.lastSequence)).limit(1);
  if (!row) {
    await lastSequenceOf(ctx, intentId);
    throw appError("CHECKPOINT_NOT_FOUND", `intent ${intentId} has no checkpoint yet: the checkpoint sweeper makes one on schedule, an admin with POST /admin/checkpoints`, { intent_id: intentId });
  }
  return toCheckpoint(row);
}
