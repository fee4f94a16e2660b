import { sql } from "drizzle-orm";
import type { JsMsg } from "@nats-io/jetstream";
import { intentEvents, portfolioEvents, type IntentStatus } from "@intentmesh/contracts";
import { eventOn, newEvent, subscribe, type Bus, type TypedEvent } from "@intentmesh/bus";
import { rowsOf, type Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { inbox } from "../db/schema";
import type { NewEvent } from "../kernel/event-log";
import { appendToPortfolioLog } from "./event-log";
import { aggregateStatus, suspensionEdge } from "./portfolio-status";

/**
 * Keeps portfolios in step with their members: a durable consumer of the intents' own
 * status_changed events (stream IM_INTENTS) that, for every portfolio holding the
 * intent, records the member's new status and appends portfolio.member_status_changed,
 * portfolio.member_suspended / portfolio.member_resumed, and portfolio.status_changed when the
 * aggregate moves. The effects and the inbox row commit together, so a redelivered event applies
 * nothing twice; a member row also remembers the intent sequence it reflects, so an event older
 * than what the portfolio already saw (a late duplicate, or one read before the intent joined)
 * changes nothing either.
 */
/**
 * "-v2": the consumer's filter follows the renamed status_changed event (issue 10). A durable
 * keeps the filter it was created with (NATS 2.9 cannot change it), so the renamed filter needs
 * a durable of its own; events already applied under the old name are in the inbox.
 */
export const PORTFOLIO_PROJECTION_DURABLE = "intents-portfolio-projection-v2";

/** A status_changed of the intent log as the projection gets it (from / to are intent statuses). */
export type StatusChangedEvent = TypedEvent<"intent", typeof intentEvents.statusChanged>;

export interface PortfolioProjectionOptions {
  /** Test seam: runs after the commit and before the ack (see startDurableConsumer). */
  afterCommit?: (msg: JsMsg) => Promise<void> | void;
}

export interface PortfolioProjection {
  stop(): Promise<void>;
}

export async function startPortfolioProjection(ctx: IntentsContext, bus: Bus, options: PortfolioProjectionOptions = {}): Promise<PortfolioProjection> {
  const consumer = await subscribe(bus, eventOn(intentEvents.statusChanged, "intent"), {
    durable: PORTFOLIO_PROJECTION_DURABLE,
    db: ctx.db,
    inbox,
    skip: (event) => inNoPortfolio(ctx, event.intent_id),
    handle: (tx, event) => applyMemberStatusChange(tx, event, ctx.clock.now()),
    logger: ctx.logger,
    afterCommit: async (msg) => {
      ctx.published();
      await options.afterCommit?.(msg);
    },
  });
  let stopping: Promise<void> | undefined;
  return { stop: () => (stopping ??= consumer.stop()) };
}

/**
 * Whether the intent is a member of no portfolio, read after its status change committed (the
 * event is published after the commit): then the change has nothing to apply, now or later, and
 * is acknowledged without a transaction. A membership added after this read records the intent's
 * status and sequence at least as new as the change (the add reads the intent row under a share
 * lock, which the change's exclusive lock orders before or after it), so the change would apply
 * nothing there either; one added before it is seen here.
 */
async function inNoPortfolio(ctx: IntentsContext, intentId: string): Promise<boolean> {
  const rows = await ctx.query("portfolio_membership_exists", "select 1 from intents.portfolio_members where intent_id = $1 limit 1", [intentId]);
  return rows.length === 0;
}

/**
 * Applies one member status change to every portfolio holding the intent, in the caller's
 * transaction. Portfolios are locked in id order before their member rows, the order every
 * portfolio write takes them, so concurrent writers queue instead of deadlocking.
 */
export async function applyMemberStatusChange(tx: Tx, event: StatusChangedEvent, at: Date): Promise<void> {
  const intentId = event.intent_id;
  const to = event.payload.to;
  const held = rowsOf<{ id: string; status: IntentStatus }>(
    await tx.execute(sql`
      select p.id, p.status from intents.portfolios p
      where p.id in (select portfolio_id from intents.portfolio_members where intent_id = ${intentId})
      order by p.id for update of p`),
  );
  if (!held.length) return;
  const changed = rowsOf<{ portfolio_id: string; from_status: IntentStatus }>(
    await tx.execute(sql`
      with old as (
        select portfolio_id, intent_status from intents.portfolio_members
        where intent_id = ${intentId} and intent_sequence < ${event.sequence})
      update intents.portfolio_members m set intent_status = ${to}, intent_sequence = ${event.sequence}
      from old where m.portfolio_id = old.portfolio_id and m.intent_id = ${intentId}
      returning m.portfolio_id, old.intent_status as from_status`),
  ).filter((row) => row.from_status !== to);
  if (!changed.length) return;

  const ids = changed.map((row) => row.portfolio_id);
  const counts = new Map<string, Record<string, number>>();
  for (const row of rowsOf<{ portfolio_id: string; intent_status: string; n: number }>(
    await tx.execute(sql`
      select portfolio_id, intent_status, count(*)::int as n from intents.portfolio_members
      where portfolio_id in (${sql.join(ids.map((id) => sql`${id}`), sql`, `)})
      group by portfolio_id, intent_status`),
  )) {
    counts.set(row.portfolio_id, { ...(counts.get(row.portfolio_id) ?? {}), [row.intent_status]: Number(row.n) });
  }

  const previous = new Map(held.map((p) => [p.id, p.status]));
  for (const { portfolio_id: portfolioId, from_status: from } of changed.sort((a, b) => a.portfolio_id.localeCompare(b.portfolio_id))) {
    const was = previous.get(portfolioId)!;
    const next = aggregateStatus(counts.get(portfolioId) ?? {});
    await appendToPortfolioLog(tx, portfolioId, memberChangeEvents(event, from, was, next), at, sql`, status = ${next}`);
  }
}

/** The events one member status change appends to one portfolio, in order. */
export function memberChangeEvents(event: StatusChangedEvent, from: IntentStatus, was: IntentStatus, next: IntentStatus): NewEvent[] {
  const { to, reason } = event.payload;
  const suspensionId = typeof event.payload.suspension_id === "string" ? event.payload.suspension_id : null;
  const source = { intent_id: event.intent_id, intent_event_id: event.id, intent_sequence: event.sequence };
  const out: NewEvent[] = [newEvent(portfolioEvents.memberStatusChanged, event.actor, { ...source, from, to, reason: reason ?? null, status: next })];
  const edge = suspensionEdge(from, to);
  if (edge === "suspended") {
    out.push(newEvent(portfolioEvents.memberSuspended, event.actor, { ...source, suspension_id: suspensionId, status: next }));
  } else if (edge === "resumed") {
    out.push(newEvent(portfolioEvents.memberResumed, event.actor, { ...source, suspension_id: suspensionId, to, status: next }));
  }
  if (was !== next) {
    out.push(newEvent(portfolioEvents.statusChanged, event.actor, { from: was, to: next, intent_id: event.intent_id, cause: portfolioEvents.memberStatusChanged.name }));
  }
  return out;
}
