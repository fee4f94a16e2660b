import { and, desc, eq, ne, sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { intentEvents, intentEventTypes, isoTimestamp } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import { Sweeper } from "@intentmesh/service";
import type { IntentsContext } from "../kernel/context";
import { events } from "../db/schema";
import { coordinatorLeases } from "../db/schema-coordinators";
import { appendToLog, lockIntentRow } from "../kernel/event-log";
import { readGuardrails, stallDue } from "./guardrails";
import { isLive } from "./rules";

/**
 * RFC-0013 3.3 require_progress_every_minutes: "if no progress events are recorded within the
 * window, a coordinator.stalled event is logged and the supervisor is notified" (the event names
 * the supervisor; subscribers and webhooks carry it). Progress is any event on the intent's log
 * other than coordinator.stalled (heartbeats are not logged: a coordinator that only heartbeats is
 * stalled). Live, unpaused leases only: a paused coordinator is not expected to progress, an
 * unresponsive one is the failover's business. On the injected clock; one coordinator.stalled per
 * stall across replicas: the lease's stall_reported_at is set in the event's transaction, under
 * the intent's row lock and after re-reading the lease (stallDue refuses a reported stall).
 */
export class CoordinatorStallSweeper extends Sweeper {
  constructor(
    private readonly ctx: IntentsContext,
    intervalMs = 1000,
    private readonly batchSize = 200,
  ) {
    super(intervalMs, ctx.logger, "coordinator stall sweep");
  }

  /** One pass; returns how many stalls it logged. Tests call it directly with a manual clock. */
  async sweep(): Promise<number> {
    const now = this.ctx.clock.now();
    // Due leases only, read without locks (each is locked and checked again below): the window in
    // the key readGuardrails reads (a section's wins over the flat key, the last section last), a
    // number only (a lease stored before the key was checked may hold anything).
    const minutes = sql.join(
      (["review", "temporal", "scope", "budget"] as const).map((section) => sql`case when jsonb_typeof(l.guardrails -> ${section} -> 'require_progress_every_minutes') = 'number' then (l.guardrails -> ${section} ->> 'require_progress_every_minutes')::numeric end`).concat(
        sql`case when jsonb_typeof(l.guardrails -> 'require_progress_every_minutes') = 'number' then (l.guardrails ->> 'require_progress_every_minutes')::numeric end`,
      ),
      sql`, `,
    );
    const watched = rowsOf<{ id: string; intent_id: string }>(
      await this.ctx.db.execute(sql`
        select l.id, l.intent_id from (
          select l.*, coalesce(${minutes}) as window_minutes,
            greatest(l.granted_at, (
              select e.created_at from ${events} e
              where e.intent_id = l.intent_id and e.event_type <> ${intentEventTypes.coordinatorStalled}
              order by e.sequence desc limit 1)) as last_progress_at
          from ${coordinatorLeases} l
          where l.holds and l.expires_at > ${now} and l.paused_at is null and l.guardrails is not null
        ) l
        where l.window_minutes is not null
          and l.last_progress_at <= ${now}::timestamptz - l.window_minutes * interval '1 minute'
          and (l.stall_reported_at is null or l.stall_reported_at < l.last_progress_at)
        order by l.last_progress_at
        limit ${this.batchSize}`),
    ).map((row) => ({ id: row.id, intentId: row.intent_id }));
    let total = 0;
    for (const { id, intentId } of watched) {
      total += await this.ctx.db.transaction(async (tx) => {
        await lockIntentRow(tx, intentId, null);
        const [lease] = await tx.select().from(coordinatorLeases).where(eq(coordinatorLeases.id, id)).for("update");
        if (!lease || !isLive(lease, now) || lease.pausedAt) return 0;
        const g = readGuardrails(lease.guardrails);
        const [last] = await tx
          .select({ at: events.createdAt })
          .from(events)
          .where(and(eq(events.intentId, intentId), ne(events.eventType, intentEventTypes.coordinatorStalled)))
          .orderBy(desc(events.sequence))
          .limit(1);
        const lastProgressAt = last && last.at > lease.grantedAt ? last.at : lease.grantedAt;
        if (!stallDue(g, lastProgressAt, lease.stallReportedAt, now)) return 0;
        await tx.update(coordinatorLeases).set({ stallReportedAt: now }).where(eq(coordinatorLeases.id, id));
        await appendToLog(
          tx,
          intentId,
          [
            newEvent(intentEvents.coordinatorStalled, "system", {
              lease_id: lease.id,
              coordinator_id: lease.agentId,
              supervisor_id: lease.supervisorId,
              last_progress_at: isoTimestamp(lastProgressAt),
              require_progress_every_minutes: g.require_progress_every_minutes!,
            }),
          ],
          now,
        );
        return 1;
      });
    }
    if (total) this.ctx.published();
    return total;
  }
}
