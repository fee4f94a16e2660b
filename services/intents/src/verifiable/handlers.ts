import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import {
  appError,
  digestOfTag,
  errors,
  federationCommands,
  isoTimestamp,
  fitPage,
  jsonBytes,
  tagOfDigest,
  type Caller,
  type ChainBreak,
  type ChainVerification,
  type CheckpointBreak,
  type CheckpointStatement,
  type ConsistencyProof,
  type LogCheckpoint,
  type MerkleProof,
  type TimestampAnchor,
} from "@intentmesh/contracts";
import { eq } from "drizzle-orm";
import { rowsOf, type Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { intents } from "../db/schema";
import { checkpoints } from "../db/schema-checkpoints";
import { ChainChecker, type StoredEvent } from "./chain";
import { merkleProof, merkleRoot } from "./merkle";
import {
  checkpointedThrough,
  checkpointRow,
  checkpointsOf,
  listCheckpointRows,
  rangeHashes,
  setAnchor,
  signatureHolds,
  storedEvents,
  storedHashOf,
  toCheckpoint,
  type CheckpointRow,
} from "./store";

/** At most this many breaks are listed; the first is always the first break of the log. */
const MAX_BREAKS = 100;
/** The most events one checkpoint covers when an administrator asks (the sweeper's batches are smaller). */
export const MAX_CHECKPOINT_EVENTS = 10_000;
/** Who the intents service is when it asks the federation service to sign. */
const SIGNING_CALLER: Caller = { principal: "service:intents", roles: ["admin"], actor: "service:intents", agent_id: null };

/**
 * Collects the leaves of checkpoints as the events of a log stream by (checkpoints in sequence
 * order), and tells which of them no longer match the stored events or their signature.
 */
class CheckpointTracker {
  private index = 0;
  private leaves: Buffer[] = [];
  readonly breaks: CheckpointBreak[] = [];
  readonly boundaries = new Map<number, StoredEvent>();

  constructor(private readonly rows: CheckpointRow[]) {}

  see(event: StoredEvent): void {
    while (this.current && event.sequence > this.current.lastSequence) this.finish();
    const current = this.current;
    if (!current || event.sequence < current.firstSequence) return;
    const digest = event.eventHash ? digestOfTag(event.eventHash) : null;
    if (digest) this.leaves.push(digest);
    if (event.sequence === current.lastSequence) this.finish();
  }

  end(): void {
    while (this.current) this.finish();
  }

  get checked(): number {
    return this.index;
  }

  private get current(): CheckpointRow | undefined {
    return this.rows[this.index];
  }

  private finish(): void {
    const row = this.rows[this.index]!;
    const problem = checkpointProblem(row, this.leaves);
    if (problem) this.breaks.push(problem);
    this.leaves = [];
    this.index += 1;
  }
}

function checkpointProblem(row: CheckpointRow, leaves: Buffer[]): CheckpointBreak | null {
  const base = { checkpoint_id: row.id, first_sequence: row.firstSequence, last_sequence: row.lastSequence };
  if (leaves.length !== row.eventCount) {
    return { ...base, reason: "events_missing", message: `checkpoint ${row.id} covers ${row.eventCount} events; ${leaves.length} hashed ones remain in its range` };
  }
  if (tagOfDigest(merkleRoot(leaves)) !== row.merkleRoot) {
    return { ...base, reason: "merkle_root_mismatch", message: `the events of checkpoint ${row.id} no longer give its merkle_root` };
  }
  if (!signatureHolds(toCheckpoint(row))) {
    return { ...base, reason: "signature_invalid", message: `the signature of checkpoint ${row.id} does not hold for its signed_by key` };
  }
  return null;
}

/** GET /intents/{id}/events/verify: the whole chain and every checkpoint of the intent, checked from the stored rows. */
export async function verifyLog(ctx: IntentsContext, intentId: string): Promise<ChainVerification> {
  const [intent] = await ctx.db.select({ eventSeq: intents.eventSeq }).from(intents).where(eq(intents.id, intentId));
  if (!intent) throw errors.notFound("intent", intentId);
  const checker = new ChainChecker();
  const tracker = new CheckpointTracker(await checkpointsOf(ctx.db, intentId));
  const breaks: ChainBreak[] = [];
  let truncated = false;
  const add = (found: ChainBreak[]) => {
    for (const b of found) {
      if (breaks.length < MAX_BREAKS) breaks.push(b);
      else truncated = true;
    }
  };
  let first = 0;
  let last = 0;
  for await (const event of storedEvents(ctx.db, intentId)) {
    if (!first) first = event.sequence;
    last = event.sequence;
    add(checker.check(event));
    tracker.see(event);
  }
  const end = checker.missingAtEnd(intent.eventSeq);
  if (end) add([end]);
  tracker.end();
  const valid = breaks.length === 0 && tracker.breaks.length === 0;
  return {
    intent_id: intentId,
    event_count: checker.checked,
    first_sequence: first,
    last_sequence: last,
    chain_valid: valid,
    valid,
    breaks,
    breaks_truncated: truncated,
    checkpoints_checked: tracker.checked,
    checkpoint_breaks: tracker.breaks,
  };
}

/** When a checkpoint is made: an administrator's request (everything pending), or the sweeper's triggers. */
export type CheckpointTrigger =
  | { kind: "request" }
  | { kind: "schedule"; batchEvents: number; maxAgeMs: number; now: Date };

/**
 * Checkpoints the events of an intent after its last checkpoint (RFC 0019 3.1): verifies them
 * first (the server never signs a broken chain), builds the Merkle tree, has the server identity
 * sign it, and stores it. One checkpoint maker per intent at a time, on every replica: a
 * per-intent advisory lock; the sweeper skips an intent that is being checkpointed. Undefined when
 * there is nothing to do (nothing pending, or no trigger due, or another replica at it).
 */
export async function makeCheckpoint(ctx: IntentsContext, intentId: string, trigger: CheckpointTrigger): Promise<LogCheckpoint | undefined> {
  return ctx.db.transaction(async (tx) => {
    if (trigger.kind === "request") {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext('im-intents-checkpoint'), hashtext(${intentId}))`);
    } else {
      const [lock] = rowsOf<{ locked: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(hashtext('im-intents-checkpoint'), hashtext(${intentId})) as locked`));
      if (!lock?.locked) return undefined;
    }
    const [intent] = await tx.select({ eventSeq: intents.eventSeq }).from(intents).where(eq(intents.id, intentId));
    if (!intent) throw errors.notFound("intent", intentId);
    const done = await checkpointedThrough(tx, intentId);
    const pending = intent.eventSeq - done;
    if (pending <= 0) {
      if (trigger.kind === "request") throw appError("NOTHING_TO_CHECKPOINT", `intent ${intentId} has no events after its last checkpoint (sequence ${done})`, { intent_id: intentId, last_sequence: done });
      return undefined;
    }
    let size = Math.min(pending, MAX_CHECKPOINT_EVENTS);
    if (trigger.kind === "schedule") {
      size = Math.min(pending, trigger.batchEvents);
      if (pending < trigger.batchEvents && !(await oldestPendingDue(tx, intentId, done + 1, trigger))) return undefined;
    }
    return toCheckpoint(await writeCheckpoint(ctx, tx, intentId, done, done + size));
  });
}

async function oldestPendingDue(tx: Tx, intentId: string, sequence: number, trigger: { maxAgeMs: number; now: Date }): Promise<boolean> {
  for await (const event of storedEvents(tx, intentId, sequence, sequence)) return event.createdAt.getTime() <= trigger.now.getTime() - trigger.maxAgeMs;
  return false;
}

async function writeCheckpoint(ctx: IntentsContext, tx: Tx, intentId: string, done: number, last: number): Promise<CheckpointRow> {
  const first = done + 1;
  const checker = new ChainChecker(first, done > 0 ? await storedHashOf(tx, intentId, done) : null);
  const leaves: Buffer[] = [];
  const breaks: ChainBreak[] = [];
  for await (const event of storedEvents(tx, intentId, first, last)) {
    breaks.push(...checker.check(event));
    const digest = event.eventHash ? digestOfTag(event.eventHash) : null;
    if (digest) leaves.push(digest);
  }
  const end = checker.missingAtEnd(last);
  if (end) breaks.push(end);
  if (breaks.length) {
    ctx.logger.error({ intentId, breaks: breaks.slice(0, 5) }, "checkpoint refused: the stored log does not verify");
    throw appError("LOG_TAMPERED", `the events ${first}..${last} of intent ${intentId} do not verify; no checkpoint is signed over them (GET /intents/${intentId}/events/verify)`, {
      intent_id: intentId,
      breaks: breaks.slice(0, 10),
    });
  }
  const statement: CheckpointStatement = {
    checkpoint_id: randomUUID(),
    intent_id: intentId,
    scope: "intent",
    merkle_root: tagOfDigest(merkleRoot(leaves)),
    event_count: leaves.length,
    first_sequence: first,
    last_sequence: last,
    created_at: isoTimestamp(ctx.clock.now()),
  };
  if (!ctx.client) throw appError("SIGNING_UNAVAILABLE", "this intents service has no bus client to reach the server identity");
  const signed = await ctx.client.request(federationCommands.signCheckpoint, SIGNING_CALLER, { checkpoint: statement });
  const [row] = await tx
    .insert(checkpoints)
    .values({
      id: statement.checkpoint_id,
      intentId,
      scope: statement.scope,
      merkleRoot: statement.merkle_root,
      eventCount: statement.event_count,
      firstSequence: first,
      lastSequence: last,
      createdAt: new Date(statement.created_at),
      signedBy: signed.signed_by,
      signature: signed.signature,
      anchor: null,
    })
    .returning();
  return row!;
}

/** POST /admin/checkpoints. */
export async function createCheckpoint(ctx: IntentsContext, intentId: string): Promise<LogCheckpoint> {
  const made = await makeCheckpoint(ctx, intentId, { kind: "request" });
  return made!;
}

export async function getCheckpoint(ctx: IntentsContext, checkpointId: string): Promise<LogCheckpoint> {
  const row = await checkpointRow(ctx.db, checkpointId);
  if (!row) throw errors.notFound("checkpoint", checkpointId);
  return toCheckpoint(row);
}

/** GET /checkpoints: a bare array (the client's list_checkpoints parses a list), paged by `after` and `limit`. */
export async function listCheckpoints(ctx: IntentsContext, query: { intent_id?: string; scope?: string; after?: string; limit: number }): Promise<LogCheckpoint[]> {
  let after: CheckpointRow | undefined;
  if (query.after) {
    after = await checkpointRow(ctx.db, query.after);
    if (!after) throw errors.validation(`after names no checkpoint: ${query.after}`);
  }
  const rows = await listCheckpointRows(ctx.db, { intentId: query.intent_id, scope: query.scope, after, limit: query.limit });
  return fitPage(rows.map(toCheckpoint), jsonBytes).items;
}

/** GET /checkpoints/{id}/proof/{event_id}: RFC 0019 4.1, from the stored hashes, which must still give the signed root. */
export async function inclusionProof(ctx: IntentsContext, checkpointId: string, eventId: string): Promise<MerkleProof> {
  const row = await checkpointRow(ctx.db, checkpointId);
  if (!row) throw errors.notFound("checkpoint", checkpointId);
  const hashes = await rangeHashes(ctx.db, row.intentId, row.firstSequence, row.lastSequence);
  const index = hashes.findIndex((h) => h.id === eventId);
  if (index < 0) {
    throw appError("EVENT_NOT_IN_CHECKPOINT", `event ${eventId} is not one of the events ${row.firstSequence}..${row.lastSequence} of intent ${row.intentId} that checkpoint ${checkpointId} covers`, {
      checkpoint_id: checkpointId,
      event_id: eventId,
    });
  }
  const leaves = hashes.map((h, i) => (h.sequence === row.firstSequence + i && h.eventHash ? digestOfTag(h.eventHash) : null));
  const intact = leaves.length === row.eventCount && leaves.every((leaf): leaf is Buffer => leaf !== null);
  if (!intact || tagOfDigest(merkleRoot(leaves as Buffer[])) !== row.merkleRoot) {
    throw appError("LOG_TAMPERED", `the stored events of checkpoint ${checkpointId} no longer give its merkle_root (GET /intents/${row.intentId}/events/verify)`, {
      checkpoint_id: checkpointId,
    });
  }
  return {
    event_id: eventId,
    event_hash: hashes[index]!.eventHash!,
    sequence: hashes[index]!.sequence,
    checkpoint_id: checkpointId,
    merkle_root: row.merkleRoot,
    proof_hashes: merkleProof(leaves as Buffer[], index).map((step) => ({ hash: tagOfDigest(step.hash), position: step.position })),
    leaf_index: index,
  };
}

/**
 * GET /verify/consistency (RFC 0019 6.2): the later checkpoint extends the earlier one. Both are
 * of one intent, the later starts after the earlier ends, every event from the earlier's first to
 * the later's last is present and chained, and both roots and signatures still hold.
 */
export async function consistency(ctx: IntentsContext, fromId: string, toId: string): Promise<ConsistencyProof> {
  const [from, to] = await Promise.all([checkpointRow(ctx.db, fromId), checkpointRow(ctx.db, toId)]);
  if (!from) throw errors.notFound("checkpoint", fromId);
  if (!to) throw errors.notFound("checkpoint", toId);
  if (from.intentId !== to.intentId) {
    throw appError("CHECKPOINTS_NOT_COMPARABLE", `checkpoints ${fromId} and ${toId} cover the logs of two intents`, { from_intent_id: from.intentId, to_intent_id: to.intentId });
  }
  if (to.firstSequence <= from.lastSequence) {
    throw appError("CHECKPOINTS_NOT_COMPARABLE", `checkpoint ${toId} (events ${to.firstSequence}..${to.lastSequence}) does not come after ${fromId} (events ${from.firstSequence}..${from.lastSequence}); give the earlier one as from_checkpoint`, {
      from_checkpoint: fromId,
      to_checkpoint: toId,
    });
  }
  let checker: ChainChecker | undefined;
  const tracker = new CheckpointTracker([from, to]);
  const breaks: ChainBreak[] = [];
  let boundary: StoredEvent | undefined;
  for await (const event of storedEvents(ctx.db, from.intentId, from.firstSequence, to.lastSequence)) {
    // The earlier checkpoint's first event is trusted to link to what came before it.
    checker ??= new ChainChecker(from.firstSequence, event.previousEventHash);
    breaks.push(...checker.check(event));
    tracker.see(event);
    if (event.sequence === from.lastSequence + 1) boundary = event;
  }
  const end = (checker ?? new ChainChecker(from.firstSequence)).missingAtEnd(to.lastSequence);
  if (end) breaks.push(end);
  tracker.end();
  const problem = breaks[0]?.message ?? tracker.breaks[0]?.message ?? null;
  return {
    from_checkpoint: fromId,
    to_checkpoint: toId,
    consistent: problem === null,
    boundary_event: boundary?.eventHash
      ? { sequence: boundary.sequence, event_hash: boundary.eventHash, previous_event_hash: boundary.previousEventHash }
      : null,
    events_checked: checker?.checked ?? 0,
    reason: problem,
  };
}

/** POST /admin/checkpoints/{id}/anchor: records the operator's external anchor, once (RFC 0019 5.3: an anchor is immutable). */
export async function anchorCheckpoint(
  ctx: IntentsContext,
  checkpointId: string,
  body: { provider: string; reference: string; timestamp_proof: string; anchored_at?: string | undefined },
): Promise<LogCheckpoint> {
  const anchor: TimestampAnchor = {
    type: "external-timestamp",
    provider: body.provider,
    reference: body.reference,
    timestamp_proof: body.timestamp_proof,
    anchored_at: isoTimestamp(body.anchored_at ?? ctx.clock.now()),
  };
  const row = await setAnchor(ctx.db, checkpointId, anchor);
  if (row) return toCheckpoint(row);
  const existing = await checkpointRow(ctx.db, checkpointId);
  if (!existing) throw errors.notFound("checkpoint", checkpointId);
  throw appError("CHECKPOINT_ANCHORED", `checkpoint ${checkpointId} is anchored already; an anchor is never replaced`, { anchor: existing.anchor });
}
