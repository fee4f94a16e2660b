import { sql } from "drizzle-orm";
import { isoTimestamp, intentEvents } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import { rowsOf } from "@intentmesh/db";
import { Sweeper } from "@intentmesh/service";
import type { IntentsContext } from "../kernel/context";
import { appendToLog } from "../kernel/event-log";

interface ExpiredEntry {
  id: string;
  intent_id: string;
  principal_type: string;
  principal_id: string;
  permission: string;
  expires_at: Date | string;
}

/**
 * Ends access-control entries whose expires_at has passed: removes them and appends access_expired
 * (RFC-0011) to their intents' logs. The decision never waits for it (an entry grants nothing from
 * its expires_at on, rules.ts); the sweep is what makes the end visible in the log and on the SSE
 * streams, which check their subscriber again when they see it. Safe with several replicas: one
 * sweep per database at a time (advisory lock), intents claimed with FOR UPDATE SKIP LOCKED in
 * the order every request takes them (intent row, then its entries); time from the injected clock.
 */
export class AclExpirySweeper extends Sweeper {
  constructor(
    private readonly ctx: IntentsContext,
    intervalMs = 1000,
    private readonly batchSize = 500,
  ) {
    super(intervalMs, ctx.logger, "acl expiry sweep");
  }

  /** One pass; returns how many entries it ended. Tests call it directly with a manual clock. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const ended = await this.sweepBatch();
      if (ended < 0) return total;
      total += ended;
      if (ended < this.batchSize) return total;
    }
  }

  private async sweepBatch(): Promise<number> {
    const now = this.ctx.clock.now();
    const ended = await this.ctx.db.transaction(async (tx) => {
      const [lock] = rowsOf<{ locked: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(hashtext('im-intents-acl-expiry-sweeper')) as locked`));
      if (!lock?.locked) return -1;
      const claimed = rowsOf<{ id: string; acl_version: number }>(
        await tx.execute(sql`
          update intents.intents i set acl_version = i.acl_version + 1
          where i.id in (
            select c.id from intents.intents c
            where c.id in (select e.intent_id from intents.acl_entries e where e.expires_at <= ${now} order by e.expires_at limit ${this.batchSize})
            order by c.id
            for update skip locked)
          returning i.id, i.acl_version`),
      );
      if (!claimed.length) return 0;
      const ids = claimed.map((row) => row.id).sort();
      const due = rowsOf<ExpiredEntry>(
        await tx.execute(sql`
          delete from intents.acl_entries e
          where e.intent_id in (${sql.join(ids.map((id) => sql`${id}`), sql`, `)}) and e.expires_at <= ${now}
          returning e.id, e.intent_id, e.principal_type, e.principal_id, e.permission, e.expires_at`),
      );
      const version = new Map(claimed.map((row) => [row.id, row.acl_version]));
      for (const intentId of ids) {
        const expired = due.filter((entry) => entry.intent_id === intentId).sort((a, b) => new Date(a.expires_at).getTime() - new Date(b.expires_at).getTime() || a.id.localeCompare(b.id));
        if (!expired.length) continue;
        await appendToLog(
          tx,
          intentId,
          expired.map((entry) => newEvent(intentEvents.accessExpired, "system", {
            entry_id: entry.id,
            principal_id: entry.principal_id,
            principal_type: entry.principal_type,
            permission: entry.permission,
            expires_at: isoTimestamp(entry.expires_at),
            acl_version: version.get(intentId)!,
          })),
          now,
        );
      }
      return due.length;
    });
    if (ended > 0) this.ctx.published();
    return ended;
  }
}
