import { sql } from "drizzle-orm";
import { memoryEvents } from "@intentmesh/contracts";
import { Sweeper } from "@intentmesh/service";
import { entries } from "./db/schema";
import type { MemoryContext } from "./context";
import { entryEvent, writeMemoryEvents } from "./events";
import type { EntryRow } from "./mapping";

const BATCH = 500;

/**
 * Removes entries whose expires_at (from ttl or given) has passed on the service's clock, with
 * memory.expired each (4.8 rule 7). Safe with several replicas: each pass claims due rows with
 * FOR UPDATE SKIP LOCKED, so two replicas never expire the same entry. Runs every
 * MEMORY_SWEEP_INTERVAL_MS (default 10 s), far within the spec's recommended hour.
 */
export class ExpirySweeper extends Sweeper {
  constructor(
    private readonly ctx: MemoryContext,
    intervalMs: number,
  ) {
    super(intervalMs, ctx.logger, "memory expiry sweep");
  }

  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.ctx.clock.now();
      const rows = await this.ctx.db.transaction(async (tx) => {
        const due = await tx.execute(
          sql`delete from ${entries} where ${entries.id} in (select ${entries.id} from ${entries} where ${entries.expiresAt} <= ${now.toISOString()} order by ${entries.expiresAt} limit ${BATCH} for update skip locked) returning *`,
        );
        const deleted = ((due as { rows?: Record<string, unknown>[] }).rows ?? (due as unknown as Record<string, unknown>[])).map(fromRaw);
        await writeMemoryEvents(tx, deleted.map((row) => entryEvent(memoryEvents.expired, row, row.version, "system:memory-expiry")), now);
        return deleted;
      });
      total += rows.length;
      if (rows.length) this.ctx.published();
      if (rows.length < BATCH) return total;
    }
  }
}

/** A raw row of `returning *` as the drizzle row type (snake_case columns). */
function fromRaw(r: Record<string, unknown>): EntryRow {
  return {
    id: String(r.id),
    agentId: String(r.agent_id),
    namespace: String(r.namespace),
    key: String(r.key),
    value: r.value as Record<string, unknown>,
    valueBytes: Number(r.value_bytes),
    memoryType: String(r.memory_type),
    taskId: (r.task_id as string | null) ?? null,
    intentId: (r.intent_id as string | null) ?? null,
    tags: (r.tags as string[]) ?? [],
    ttl: (r.ttl as string | null) ?? null,
    version: Number(r.version),
    createdAt: new Date(r.created_at as string),
    updatedAt: new Date(r.updated_at as string),
    lastUsedAt: new Date(r.last_used_at as string),
    expiresAt: r.expires_at ? new Date(r.expires_at as string) : null,
    pinned: (r.pinned as boolean | null) ?? null,
    priority: r.priority == null ? null : Number(r.priority),
    curatedBy: (r.curated_by as string | null) ?? null,
    sensitivity: (r.sensitivity as string | null) ?? null,
  };
}
