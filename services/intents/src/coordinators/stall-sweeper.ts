import { and, desc, eq, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { rowsOf, type Tx } from "@intentmesh/db";
import { AWAITING_CHECKPOINT, intentEvents, intentEventTypes, isoTimestamp } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import { Sweeper } from "@intentmesh/service";
import type { IntentsContext } from "../kernel/context";
import { events } from "../db/schema";
import { coordinatorLeases, coordinatorTimerReports } from "../db/schema-coordinators";
import { plans } from "../db/schema-plans";
import { tasks } from "../db/schema-tasks";
import { appendToLog, lockIntentRow, type NewEvent } from "../kernel/event-log";
import { readGuardrails, stallDue, waitExceeded, type WaitGuardrail } from "./guardrails";
import { onExceedEvents } from "./holder-guard";
import { isLive, type CoordinatorLeaseRow } from "./rules";

/**
 * A numeric guardrail of the lease `l` in SQL, read as readGuardrails reads it (a section's wins
 * over the flat key, the last section last), a number only (a lease stored before the key was
 * checked may hold anything); null when unset.
 */
function guardrailNumber(key: string): SQL {
  return sql`coalesce(${sql.join(
    (["review", "temporal", "scope", "budget"] as const)
      .map((section) => sql`case when jsonb_typeof(l.guardrails -> ${section} -> ${key}) = 'number' then (l.guardrails -> ${section} ->> ${key})::numeric end`)
      .concat(sql`case when jsonb_typeof(l.guardrails -> ${key}) = 'number' then (l.guardrails ->> ${key})::numeric end`),
    sql`, `,
  )})`;
}

/**
 * Whether an event of the intent's log is progress (require_progress_every_minutes): any event but
 * the timers' own reports (coordinator.stalled, .task_wait_exceeded, .checkpoint_timed_out) and
 * what on_exceed starts by itself (the system's coordinator.paused and
 * coordinator.escalation_initiated): a report that nothing moves is not movement.
 */
export function isProgress(eventType: SQL | AnyColumn, actor: SQL | AnyColumn): SQL {
  const reports = [intentEventTypes.coordinatorStalled, intentEventTypes.coordinatorTaskWaitExceeded, intentEventTypes.coordinatorCheckpointTimedOut];
  const reactions = [intentEventTypes.coordinatorPaused, intentEventTypes.coordinatorEscalationInitiated];
  const list = (names: readonly string[]) => sql.join(names.map((n) => sql`${n}`), sql`, `);
  return sql`(${eventType} not in (${list(reports)}) and not (${eventType} in (${list(reactions)}) and ${actor} = 'system'))`;
}

/** A wait a temporal guardrail watches: a ready task, or a plan checkpoint awaiting its decision. */
interface Wait {
  guardrail: WaitGuardrail;
  intentId: string;
  /** The task's id, or the plan's. */
  id: string;
  checkpointId: string | null;
  since: Date;
}

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
    // Due leases only, read without locks (each is locked and checked again below).
    const minutes = guardrailNumber("require_progress_every_minutes");
    const watched = rowsOf<{ id: string; intent_id: string }>(
      await this.ctx.db.execute(sql`
        select l.id, l.intent_id from (
          select l.*, ${minutes} as window_minutes,
            greatest(l.granted_at, (
              select e.created_at from ${events} e
              where e.intent_id = l.intent_id and ${isProgress(sql`e.event_type`, sql`e.actor`)}
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
          .where(and(eq(events.intentId, intentId), isProgress(events.eventType, events.actor)))
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
    total += await this.sweepWaits(now);
    if (total) this.ctx.published();
    return total;
  }

  /**
   * RFC-0013 3.3 max_task_wait_hours and checkpoint_timeout_hours, on the intents whose holding
   * lease is live (paused or not: a wait is the intent's, and the supervisor hears of it either
   * way). A task waits for an agent while it is `ready` (claimable, not claimed), since its last
   * change; a checkpoint waits for its decision while it awaits approval on its paused plan, since
   * it was reached. A wait over the limit is reported once: coordinator.task_wait_exceeded or
   * coordinator.checkpoint_timed_out, then what the lease's on_exceed starts (pause, escalate), all
   * in one transaction with the report's row, whose primary key admits one report per wait across
   * sweeps and replicas. Returns how many waits it reported.
   */
  private async sweepWaits(now: Date): Promise<number> {
    const taskHours = guardrailNumber("max_task_wait_hours");
    const checkpointHours = guardrailNumber("checkpoint_timeout_hours");
    const live = sql`l.holds and l.expires_at > ${now} and l.guardrails is not null`;
    const taskWaits = rowsOf<{ intent_id: string; id: string; since: Date | string }>(
      await this.ctx.db.execute(sql`
        select t.intent_id, t.id, t.updated_at as since
        from ${coordinatorLeases} l join ${tasks} t on t.intent_id = l.intent_id and t.status = 'ready'
        where ${live} and ${taskHours} is not null
          and t.updated_at <= ${now}::timestamptz - ${taskHours} * interval '1 hour'
          and not exists (select 1 from ${coordinatorTimerReports} r where r.subject = 'task:' || t.id::text and r.since = t.updated_at)
        order by t.updated_at
        limit ${this.batchSize}`),
    ).map((row): Wait => ({ guardrail: "max_task_wait_hours", intentId: row.intent_id, id: row.id, checkpointId: null, since: new Date(row.since) }));
    const checkpointWaits = rowsOf<{ intent_id: string; id: string; checkpoint_id: string; since: string }>(
      await this.ctx.db.execute(sql`
        select p.intent_id, p.id, cp ->> 'id' as checkpoint_id, cp ->> 'reached_at' as since
        from ${coordinatorLeases} l join ${plans} p on p.intent_id = l.intent_id and p.state = 'paused'
          cross join lateral jsonb_array_elements(p.checkpoints) cp
        where ${live} and ${checkpointHours} is not null
          and cp ->> 'status' in (${sql.join(AWAITING_CHECKPOINT.map((s) => sql`${s}`), sql`, `)}) and cp ->> 'reached_at' is not null
          and (cp ->> 'reached_at')::timestamptz <= ${now}::timestamptz - ${checkpointHours} * interval '1 hour'
          and not exists (select 1 from ${coordinatorTimerReports} r
            where r.subject = 'checkpoint:' || p.id::text || ':' || (cp ->> 'id') and r.since = (cp ->> 'reached_at')::timestamptz)
        limit ${this.batchSize}`),
    ).map((row): Wait => ({ guardrail: "checkpoint_timeout_hours", intentId: row.intent_id, id: row.id, checkpointId: row.checkpoint_id, since: new Date(row.since) }));
    let total = 0;
    for (const wait of [...taskWaits, ...checkpointWaits]) {
      total += await this.ctx.db.transaction(async (tx) => {
        await lockIntentRow(tx, wait.intentId, null);
        const [lease] = await tx
          .select()
          .from(coordinatorLeases)
          .where(and(eq(coordinatorLeases.intentId, wait.intentId), eq(coordinatorLeases.holds, true)))
          .for("update");
        if (!lease || !isLive(lease, now)) return 0;
        const g = readGuardrails(lease.guardrails);
        // Under the intent's lock: the wait as it is now (claimed, changed, decided: no longer this wait).
        if (!(await stillWaiting(tx, wait)) || !waitExceeded(g, wait.guardrail, wait.since, now)) return 0;
        const subject = wait.checkpointId === null ? `task:${wait.id}` : `checkpoint:${wait.id}:${wait.checkpointId}`;
        const claimed = await tx
          .insert(coordinatorTimerReports)
          .values({ subject, since: wait.since, intentId: wait.intentId, leaseId: lease.id, guardrail: wait.guardrail, reportedAt: now })
          .onConflictDoNothing()
          .returning({ subject: coordinatorTimerReports.subject });
        if (!claimed.length) return 0;
        await appendToLog(tx, wait.intentId, [waitEvent(lease, wait, g[wait.guardrail]!), ...(await onExceedEvents(tx, lease, wait.guardrail, waitReason(wait, g[wait.guardrail]!), now))], now);
        return 1;
      });
    }
    return total;
  }
}

/** Whether the wait is still on: the task ready and unchanged since, the checkpoint awaiting approval on its paused plan since the same reach. */
async function stillWaiting(tx: Tx, wait: Wait): Promise<boolean> {
  if (wait.checkpointId === null) {
    const [task] = await tx.select({ status: tasks.status, updatedAt: tasks.updatedAt }).from(tasks).where(eq(tasks.id, wait.id));
    return task?.status === "ready" && task.updatedAt.getTime() === wait.since.getTime();
  }
  const [plan] = await tx.select({ state: plans.state, checkpoints: plans.checkpoints }).from(plans).where(eq(plans.id, wait.id));
  const cp = plan?.checkpoints.find((c) => c.id === wait.checkpointId);
  return plan?.state === "paused" && !!cp && AWAITING_CHECKPOINT.includes(cp.status as never) && !!cp.reached_at && new Date(cp.reached_at).getTime() === wait.since.getTime();
}

function waitReason(wait: Wait, hours: number): string {
  return wait.checkpointId === null
    ? `guardrail max_task_wait_hours exceeded: task ${wait.id} has waited for an agent since ${isoTimestamp(wait.since)}, the limit is ${hours} h`
    : `guardrail checkpoint_timeout_hours exceeded: checkpoint ${wait.checkpointId} of plan ${wait.id} has awaited its decision since ${isoTimestamp(wait.since)}, the limit is ${hours} h`;
}

function waitEvent(lease: CoordinatorLeaseRow, wait: Wait, hours: number): NewEvent {
  const common = { lease_id: lease.id, coordinator_id: lease.agentId, supervisor_id: lease.supervisorId, on_exceed: readGuardrails(lease.guardrails).on_exceed ?? null };
  return wait.checkpointId === null
    ? newEvent(intentEvents.coordinatorTaskWaitExceeded, "system", { ...common, task_id: wait.id, waiting_since: isoTimestamp(wait.since), max_task_wait_hours: hours })
    : newEvent(intentEvents.coordinatorCheckpointTimedOut, "system", { ...common, plan_id: wait.id, checkpoint_id: wait.checkpointId, reached_at: isoTimestamp(wait.since), checkpoint_timeout_hours: hours });
}
