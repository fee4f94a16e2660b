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
 * What this process's own committed statements already did to the tracking rows, so that neither
 * of the two writers of a fact (POST /suspend or respond, and the tracker following the intent's
 * events; whichever comes first) writes it again: the second finds it here and skips its
 * statement. Both facts only ever become true: a row, once there, is never deleted, and an ended
 * row never waits again. So a remembered id can only spare a write that would have changed
 * nothing; an id forgotten (or written by another replica) is written again, harmlessly.
 * - `tracked`: the row exists (inserted, or found there by the insert).
 * - `ended`: a statement moved the row from waiting to its end (responded, expired, cancelled).
 * Remember a fact only after the statement that made it committed.
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
