import { sql } from "drizzle-orm";
import type { SuspensionRecord } from "@intentmesh/contracts";
import { rowsOf, type Queryable } from "@intentmesh/db";
import { nextDueAt } from "./domain/schedule";

/**
 * The rows the timer works from. Tracking is idempotent by suspension id: POST /suspend and the
 * consumer of intent.suspended both call it, and the first wins.
 */
export async function trackSuspension(db: Queryable, intentId: string, record: SuspensionRecord, now: Date): Promise<void> {
  const due = nextDueAt(record, 1);
  await db.execute(sql`
    insert into governance.suspensions (suspension_id, intent_id, record, suspended_at, expires_at, attempt, next_due_at, status, updated_at)
    values (${record.id}, ${intentId}, ${JSON.stringify(record)}::jsonb, ${new Date(record.suspended_at)}, ${record.expires_at ? new Date(record.expires_at) : null}, 1, ${due}, 'waiting', ${now})
    on conflict (suspension_id) do nothing`);
}

/** The suspension ended (responded, expired, cancelled): its timer stops. True when this call ended the waiting row. */
export async function endTracking(db: Queryable, suspensionId: string, status: "responded" | "expired" | "cancelled", now: Date): Promise<boolean> {
  const ended = rowsOf(
    await db.execute(sql`
      update governance.suspensions set status = ${status}, next_due_at = null, updated_at = ${now}
      where suspension_id = ${suspensionId} and status = 'waiting' returning suspension_id`),
  );
  return ended.length > 0;
}

/** How many suspension ids each list of SettledSuspensions remembers; the oldest are forgotten first. */
const REMEMBERED = 10_000;

/**
 * What this process's own committed writes already did to the tracking rows, so that the tracker
 * acknowledges the intent's event for it without a transaction instead of writing nothing again.
 * Both facts only ever become true: a row, once there, is never deleted, and an ended row never
 * waits again. So a remembered id can only spare a write that would have changed nothing; an id
 * forgotten (or written by another replica) is applied the usual way, with its inbox row.
 * - `tracked`: the row exists (POST /suspend inserted it, or found it there), so the insert
 *   intent.suspended would run does nothing.
 * - `ended`: POST /respond moved the row from waiting to responded, so the end an
 *   intent.resumed (or a cancel) would run matches no waiting row.
 */
export class SettledSuspensions {
  private readonly trackedIds = new Set<string>();
  private readonly endedIds = new Set<string>();

  constructor(private readonly limit = REMEMBERED) {}

  tracked(suspensionId: string): void {
    remember(this.trackedIds, suspensionId, this.limit);
  }

  ended(suspensionId: string): void {
    remember(this.endedIds, suspensionId, this.limit);
    // Its start will not be needed either: the row exists.
    this.trackedIds.delete(suspensionId);
  }

  isTracked(suspensionId: string): boolean {
    return this.trackedIds.has(suspensionId) || this.endedIds.has(suspensionId);
  }

  isEnded(suspensionId: string): boolean {
    return this.endedIds.has(suspensionId);
  }
}

/** A Set keeps insertion order: past the limit, the oldest id goes. */
function remember(ids: Set<string>, id: string, limit: number): void {
  ids.delete(id);
  ids.add(id);
  if (ids.size > limit) ids.delete(ids.values().next().value as string);
}
