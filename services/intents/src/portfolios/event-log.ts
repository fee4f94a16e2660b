import { sql } from "drizzle-orm";
import { PORTFOLIO_EVENT_SCHEMA, portfolioEventMsgId, portfolioEventSubject, type PortfolioEvent } from "@intentmesh/contracts";
import { writeEventLog, type EventLogSpec, type NewEvent } from "@intentmesh/bus";
import { rowsOf, type Tx } from "@intentmesh/db";
import { outbox } from "../db/schema";
import { portfolioEvents } from "../db/schema-portfolios";

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

const portfolioLog: EventLogSpec<PortfolioEvent> = {
  idField: "portfolio_id",
  outbox,
  schema: PORTFOLIO_EVENT_SCHEMA,
  subject: portfolioEventSubject,
  msgId: portfolioEventMsgId,
  insert: async (tx, rows) => {
    await tx.insert(portfolioEvents).values(
      rows.map(({ event, wire, at }) => ({
        id: event.id,
        portfolioId: event.portfolio_id,
        sequence: event.sequence,
        eventType: event.event_type,
        actor: event.actor,
        payload: event.payload,
        createdAt: at,
        wire,
      })),
    );
  },
};

/** Writes events at the sequence numbers reserved for them, and their outbox rows. */
export function writePortfolioEvents(tx: Tx, portfolioId: string, firstSequence: number, newEvents: NewEvent[], at: Date): Promise<PortfolioEvent[]> {
  return writeEventLog(tx, portfolioLog, portfolioId, firstSequence, newEvents, at);
}

/** Reserves sequence numbers (applying `set` in the same UPDATE) and writes the events. */
export async function appendToPortfolioLog(tx: Tx, portfolioId: string, newEvents: NewEvent[], at: Date, set = sql``): Promise<PortfolioEvent[]> {
  if (!newEvents.length) return [];
  const first = await reservePortfolioSequences(tx, portfolioId, newEvents.length, set);
  return writePortfolioEvents(tx, portfolioId, first, newEvents, at);
}
