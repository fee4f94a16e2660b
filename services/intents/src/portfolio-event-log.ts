import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import {
  isoTimestamp,
  PORTFOLIO_EVENT_SCHEMA,
  portfolioEventMsgId,
  portfolioEventSubject,
  SCHEMA_HEADER,
  type PortfolioEvent,
} from "@intentmesh/contracts";
import { enqueue } from "@intentmesh/bus";
import { rowsOf, type Tx } from "@intentmesh/db";
import { outbox } from "./db/schema";
import { portfolioEvents } from "./db/schema-portfolios";
import type { NewEvent } from "./event-log";

/**
 * The per-portfolio event log: the same shape and guarantees as an intent's (gap-free
 * `sequence` per portfolio, taken by bumping the portfolio row's event_seq, which locks it;
 * each event and its outbox row in the caller's transaction; message id
 * `portfolio:<id>:e<sequence>` on subject im.evt.portfolio.<id>.<event_type>).
 */

/**
 * Takes the next `count` sequence numbers of the portfolio's log and applies `set` (extra
 * column assignments) in the same UPDATE. The caller holds the row lock already or gets it here.
 */
export async function reservePortfolioSequences(tx: Tx, portfolioId: string, count: number, set = sql``): Promise<number> {
  const [row] = rowsOf<{ event_seq: string | number }>(
    await tx.execute(sql`update intents.portfolios set event_seq = event_seq + ${count} ${set} where id = ${portfolioId} returning event_seq`),
  );
  if (!row) throw new Error(`portfolio ${portfolioId} vanished while locked`);
  return Number(row.event_seq) - count + 1;
}

/** Writes events at the sequence numbers reserved for them, and their outbox rows. */
export async function writePortfolioEvents(tx: Tx, portfolioId: string, firstSequence: number, newEvents: NewEvent[], at: Date): Promise<PortfolioEvent[]> {
  if (!newEvents.length) return [];
  const written: PortfolioEvent[] = newEvents.map((event, i) => ({
    id: randomUUID(),
    portfolio_id: portfolioId,
    sequence: firstSequence + i,
    event_type: event.eventType,
    actor: event.actor,
    payload: event.payload,
    created_at: isoTimestamp(at),
  }));
  await tx.insert(portfolioEvents).values(
    written.map((event) => ({
      id: event.id,
      portfolioId,
      sequence: event.sequence,
      eventType: event.event_type,
      actor: event.actor,
      payload: event.payload,
      createdAt: at,
      wire: JSON.stringify(event),
    })),
  );
  await enqueue(
    tx,
    outbox,
    written.map((event) => ({
      subject: portfolioEventSubject(portfolioId, event.event_type),
      msgId: portfolioEventMsgId(portfolioId, event.sequence),
      payload: event,
      headers: { [SCHEMA_HEADER]: PORTFOLIO_EVENT_SCHEMA },
    })),
  );
  return written;
}

/** Reserves sequence numbers (applying `set` in the same UPDATE) and writes the events. */
export async function appendToPortfolioLog(tx: Tx, portfolioId: string, newEvents: NewEvent[], at: Date, set = sql``): Promise<PortfolioEvent[]> {
  if (!newEvents.length) return [];
  const first = await reservePortfolioSequences(tx, portfolioId, newEvents.length, set);
  return writePortfolioEvents(tx, portfolioId, first, newEvents, at);
}
