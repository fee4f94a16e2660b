import { eq, sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { Sweeper } from "@intentmesh/service";
import { guardedFetch, isOutboundError } from "@intentmesh/ssrf";
import type { FederationContext } from "./context";
import { outgoingCallbacks, seenNonces } from "./db/schema";
import { signRequest } from "./signatures";
import { peerKeyHeader } from "./settings";

const BATCH = 20;
/** Backoff between attempts: 1 s, 2 s, 4 s, … capped at 5 minutes; a callback is retried until delivered. */
export const backoffMs = (attempts: number) => Math.min(1000 * 2 ** Math.max(0, attempts - 1), 300_000);

type DueRow = { id: number; idempotency_key: string; url: string; body: string; attempts: number };

/**
 * Sends queued callbacks as signed requests through the SSRF guard. A pass leases the due rows
 * (next_attempt_at moved past the call's deadline, FOR UPDATE SKIP LOCKED, so replicas share the
 * work and a crashed sender's rows come due again), sends them, and marks each delivered or
 * schedules the next attempt. A 4xx other than 401, 408 and 429 is final: the origin refuses the
 * callback itself, and resending the same bytes cannot change that (logged, marked delivered with
 * the error).
 */
export class CallbackSender extends Sweeper {
  constructor(private readonly ctx: FederationContext, intervalMs: number) {
    super(intervalMs, ctx.logger, "callback sender");
  }

  async sweep(): Promise<number> {
    const now = this.ctx.clock.now();
    const lease = new Date(now.getTime() + this.ctx.settings.dispatchTimeoutMs + 5000);
    const due = rowsOf<DueRow>(
      await this.ctx.db.execute(sql`
        update ${outgoingCallbacks} set next_attempt_at = ${lease.toISOString()}::timestamptz, attempts = attempts + 1
        where id in (
          select id from ${outgoingCallbacks}
          where delivered_at is null and next_attempt_at <= ${now.toISOString()}::timestamptz
          order by id limit ${BATCH} for update skip locked)
        returning id, idempotency_key, url, body, attempts`),
    );
    await Promise.all(due.map((row) => this.send(row)));
    await this.ctx.db.delete(seenNonces).where(sql`${seenNonces.expiresAt} < ${now.toISOString()}::timestamptz`);
    return due.length;
  }

  private async send(row: DueRow): Promise<void> {
    const { ctx } = this;
    const headers = signRequest({ method: "POST", targetUri: row.url, body: row.body, idempotencyKey: row.idempotency_key }, ctx.identity, ctx.clock.now().getTime());
    let error: string;
    let final = false;
    try {
      // The origin's key for this server (FEDERATION_PEERS[].api_key), beside the signature (SPEC 5.1).
      const key = peerKeyHeader(ctx.settings.peers, row.url);
      const response = await guardedFetch(row.url, { method: "POST", headers: { ...headers, ...key }, body: row.body }, { ...ctx.outbound, maxRedirects: 0 });
      if (response.status >= 200 && response.status < 300) {
        await ctx.db.update(outgoingCallbacks).set({ deliveredAt: ctx.clock.now(), lastError: null }).where(eq(outgoingCallbacks.id, row.id));
        return;
      }
      error = `HTTP ${response.status}`;
      final = response.status >= 400 && response.status < 500 && ![401, 408, 429].includes(response.status);
    } catch (caught) {
      if (!isOutboundError(caught)) throw caught;
      error = `${caught.code}: ${caught.message}`;
      final = caught.code === "SSRF_BLOCKED";
    }
    ctx.logger.warn({ callback: row.idempotency_key, attempts: row.attempts, error, final }, final ? "callback refused for good" : "callback not delivered; will retry");
    await ctx.db
      .update(outgoingCallbacks)
      .set(final ? { deliveredAt: ctx.clock.now(), lastError: error } : { nextAttemptAt: new Date(ctx.clock.now().getTime() + backoffMs(row.attempts)), lastError: error })
      .where(eq(outgoingCallbacks.id, row.id));
  }
}
