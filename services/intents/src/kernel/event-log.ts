import { and, eq, sql } from "drizzle-orm";
import { AppError, errors, INTENT_EVENT_SCHEMA, intentEventMsgId, intentEventSubject, type IntentEvent } from "@intentmesh/contracts";
import { writeEventLog, type EventLogSpec, type NewEvent } from "@intentmesh/bus";
import type { Queryable, Tx } from "@intentmesh/db";
import { events, intents, outbox } from "../db/schema";
import { chainHash } from "./event-chain";

export type { NewEvent };

/**
 * Locks the intent row, honours an If-Match when one was sent, and takes the next `count`
 * sequence numbers of its log. One conditional UPDATE does all three, so concurrent writers on
 * one intent queue on the row lock and the log has no gaps. Returns the first number taken.
 */
export async function reserveSequences(tx: Tx, intentId: string, count: number, ifMatch: number | null) {
  const condition =
    ifMatch === null ? eq(intents.id, intentId) : and(eq(intents.id, intentId), eq(intents.version, ifMatch));
  const [row] = await tx
    .update(intents)
    .set({ eventSeq: sql`${intents.eventSeq} + ${count}` })
    .where(condition)
    .returning({ eventSeq: intents.eventSeq, version: intents.version, status: intents.status });
  if (!row) throw await missingOrStale(tx, intentId, ifMatch ?? -1);
  return { firstSequence: row.eventSeq - count + 1, version: row.version, status: row.status };
}

/**
 * Locks the intent row for the rest of the transaction, honouring an If-Match when one was sent,
 * and bumps its lease epoch: the callers change leases or assignments, and a state write checked
 * against the leases before this change must not commit after it.
 */
export async function lockIntent(tx: Tx, intentId: string, ifMatch: number | null) {
  const condition = ifMatch === null ? eq(intents.id, intentId) : and(eq(intents.id, intentId), eq(intents.version, ifMatch));
  const [row] = await tx
    .update(intents)
    .set({ leaseEpoch: sql`${intents.leaseEpoch} + 1` })
    .where(condition)
    .returning({ version: intents.version, status: intents.status, blockedReason: intents.blockedReason, governancePolicy: intents.governancePolicy });
  if (!row) throw await missingOrStale(tx, intentId, ifMatch ?? -1);
  return row;
}

/**
 * Locks the intent row for the rest of the transaction without changing it (unlike lockIntent,
 * which also moves the lease epoch), honouring an If-Match when one was sent.
 */
export async function lockIntentRow(tx: Queryable, intentId: string, ifMatch: number | null) {
  const [row] = await tx
    .select({ version: intents.version, status: intents.status, blockedReason: intents.blockedReason })
    .from(intents)
    .where(eq(intents.id, intentId))
    .for("update");
  if (!row) throw await missingOrStale(tx, intentId, ifMatch ?? -1);
  if (ifMatch !== null && row.version !== ifMatch) throw await missingOrStale(tx, intentId, ifMatch);
  return row;
}

/** After a conditional update matched nothing: 404 when the intent is absent, else 409 with its version. */
export async function missingOrStale(db: Queryable, intentId: string, expected: number): Promise<AppError> {
  const [current] = await db.select({ version: intents.version }).from(intents).where(eq(intents.id, intentId));
  if (!current) return errors.notFound("intent", intentId);
  return errors.versionMismatch("intent", intentId, current.version, expected);
}

/** How intents log their events: `intent:<id>:e<sequence>` on im.evt.intent.<id>.<event_type>. */
const intentLog: EventLogSpec<IntentEvent> = {
  idField: "intent_id",
  outbox,
  schema: INTENT_EVENT_SCHEMA,
  subject: intentEventSubject,
  msgId: intentEventMsgId,
  // RFC 0019: each row is hashed here and goes in complete, then the intent row's chain head
  // moves to the last one (kernel/event-chain.ts); the message and the answer carry the fields.
  insert: async (tx, rows) => {
    const chained = await chainRows(tx, rows);
    await tx.insert(events).values(
      chained.map(({ event, wire, at, chain }) => ({
        id: event.id,
        intentId: event.intent_id,
        sequence: event.sequence,
        eventType: event.event_type,
        actor: event.actor,
        payload: event.payload,
        createdAt: at,
        wire,
        traceId: event.trace_id ?? null,
        parentEventId: event.parent_event_id ?? null,
        eventHash: chain.event_hash,
        previousEventHash: chain.previous_event_hash,
      })),
    );
    return chained.map(({ event, chain }) => ({ id: event.id, ...chain }));
  },
};

type LogRow = { event: IntentEvent; wire: string; at: Date };

/**
 * Hashes rows of one intent's log, consecutive from the first one's sequence, after the event
 * before them, and moves the intent row's chain head to the last. The caller's transaction holds
 * the intent row's lock (it took the sequences), and this reads the event before under a snapshot
 * taken now: what the previous lock holder committed, or what this transaction wrote. A hole
 * before the first row is refused, never chained over.
 */
async function chainRows(tx: Tx, rows: LogRow[]) {
  const first = rows[0]!.event;
  let previous: string | null = null;
  if (first.sequence > 1) {
    const [before] = await tx
      .select({ eventHash: events.eventHash })
      .from(events)
      .where(and(eq(events.intentId, first.intent_id), eq(events.sequence, first.sequence - 1)));
    if (!before?.eventHash) throw new Error(`intent ${first.intent_id}: no hashed event at sequence ${first.sequence - 1}; its log is not extended`);
    previous = before.eventHash;
  }
  const chained = rows.map((row) => {
    const { previous_event_hash: _p, event_hash: _h, ...content } = row.event as IntentEvent & Record<string, unknown>;
    const chain = { previous_event_hash: previous, event_hash: chainHash(content, previous) };
    previous = chain.event_hash;
    return { ...row, wire: `${row.wire.slice(0, -1)},"previous_event_hash":${JSON.stringify(chain.previous_event_hash)},"event_hash":${JSON.stringify(chain.event_hash)}}`, chain };
  });
  const last = chained[chained.length - 1]!;
  await tx
    .update(intents)
    .set({ chainSeq: last.event.sequence, chainHead: last.chain.event_hash, chainPrevious: last.chain.previous_event_hash })
    .where(eq(intents.id, first.intent_id));
  return chained;
}

/** Writes events at the sequence numbers reserved for them, and their outbox rows, in the caller's transaction. */
export function writeEvents(tx: Tx, intentId: string, firstSequence: number, newEvents: NewEvent[], at: Date): Promise<IntentEvent[]> {
  return writeEventLog(tx, intentLog, intentId, firstSequence, newEvents, at);
}

/** Reserves sequence numbers and writes the events: for writes that do not change the intent itself. */
export async function appendToLog(tx: Tx, intentId: string, newEvents: NewEvent[], at: Date, ifMatch: number | null = null) {
  const reserved = await reserveSequences(tx, intentId, newEvents.length, ifMatch);
  return { ...reserved, events: await writeEvents(tx, intentId, reserved.firstSequence, newEvents, at) };
}

/** For reads that found nothing: 404 when the intent itself is absent (never 200 with an empty list). */
export async function assertIntentExists(db: Queryable, intentId: string): Promise<void> {
  const [row] = await db.select({ id: intents.id }).from(intents).where(eq(intents.id, intentId));
  if (!row) throw errors.notFound("intent", intentId);
}
