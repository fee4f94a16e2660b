import { sql } from "drizzle-orm";
import type { SuspensionRecord } from "@intentmesh/contracts";
import type { Queryable } from "@intentmesh/db";
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

/** The suspension ended (responded, expired, cancelled): its timer stops. */
export async function endTracking(db: Queryable, suspensionId: string, status: "responded" | "expired" | "cancelled", now: Date): Promise<void> {
  await db.execute(sql`
    update governance.suspensions set status = ${status}, next_due_at = null, updated_at = ${now}
    where suspension_id = ${suspensionId} and status = 'waiting'`);
}
