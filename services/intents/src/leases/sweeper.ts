import { sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { Sweeper } from "@intentmesh/service";
import type { IntentsContext } from "../kernel/context";
import { leases } from "../db/schema";
import { leaseFromRaw } from "../kernel/statements";
import { appendToLog } from "../kernel/event-log";
import { expiryEvent } from "./handlers";

type DueLease = typeof leases.$inferSelect;

/**
 * Expires leases whose time has passed and appends a lease expiry event (lease_released, reason `expired`) to their
 * intents. Intents in suspended_awaiting_input are skipped (spec 3.1). Safe with several
 * replicas: one sweeper per database runs at a time (advisory lock), and the intents holding due
 * leases are claimed with FOR UPDATE SKIP LOCKED. A pass reads only due leases through the partial index on
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
      // Intents first, then their leases: the order every request takes, so a sweep never
      // deadlocks with a writer. Intents a writer holds right now are skipped until next tick.
      // Bumping the lease epoch tells state writes checked before this sweep that leases changed.
      const intentIds = rowsOf<{ id: string }>(
        await tx.execute(sql`
          update intents.intents i set lease_epoch = i.lease_epoch + 1
          where i.id in (
            select c.id from intents.intents c
            where c.id in (
              select d.intent_id from ${leases} d
              where d.holds_scope and d.expires_at <= ${now}
              order by d.expires_at
              limit ${this.batchSize}
            ) and c.status <> 'suspended_awaiting_input'
            order by c.id
            for update skip locked
          )
          returning i.id`),
      )
        .map((row) => row.id)
        .sort();
      if (!intentIds.length) return 0;
      const due = rowsOf<Record<string, unknown>>(
        await tx.execute(sql`
          update ${leases} l set holds_scope = false, end_reason = 'expired', ended_at = ${now}
          where l.intent_id in (${sql.join(intentIds.map((id) => sql`${id}`), sql`, `)})
            and l.holds_scope and l.expires_at <= ${now}
          returning l.*`),
      ).map(leaseFromRaw);
      const byIntent = new Map<string, DueLease[]>();
      for (const lease of due) byIntent.set(lease.intentId, [...(byIntent.get(lease.intentId) ?? []), lease]);
      for (const intentId of intentIds) {
        const expired = byIntent.get(intentId);
        if (expired) await appendToLog(tx, intentId, expired.map((lease) => expiryEvent(lease, "expired", "system")), now);
      }
      return due.length;
    });
    if (result > 0) this.ctx.published();
    return result;
  }
}
