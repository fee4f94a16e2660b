import { sql } from "drizzle-orm";
import { Sweeper, rowsOf } from "@intentmesh/db";
import type { IntentsContext } from "./context";
import { leases } from "./db/schema";
import { leaseFromRaw } from "./db/statements";
import { appendToLog, lockIntent } from "./event-log";
import { expiryEvent } from "./handlers/leases";

type DueLease = typeof leases.$inferSelect;

/**
 * Expires leases whose time has passed and appends lease.expired (reason `expired`) to their
 * intents. Intents in suspended_awaiting_input are skipped (spec 3.1). Safe with several
 * replicas: one sweeper per database runs at a time (advisory lock), and due rows are claimed
 * with FOR UPDATE SKIP LOCKED. A pass reads only due leases through the partial index on
 * expires_at, so its cost follows the number due, not the number held.
 */
export class LeaseSweeper extends Sweeper {
  constructor(
    private readonly ctx: IntentsContext,
    intervalMs = 1000,
    private readonly batchSize = 500,
  ) {
    super(intervalMs, ctx.logger, "lease sweep");
  }

  /** One pass; returns how many leases it expired. Tests call it directly with a manual clock. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const expired = await this.sweepBatch();
      if (expired < 0) return total;
      total += expired;
      if (expired < this.batchSize) return total;
    }
  }

  private async sweepBatch(): Promise<number> {
    const now = this.ctx.clock.now();
    const result = await this.ctx.db.transaction(async (tx) => {
      const [lock] = rowsOf<{ locked: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(hashtext('im-intents-lease-sweeper')) as locked`));
      if (!lock?.locked) return -1;
      const due = rowsOf<Record<string, unknown>>(
        await tx.execute(sql`
          update ${leases} l set holds_scope = false, end_reason = 'expired', ended_at = ${now}
          from (
            select d.id from ${leases} d
            join intents.intents i on i.id = d.intent_id
            where d.holds_scope and d.expires_at <= ${now} and i.status <> 'suspended_awaiting_input'
            order by d.expires_at
            limit ${this.batchSize}
            for update of d skip locked
          ) due
          where l.id = due.id
          returning l.*`),
      ).map(leaseFromRaw);
      // Intents are locked in id order so two sweepers (or a sweeper and a writer) cannot deadlock.
      const byIntent = new Map<string, DueLease[]>();
      for (const lease of due.sort((a, b) => a.intentId.localeCompare(b.intentId))) {
        byIntent.set(lease.intentId, [...(byIntent.get(lease.intentId) ?? []), lease]);
      }
      for (const [intentId, expired] of byIntent) {
        await lockIntent(tx, intentId, null);
        await appendToLog(tx, intentId, expired.map((lease) => expiryEvent(lease, "expired", "system")), now);
      }
      return due.length;
    });
    if (result > 0) this.ctx.published();
    return result;
  }
}
