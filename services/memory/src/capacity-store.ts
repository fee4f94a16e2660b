import { and, eq, sql } from "drizzle-orm";
import { appError, memoryEvents } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { agentSettings, entries } from "./db/schema";
import type { MemoryContext } from "./context";
import { workingCapacityViolation, workingLimits } from "./domain/capacity";
import { entryEvent, type NewMemoryEvent } from "./events";

/** Advisory-lock class of memory's capacity checks: one writer per agent (episodic) or task (working) at a time. */
const CAPACITY_LOCK = 7_014;
const lockFor = (tx: Tx, key: string) => tx.execute(sql`select pg_advisory_xact_lock(${CAPACITY_LOCK}, hashtext(${key}))`);

/** 429 CAPACITY_EXCEEDED, titled Memory Capacity Exceeded (spec 7). */
export const capacityExceeded = (message: string, details: Record<string, unknown>) =>
  appError("CAPACITY_EXCEEDED", message, details, { title: "Memory Capacity Exceeded" });

/** An agent's episodic capacity: its own setting, else the server's; never above the guardrail max_episodic_memory_per_agent. */
export async function episodicCapacityOf(ctx: MemoryContext, tx: Tx | MemoryContext["db"], agentId: string): Promise<number> {
  const [setting] = await tx.select().from(agentSettings).where(eq(agentSettings.agentId, agentId));
  const capacity = setting?.episodicCapacity ?? ctx.episodicCapacity;
  const ceiling = ctx.guardrails.max_episodic_memory_per_agent;
  return ceiling != null ? Math.min(capacity, ceiling) : capacity;
}

/**
 * Before an episodic entry is added: at capacity, evicts (deletes) entries in the eviction order
 * (lower priority first, least recently used first, pinned never) until one slot is free, with a
 * memory.evicted event each; when only pinned entries are left, 429. The lock per agent makes
 * concurrent creates count one after the other.
 */
export async function makeRoomForEpisodic(ctx: MemoryContext, tx: Tx, agentId: string, actor: string): Promise<NewMemoryEvent[]> {
  await lockFor(tx, `episodic:${agentId}`);
  const capacity = await episodicCapacityOf(ctx, tx, agentId);
  const [{ count } = { count: 0 }] = await tx
    .select({ count: sql<number>`count(*)::int` })
    .from(entries)
    .where(and(eq(entries.agentId, agentId), eq(entries.memoryType, "episodic")));
  const excess = count - capacity + 1;
  if (excess <= 0) return [];
  const victims = await tx
    .select({ id: entries.id })
    .from(entries)
    .where(sql`${entries.agentId} = ${agentId} and ${entries.memoryType} = 'episodic' and ${entries.pinned} = false`)
    .orderBy(entries.priority, entries.lastUsedAt, entries.id)
    .limit(excess);
  if (victims.length < excess) {
    throw capacityExceeded(`agent ${agentId} has ${count} episodic entries, its capacity of ${capacity}, and the ones that could be evicted are not enough: pinned entries are never evicted`, {
      agent_id: agentId,
      capacity,
      entry_count: count,
      memory_type: "episodic",
    });
  }
  const deleted = await tx
    .delete(entries)
    .where(sql`${entries.id} in (${sql.join(victims.map((v) => sql`${v.id}`), sql`, `)})`)
    .returning();
  return deleted.map((row) => entryEvent(memoryEvents.evicted, row, row.version, actor));
}

/** Before a task's working memory grows: its memory_policy limits (and the guardrail), or 429. */
export async function assertWorkingRoom(
  ctx: MemoryContext,
  tx: Tx,
  taskId: string,
  policy: { maxEntries: number | null | undefined; maxTotalSizeKb: number | null | undefined },
  addEntries: number,
  addBytes: number,
): Promise<void> {
  const limits = workingLimits({ max_entries: policy.maxEntries, max_total_size_kb: policy.maxTotalSizeKb }, ctx.guardrails.max_working_memory_per_task);
  if (limits.maxEntries == null && limits.maxTotalSizeKb == null) return;
  await lockFor(tx, `working:${taskId}`);
  const [usage = { entries: 0, bytes: 0 }] = await tx
    .select({ entries: sql<number>`count(*)::int`, bytes: sql<number>`coalesce(sum(${entries.valueBytes}), 0)::bigint` })
    .from(entries)
    .where(and(eq(entries.taskId, taskId), eq(entries.memoryType, "working")));
  const violation = workingCapacityViolation({ entries: Number(usage.entries), bytes: Number(usage.bytes) }, addEntries, addBytes, limits);
  if (violation) {
    throw capacityExceeded(`${violation}: the entry was not written`, {
      task_id: taskId,
      memory_type: "working",
      max_entries: limits.maxEntries,
      max_total_size_kb: limits.maxTotalSizeKb,
    });
  }
}
