import { and, eq, sql } from "drizzle-orm";
import { AppError, errors, INTENT_EVENT_SCHEMA, intentEventMsgId, intentEventSubject, SCHEMA_HEADER, type IntentEvent } from "@intentmesh/contracts";
import { buildEvents, traceCarrier, type NewEvent } from "@intentmesh/bus";
import { rowsOf, type Queryable, type Tx } from "@intentmesh/db";
import { events, intents } from "../db/schema";
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
    .returning({ eventSeq: intents.eventSeq, version: intents.version, status: intents.status, chainSeq: intents.chainSeq, chainHead: intents.chainHead });
  if (!row) throw await missingOrStale(tx, intentId, ifMatch ?? -1);
  rememberLogHead(tx, intentId, row);
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
    .returning({
      version: intents.version,
      status: intents.status,
      blockedReason: intents.blockedReason,
      governancePolicy: intents.governancePolicy,
      ...LOG_HEAD_COLUMNS,
    });
  if (!row) throw await missingOrStale(tx, intentId, ifMatch ?? -1);
  const { eventSeq, chainSeq, chainHead, ...intent } = row;
  rememberLogHead(tx, intentId, { eventSeq, chainSeq, chainHead });
  return intent;
}

/**
 * Locks the intent row for the rest of the transaction without changing it (unlike lockIntent,
 * which also moves the lease epoch), honouring an If-Match when one was sent.
 */
export async function lockIntentRow(tx: Tx, intentId: string, ifMatch: number | null) {
  const [row] = await tx
    .select({ version: intents.version, status: intents.status, blockedReason: intents.blockedReason, ...LOG_HEAD_COLUMNS })
    .from(intents)
    .where(eq(intents.id, intentId))
    .for("update");
  if (!row) throw await missingOrStale(tx, intentId, ifMatch ?? -1);
  if (ifMatch !== null && row.version !== ifMatch) throw await missingOrStale(tx, intentId, ifMatch);
  const { eventSeq, chainSeq, chainHead, ...intent } = row;
  rememberLogHead(tx, intentId, { eventSeq, chainSeq, chainHead });
  return intent;
}

/** After a conditional update matched nothing: 404 when the intent is absent, else 409 with its version. */
export async function missingOrStale(db: Queryable, intentId: string, expected: number): Promise<AppError> {
  const [current] = await db.select({ version: intents.version }).from(intents).where(eq(intents.id, intentId));
  if (!current) return errors.notFound("intent", intentId);
  return errors.versionMismatch("intent", intentId, current.version, expected);
}

/**
 * The intent row's log counters as a statement holding its lock read them: the last sequence
 * taken and the chain head (the hash fields of the event at chain_seq; current when chain_seq =
 * event_seq). The lock functions above remember them for their transaction, so that the next
 * append in it hashes from the head and writes in one statement (appendToLog). That statement
 * checks the row still shows what was remembered, so a memo gone stale (the same transaction
 * wrote to the row since, a savepoint rolled back) costs a retry, never a wrong link.
 */
export interface LogHead {
  eventSeq: number;
  chainSeq: number;
  chainHead: string | null;
}

const LOG_HEAD_COLUMNS = { eventSeq: intents.eventSeq, chainSeq: intents.chainSeq, chainHead: intents.chainHead };

// Keyed by the transaction object, so a memo dies with its transaction and never crosses into another.
const logHeads = new WeakMap<Tx, Map<string, LogHead>>();

/** Remembers what a statement under the intent row's lock read of its log (see LogHead). */
export function rememberLogHead(tx: Tx, intentId: string, head: { eventSeq: number | string; chainSeq: number | string; chainHead: string | null }) {
  let heads = logHeads.get(tx);
  if (!heads) logHeads.set(tx, (heads = new Map()));
  heads.set(intentId, { eventSeq: Number(head.eventSeq), chainSeq: Number(head.chainSeq), chainHead: head.chainHead });
}

/** The remembered head when it is current (its event is the last one counted), else undefined. */
function currentHead(tx: Tx, intentId: string): LogHead | undefined {
  const head = logHeads.get(tx)?.get(intentId);
  return head && head.chainSeq === head.eventSeq && (head.chainHead !== null || head.eventSeq === 0) ? head : undefined;
}

/**
 * Reserves sequence numbers and writes the events, hashed and chained, with their outbox rows:
 * for writes that do not change the intent itself, and for those that change it in a statement
 * of their own in the same transaction. Takes the If-Match when one was sent.
 *
 * When the transaction already read the row under its lock (lockIntentRow, lockIntent, a
 * reservation or an earlier append: rememberLogHead), this is ONE statement: the events are
 * hashed here from the remembered head, and the statement takes their sequences, moves the chain
 * head and inserts the event and outbox rows, on condition that the row still counts what was
 * remembered. Otherwise (nothing remembered, or the condition failed) it is two: the reservation,
 * which locks the row and reads the head, then the same statement without taking sequences.
 */
export async function appendToLog(tx: Tx, intentId: string, newEvents: NewEvent[], at: Date, ifMatch: number | null = null) {
  if (!newEvents.length) return { ...(await reserveSequences(tx, intentId, 0, ifMatch)), events: [] as IntentEvent[] };
  const head = currentHead(tx, intentId);
  if (head) {
    const firstSequence = head.eventSeq + 1;
    const written = await writeChained(tx, intentId, { firstSequence, previous: head.chainHead, takeSequences: true, ifMatch }, newEvents, at);
    if (written) return { firstSequence, ...written };
  }
  const reserved = await reserveSequences(tx, intentId, newEvents.length, ifMatch);
  const previous = await previousHash(tx, intentId, reserved.firstSequence);
  const written = await writeChained(tx, intentId, { firstSequence: reserved.firstSequence, previous, takeSequences: false, ifMatch: null }, newEvents, at);
  // The reservation holds the row lock and counted these sequences: the condition cannot fail.
  if (!written) throw new Error(`intent ${intentId}: its row changed under the lock of this transaction; events not written`);
  return { ...reserved, events: written.events };
}

/**
 * The hash of the event before `firstSequence`, which this transaction reserved: the row's chain
 * head when it is that event's (as the reservation read it), else the stored event, read under
 * a snapshot taken now, after the reservation took the lock: what the previous lock holder
 * committed. A hole before the first row is refused, never chained over.
 */
async function previousHash(tx: Tx, intentId: string, firstSequence: number): Promise<string | null> {
  if (firstSequence === 1) return null;
  const head = logHeads.get(tx)?.get(intentId);
  if (head && head.chainSeq === firstSequence - 1 && head.chainHead !== null) return head.chainHead;
  const [before] = await tx
    .select({ eventHash: events.eventHash })
    .from(events)
    .where(and(eq(events.intentId, intentId), eq(events.sequence, firstSequence - 1)));
  if (!before?.eventHash) throw new Error(`intent ${intentId}: no hashed event at sequence ${firstSequence - 1}; its log is not extended`);
  return before.eventHash;
}

/** Where a batch goes: its first sequence, the hash it links to, and whether the statement takes the sequences itself. */
interface BatchPlace {
  firstSequence: number;
  previous: string | null;
  /**
   * True: the statement bumps event_seq, on condition that the row still counts firstSequence - 1
   * with its chain head at `previous` (and, with ifMatch, is at that version). False: a
   * reservation of this transaction took them already (event_seq is the batch's last).
   */
  takeSequences: boolean;
  ifMatch: number | null;
}

/**
 * Hashes a batch of events after `previous` (RFC 0019; kernel/event-chain.ts chainHash, the
 * event as served) and writes it in one statement: the intent row's chain head (and event_seq,
 * with takeSequences), the event rows and the outbox rows, whose payload is the event's wire
 * text as stored. Each event is serialised once; its payload column is read back from that text
 * by the statement. Undefined when the row's condition failed: nothing was written.
 */
async function writeChained(tx: Tx, intentId: string, place: BatchPlace, newEvents: NewEvent[], at: Date): Promise<{ version: number; status: string; events: IntentEvent[] } | undefined> {
  const built = buildEvents<IntentEvent>({ idField: "intent_id" }, intentId, place.firstSequence, newEvents, at);
  let previous = place.previous;
  const chained = built.map((event) => {
    const chain = { previous_event_hash: previous, event_hash: chainHash(event as IntentEvent & Record<string, unknown>, previous) };
    previous = chain.event_hash;
    // The same bytes JSON.stringify gives the completed event: its fields in order, the chain fields last.
    const wire = `${JSON.stringify(event).slice(0, -1)},"previous_event_hash":${JSON.stringify(chain.previous_event_hash)},"event_hash":${JSON.stringify(chain.event_hash)}}`;
    return { event: { ...event, ...chain } as IntentEvent, wire };
  });
  const last = chained[chained.length - 1]!.event;
  const headers = JSON.stringify({ ...traceCarrier(), [SCHEMA_HEADER]: INTENT_EVENT_SCHEMA });
  const values = sql.join(
    chained.map(
      ({ event, wire }) =>
        sql`(${event.id}::uuid, ${event.sequence}::bigint, ${event.event_type}::text, ${event.actor}::text, ${wire}::text, ${event.trace_id ?? null}::text, ${event.parent_event_id ?? null}::uuid, ${event.event_hash}::text, ${event.previous_event_hash}::text, ${intentEventSubject(intentId, event.event_type)}::text, ${intentEventMsgId(intentId, event.sequence)}::text)`,
    ),
    sql.raw(", "),
  );
  const condition = place.takeSequences
    ? sql`x.event_seq = ${place.firstSequence - 1}::bigint and x.chain_seq = x.event_seq and x.chain_head is not distinct from ${place.previous}::text
          and (${place.ifMatch}::int is null or x.version = ${place.ifMatch}::int)`
    : sql`x.event_seq = ${last.sequence}::bigint`;
  const [row] = rowsOf<{ version: number; status: string }>(
    await tx.execute(sql`
      with v (id, sequence, event_type, actor, wire, trace_id, parent_event_id, event_hash, previous_event_hash, subject, msg_id) as (values ${values}),
      u as (
        update intents.intents x
        set event_seq = x.event_seq + ${place.takeSequences ? chained.length : 0}::int,
            chain_seq = ${last.sequence}::bigint, chain_head = ${last.event_hash}::text, chain_previous = ${last.previous_event_hash}::text
        where x.id = ${intentId}::uuid and ${condition}
        returning x.version, x.status),
      e as (
        insert into intents.events (id, intent_id, sequence, event_type, actor, payload, created_at, wire, trace_id, parent_event_id, event_hash, previous_event_hash)
        select v.id, ${intentId}::uuid, v.sequence, v.event_type, v.actor, (v.wire::jsonb) -> 'payload', ${at}::timestamptz, v.wire, v.trace_id, v.parent_event_id, v.event_hash, v.previous_event_hash
        from v, u),
      o as (
        insert into intents.outbox (subject, msg_id, payload, headers)
        select v.subject, v.msg_id, v.wire, ${headers}::jsonb from v, u order by v.sequence)
      select version, status from u`),
  );
  if (!row) return undefined;
  rememberLogHead(tx, intentId, { eventSeq: last.sequence, chainSeq: last.sequence, chainHead: last.event_hash });
  return { version: Number(row.version), status: row.status, events: chained.map(({ event }) => event) };
}

/** For reads that found nothing: 404 when the intent itself is absent (never 200 with an empty list). */
export async function assertIntentExists(db: Queryable, intentId: string): Promise<void> {
  const [row] = await db.select({ id: intents.id }).from(intents).where(eq(intents.id, intentId));
  if (!row) throw errors.notFound("intent", intentId);
}
