import { sql, isNull, and, lt, isNotNull } from "drizzle-orm";
import { bigint, index, jsonb, text, timestamp, type PgSchema } from "drizzle-orm/pg-core";
import { headers as natsHeaders } from "@nats-io/transport-node";
import type { Bus } from "./connection";
import { rowsOf, type Database, type Queryable } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import { traceCarrier } from "./trace";
import { metrics, scrapedGauge } from "@intentmesh/telemetry";

/**
 * The transactional outbox of one service. A state change, its event-log row and its outbox row
 * commit in one transaction; the relay publishes the row afterwards. The row keeps the exact
 * bytes to publish and the deterministic message id, so a republish is a duplicate JetStream drops.
 */
export function outboxTable(schema: PgSchema) {
  return schema.table(
    "outbox",
    {
      id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
      subject: text("subject").notNull(),
      msgId: text("msg_id").notNull(),
      payload: text("payload").notNull(),
      headers: jsonb("headers").$type<Record<string, string>>().notNull().default({}),
      createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
      publishedAt: timestamp("published_at", { withTimezone: true, mode: "date" }),
    },
    (t) => [index("outbox_unpublished_idx").on(t.id).where(sql`${t.publishedAt} is null`)],
  );
}
export type OutboxTable = ReturnType<typeof outboxTable>;

export interface OutboxMessage {
  subject: string;
  msgId: string;
  payload: unknown;
  headers?: Record<string, string>;
}

/** An outbox row's columns for a message: the payload's exact bytes, and headers with the active trace context. */
export function outboxRowOf(message: OutboxMessage, trace: Record<string, string> = traceCarrier()) {
  return { subject: message.subject, msgId: message.msgId, payload: JSON.stringify(message.payload), headers: { ...trace, ...(message.headers ?? {}) } };
}

/** Adds messages to the outbox inside the caller's transaction, with the active trace context. */
export async function enqueue(tx: Queryable, outbox: OutboxTable, messages: OutboxMessage[]): Promise<void> {
  if (!messages.length) return;
  const trace = traceCarrier();
  await tx.insert(outbox).values(messages.map((m) => outboxRowOf(m, trace)));
}

export interface RelayOptions {
  /** Names the advisory lock: one relay of a service publishes at a time, so events leave in commit order. */
  name: string;
  batchSize?: number;
  /** Fallback poll for rows a crashed replica left behind; commits in this process kick the relay at once. */
  pollMs?: number;
  /**
   * How long rows marked published are kept before the janitor deletes them. The relay deletes
   * what it claims; only versions before that marked rows instead, and left them behind.
   */
  retainPublishedMs?: number;
  /** Claimed rows after which the relay vacuums its outbox (default 5,000; see vacuumIfDue). */
  vacuumAfterRows?: number;
  /** Test seam: runs after the rows were published and before their claim commits. */
  afterPublish?: (msgIds: string[]) => Promise<void> | void;
}

type OutboxRow = { id: number; subject: string; msg_id: string; payload: string; headers: Record<string, string> };

const encoder = new TextEncoder();
/** Room left in a bus message for the headers (trace context, schema, message id). */
const HEADER_ALLOWANCE = 4096;

export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private lastJanitor = 0;
  /** Rows this relay claimed since it last vacuumed the table, and when that was. */
  private claimedSinceVacuum = 0;
  private lastVacuum = 0;
  private readonly batchSize: number;
  private readonly pollMs: number;
  private readonly retainMs: number;
  private readonly vacuumAfterRows: number;

  constructor(
    private readonly db: Database,
    private readonly outbox: OutboxTable,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly options: RelayOptions,
  ) {
    this.batchSize = options.batchSize ?? 500;
    this.pollMs = options.pollMs ?? 500;
    this.retainMs = options.retainPublishedMs ?? 3_600_000;
    this.vacuumAfterRows = options.vacuumAfterRows ?? 5000;
  }

  start(): void {
    this.stopped = false;
    runningRelays.add(this);
    this.schedule(0);
  }

  get name(): string {
    return this.options.name;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    runningRelays.delete(this);
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** Called after a commit that enqueued messages: publish now rather than at the next poll. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    // Even a kick waits for a timer turn (about a millisecond): commits landing meanwhile share the pass.
    this.timer = setTimeout(() => void this.run(), delayMs);
  }

  private async run(): Promise<void> {
    if (this.running || this.stopped) return;
    let retryMs = this.pollMs;
    this.running = (async () => {
      try {
        for (;;) {
          this.again = false;
          const published = await this.drainOnce();
          if (typeof published === "number") this.claimedSinceVacuum += published;
          if (published === "locked") {
            // Another replica is draining; look again soon so our own commits are not left for the poll.
            retryMs = 20;
            break;
          }
          if (published < this.batchSize && !this.again) break;
        }
        await this.vacuumIfDue();
        await this.janitor();
      } catch (error) {
        this.logger.warn({ err: error }, "outbox relay pass failed; retrying");
        retryMs = Math.min(this.pollMs, 1000);
      }
    })();
    await this.running;
    this.running = undefined;
    if (!this.stopped) this.schedule(this.again ? 0 : retryMs);
  }

  /**
   * Publishes one batch in id order inside one transaction: a single statement takes the relay
   * lock and claims (deletes) the oldest unpublished rows; the rows are published; the commit
   * makes the claim stick. A crash before the commit brings the rows back, and the next pass
   * republishes the same message ids, which JetStream drops.
   */
  async drainOnce(): Promise<number | "locked"> {
    return this.db.transaction(async (tx) => {
      // A claim lost in a crash only means a republish that JetStream drops, so the relay's commit
      // need not wait for the WAL flush (set_config(..., true): for this transaction only, set in
      // the claim itself rather than by a statement of its own); the events were committed durably.
      // Claimed rows are deleted, not marked: a delete writes no new row version and leaves
      // nothing for a janitor, and a rollback brings the rows back just the same. One result row
      // per claimed row, each carrying the lock flag (one row of nulls when none was claimed):
      // no json_agg, so the payloads come back as they are stored, not escaped into JSON again.
      const claimed = rowsOf<{ locked: boolean } & (OutboxRow | { [K in keyof OutboxRow]: null })>(
        await tx.execute(sql`
          with lock as (
            select pg_try_advisory_xact_lock(hashtext(${"im-outbox:" + this.options.name})) as locked,
                   set_config('synchronous_commit', 'off', true) as commit_mode),
          claimed as (
            delete from ${this.outbox}
            where id in (
              select id from ${this.outbox}
              where published_at is null and (select locked from lock)
              order by id limit ${this.batchSize}
              for update skip locked)
            returning id, subject, msg_id, payload, headers)
          select lock.locked, c.id, c.subject, c.msg_id, c.payload, c.headers
          from lock left join claimed c on true
          order by c.id`),
      );
      if (!claimed[0]?.locked) return "locked" as const;
      const rows = claimed.filter((row): row is { locked: boolean } & OutboxRow => row.id !== null);
      if (!rows.length) return 0;
      const maxPayload = this.bus.nc.info?.max_payload ?? 1024 * 1024;
      const sendable = rows
        .map((row) => ({ row, body: encoder.encode(row.payload) }))
        .filter(({ row, body }) => {
          if (body.byteLength + HEADER_ALLOWANCE <= maxPayload) return true;
          // The size limits where data enters keep every event far below max_payload, so this is
          // a bug or a bus configured smaller than the one the data was written for. Publishing
          // would fail on every pass and hold back every later event of the service: the row is
          // claimed like the others (the event stays in its log) and the relay goes on.
          this.logger.error(
            { subject: row.subject, msgId: row.msg_id, bytes: body.byteLength, maxPayload },
            "outbox message larger than the bus carries; skipped so later messages are published",
          );
          metrics.outboxSkipped.inc({ relay: this.options.name });
          return false;
        });
      const acks = await Promise.all(
        sendable.map(({ row, body }) => {
          const hdrs = natsHeaders();
          for (const [key, value] of Object.entries(row.headers ?? {})) hdrs.set(key, value);
          return this.bus.js.publish(this.bus.subject(row.subject), body, { msgID: row.msg_id, headers: hdrs });
        }),
      );
      metrics.outboxPublished.inc({ relay: this.options.name }, acks.length);
      const duplicates = acks.filter((ack) => ack.duplicate).length;
      if (duplicates) this.logger.info({ duplicates }, "outbox republished messages JetStream already had; they were dropped");
      await this.options.afterPublish?.(rows.map((r) => r.msg_id));
      return rows.length;
    });
  }

  /**
   * Vacuums the outbox after every `vacuumAfterRows` claimed rows (at most once a second). Each
   * claim scans the unpublished-rows index from its lowest id, and the entries of deleted rows
   * stay in that index until a vacuum: autovacuum looks at a table once a minute, in which a busy
   * service deletes 100,000 rows, and a 15-row claim came to read 100 index pages (1.1 ms of
   * PostgreSQL time, against 0.3 ms after a vacuum). Vacuuming a table this small takes a few
   * milliseconds; it runs outside the claim's transaction and takes no lock that writers wait on.
   */
  private async vacuumIfDue(): Promise<void> {
    const now = Date.now();
    if (this.claimedSinceVacuum < this.vacuumAfterRows || now - this.lastVacuum < 1000) return;
    this.claimedSinceVacuum = 0;
    this.lastVacuum = now;
    try {
      await this.db.execute(sql`vacuum ${this.outbox}`);
    } catch (error) {
      // Claims only get slower without it; autovacuum still comes by.
      this.logger.warn({ err: error }, "outbox vacuum failed; claims rely on autovacuum");
    }
  }

  /** Deletes rows that versions before claim-by-delete marked published and kept. */
  private async janitor(): Promise<void> {
    const now = Date.now();
    if (now - this.lastJanitor < 60_000) return;
    this.lastJanitor = now;
    await this.db
      .delete(this.outbox)
      .where(and(isNotNull(this.outbox.publishedAt), lt(this.outbox.publishedAt, new Date(now - this.retainMs))));
  }

  /** Seconds the oldest unpublished row has waited (0 when none): the relay's lag. */
  async lagSeconds(): Promise<number> {
    const rows = await this.db
      .select({ s: sql<number | null>`extract(epoch from now() - min(${this.outbox.createdAt}))::float8` })
      .from(this.outbox)
      .where(isNull(this.outbox.publishedAt));
    return Math.max(0, Number(rows[0]?.s ?? 0));
  }

  /** How many rows wait to be published: readiness and tests look at it. */
  async backlog(): Promise<number> {
    const rows = await this.db.select({ n: sql<number>`count(*)::int` }).from(this.outbox).where(isNull(this.outbox.publishedAt));
    return rows[0]?.n ?? 0;
  }
}

/** The relays running in this process, read when Prometheus scrapes. */
const runningRelays = new Set<OutboxRelay>();
scrapedGauge("intentmesh_outbox_backlog", "outbox rows waiting to be published, by relay", ["relay"], async (set) => {
  for (const relay of runningRelays) set({ relay: relay.name }, await relay.backlog().catch(() => -1));
});
scrapedGauge("intentmesh_outbox_lag_seconds", "how long the oldest unpublished outbox row has waited, by relay", ["relay"], async (set) => {
  for (const relay of runningRelays) set({ relay: relay.name }, await relay.lagSeconds().catch(() => -1));
});
