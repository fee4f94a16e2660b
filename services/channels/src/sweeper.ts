import { sql } from "drizzle-orm";
import { Sweeper } from "@intentmesh/service";
import type { ChannelsContext } from "./context";
import { channels, messages } from "./db/schema";

const BATCH = 1000;

/**
 * Time on the server clock (injectable), safe with several replicas (each pass claims due rows
 * with FOR UPDATE SKIP LOCKED): messages whose expires_at passed become `expired` (3.2, rule 13),
 * and open channels with ttl_seconds close that long after their last message (2.12).
 */
export class ChannelSweeper extends Sweeper {
  constructor(
    private readonly ctx: ChannelsContext,
    intervalMs: number,
  ) {
    super(intervalMs, ctx.logger, "channel sweep");
  }

  async sweep(): Promise<number> {
    const now = this.ctx.clock.now().toISOString();
    let total = 0;
    for (;;) {
      const expired = await this.ctx.db.execute(sql`
        update ${messages} set status = 'expired'
        where id in (select id from ${messages}
                     where status in ('pending', 'delivered') and expires_at is not null and expires_at <= ${now}
                     order by expires_at limit ${BATCH} for update skip locked)
        returning id`);
      const n = rowCount(expired);
      total += n;
      if (n < BATCH) break;
    }
    const closed = await this.ctx.db.execute(sql`
      update ${channels} set status = 'closed', closed_at = closes_at
      where id in (select id from ${channels}
                   where status = 'open' and closes_at is not null and closes_at <= ${now}
                   for update skip locked)
      returning id`);
    return total + rowCount(closed);
  }
}

const rowCount = (result: unknown) => ((result as { rows?: unknown[] }).rows ?? (result as unknown[])).length;
