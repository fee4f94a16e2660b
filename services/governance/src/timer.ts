import { sql } from "drizzle-orm";
import { governanceEvents, isAppError, suspensionCommands, type SuspensionRecord, isoTimestamp } from "@intentmesh/contracts";
import { enqueueSystemEvents } from "@intentmesh/bus";
import { rowsOf, type Tx } from "@intentmesh/db";
import { Sweeper } from "@intentmesh/service";
import type { GovernanceContext } from "./context";
import { outbox } from "./db/schema";
import { dueStep } from "./domain/schedule";
import { derivedUuid, governanceEvent } from "./system-events";

interface DueRow {
  suspension_id: string;
  intent_id: string;
  record: SuspensionRecord;
  attempt: number;
}

/** The end of a suspension the intents service no longer has waiting: already answered, cancelled or expired. */
const ALREADY_ENDED = new Set(["NOT_SUSPENDED", "SUSPENSION_MISMATCH", "INTENT_NOT_FOUND"]);

/**
 * Server-side suspension time (spec 2.9, 3.5), safe with several replicas and crashes.
 *
 * Each due row is claimed with FOR UPDATE SKIP LOCKED in its own transaction, and the lock is
 * held until the step is recorded, so two replicas never run the same step.
 * - A re-notification (and the escalations of the attempt that passed) moves `attempt` and
 *   `next_due_at` and enqueues the events, with ids derived from (suspension, attempt), in that
 *   one transaction: a crash before the commit leaves the step to run again, after it the step
 *   is done; it never runs twice.
 * - The final fallback is the intents primitive suspension.end, called while the row is locked;
 *   the row is marked after it answers. Killed in between, the next claim calls it again and the
 *   intents service answers 409 (the suspension is no longer waiting): the row is marked and
 *   nothing fires twice. The primitive is the single point where a suspension ends, so an answer
 *   racing the timeout also ends it exactly once.
 */
export class SuspensionTimer extends Sweeper {
  constructor(
    private readonly ctx: GovernanceContext,
    intervalMs: number,
    private readonly batch = 100,
  ) {
    super(intervalMs, ctx.logger, "suspension timer");
  }

  async sweep(): Promise<number> {
    let done = 0;
    while (done < this.batch && (await this.runOne())) done++;
    return done;
  }

  /** Claims one due suspension and runs what is due for it; false when nothing is due. */
  private async runOne(): Promise<boolean> {
    const now = this.ctx.clock.now();
    let kicked = false;
    const claimed = await this.ctx.db.transaction(async (tx) => {
      const [row] = rowsOf<DueRow>(
        await tx.execute(sql`
          select suspension_id, intent_id, record, attempt from governance.suspensions
          where next_due_at is not null and next_due_at <= ${now} and status = 'waiting'
          order by next_due_at limit 1 for update skip locked`),
      );
      if (!row) return false;
      kicked = await this.advance(tx, row, now);
      return true;
    });
    if (kicked) this.ctx.published();
    return claimed;
  }

  /** Runs every step due by `now` for one claimed row (a timer that was away catches up, each step once). */
  private async advance(tx: Tx, row: DueRow, now: Date): Promise<boolean> {
    let attempt = Number(row.attempt);
    let enqueued = false;
    for (;;) {
      const step = dueStep(row.record, attempt);
      if (step.kind === "final") {
        await this.expire(tx, row, now);
        return enqueued;
      }
      const policy = row.record.retry_policy!;
      const events = [
        governanceEvent(governanceEvents.suspensionRenotified, derivedUuid(`${row.suspension_id}:renotified:${step.attempt}`), row.intent_id, "system", {
          suspension_id: row.suspension_id,
          attempt: step.attempt,
          max_attempts: policy.max_attempts,
          strategy: policy.strategy,
          channel_hint: row.record.channel_hint ?? null,
          next_due_at: (step.nextDueAt ? isoTimestamp(step.nextDueAt) : null),
          expires_at: row.record.expires_at,
        }, now),
        ...step.escalations.map((escalation, i) =>
          governanceEvent(governanceEvents.suspensionEscalated, derivedUuid(`${row.suspension_id}:escalated:${attempt}:${i}`), row.intent_id, "system", {
            suspension_id: row.suspension_id,
            after_attempt: escalation.after_attempt,
            attempt: step.attempt,
            channel: escalation.channel,
            notify: escalation.notify ?? null,
          }, now),
        ),
      ];
      await enqueueSystemEvents(tx, outbox, events);
      enqueued = true;
      attempt = step.attempt;
      await tx.execute(sql`
        update governance.suspensions set attempt = ${attempt}, next_due_at = ${step.nextDueAt}, updated_at = ${now}
        where suspension_id = ${row.suspension_id}`);
      if (!step.nextDueAt || step.nextDueAt.getTime() > now.getTime()) return enqueued;
    }
  }

  /**
   * The final fallback (spec 2.10): `fail` abandons the intent; `complete_with_fallback` and
   * `use_default_and_continue` record fallback_value as the response and return it to active.
   * Either way the resolution is `expired` and the log gets intent.suspension_expired.
   */
  private async expire(tx: Tx, row: DueRow, now: Date): Promise<void> {
    const fail = row.record.fallback_policy === "fail";
    let status: "expired" | "ended" = "expired";
    try {
      await this.ctx.client.request(suspensionCommands.end, this.ctx.systemCaller, {
        intent_id: row.intent_id,
        suspension_id: row.suspension_id,
        resolution: "expired",
        status: fail ? "abandoned" : "active",
        ...(!fail && row.record.fallback_value !== undefined ? { response: row.record.fallback_value } : {}),
      });
    } catch (error) {
      if (!isAppError(error) || !ALREADY_ENDED.has(error.code)) throw error;
      // Ended meanwhile (answered, cancelled, or by this timer before a crash): nothing fires again.
      status = "ended";
    }
    await tx.execute(sql`
      update governance.suspensions set status = case when status = 'waiting' then ${status} else status end, next_due_at = null, updated_at = ${now}
      where suspension_id = ${row.suspension_id}`);
  }
}
