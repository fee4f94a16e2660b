import { sql } from "drizzle-orm";
import { AppError, memoryEvents, type Caller, type MemoryBatchBody, type MemoryDeleteFilter, type MemoryEntry } from "@intentmesh/contracts";
import { entries } from "../db/schema";
import type { MemoryContext } from "../context";
import { actingAgent } from "@intentmesh/contracts";
import { assertAccess } from "../entry-access";
import { assertGovernanceAllows } from "../governance-check";
import { entryEvent, writeMemoryEvents, type NewMemoryEvent } from "../events";
import { toEntry, type EntryRow } from "../mapping";
import { lockEntry } from "../db/entry-sql";
import { applyUpdate, entryNotFound, findEntry, insertPrepared, prepareCreate, type PreparedCreate } from "./entries";
import { filterSql, visibleSql } from "./query";

/** Says which item of a batch failed, keeping the error's code and status. */
function atItem(index: number, error: unknown): unknown {
  if (!(error instanceof AppError)) return error;
  return error.within(`entries[${index}]: `, { item: index });
}

type Item = MemoryBatchBody["entries"][number];
const isUpdate = (item: Item): item is Extract<Item, { id: string }> => "id" in item && typeof item.id === "string";

/**
 * POST /memory/batch: creates and updates, all or none, in one transaction (docs/memory.md).
 * Every item is checked first (access, scope, ttl); then the writes run in item order, and any
 * failure (409 ENTRY_EXISTS, 409 VERSION_MISMATCH, 429) rolls all of them back.
 */
export async function batchWrite(ctx: MemoryContext, body: MemoryBatchBody, caller: Caller): Promise<{ entries: MemoryEntry[] }> {
  const now = ctx.clock.now();
  const plans: ({ kind: "create"; prepared: PreparedCreate } | { kind: "update"; item: Extract<Item, { id: string }> })[] = [];
  for (const [index, item] of body.entries.entries()) {
    try {
      if (isUpdate(item)) {
        const row = await findEntry(ctx, item.id);
        await assertAccess(ctx, caller, { id: row.id, agentId: row.agentId, memoryType: row.memoryType as "working", namespace: row.namespace, taskId: row.taskId }, "write");
        await assertGovernanceAllows(ctx, caller, row.intentId);
        plans.push({ kind: "update", item });
      } else {
        plans.push({ kind: "create", prepared: await prepareCreate(ctx, item, caller, now) });
      }
    } catch (error) {
      throw atItem(index, error);
    }
  }
  const rows = await ctx.db.transaction(async (tx) => {
    const events: NewMemoryEvent[] = [];
    const written: EntryRow[] = [];
    for (const [index, plan] of plans.entries()) {
      try {
        if (plan.kind === "create") {
          written.push(await insertPrepared(ctx, tx, plan.prepared, caller, events));
        } else {
          const current = await lockEntry(tx, plan.item.id);
          if (!current) throw entryNotFound(plan.item.id);
          const { id: _id, if_match, ...changes } = plan.item;
          written.push(await applyUpdate(ctx, tx, current, if_match, changes, caller, now, events));
        }
      } catch (error) {
        throw atItem(index, error);
      }
    }
    await writeMemoryEvents(tx, events, now);
    return written;
  });
  ctx.published();
  return { entries: rows.map(toEntry) };
}

/** At most this many entries go per DELETE /memory/batch; `has_more` says to call again. */
export const DELETE_BATCH_MAX = 1000;

/**
 * DELETE /memory/batch: deletes the entries matching the filter that the caller may write (others
 * are left alone, never reported), up to 1000 per call, each with memory.deleted.
 */
export async function batchDelete(ctx: MemoryContext, filter: MemoryDeleteFilter, caller: Caller): Promise<{ deleted: number; entry_ids: string[]; has_more: boolean }> {
  const owner = filter.agent_id ?? actingAgent(caller);
  const where = [
    ...filterSql({ ...filter, task_id: filter.scope?.task_id, intent_id: filter.scope?.intent_id }),
    await visibleSql(ctx, caller, owner, "write"),
  ];
  if (filter.agent_id) where.push(sql`${entries.agentId} = ${filter.agent_id}`);
  const now = ctx.clock.now();
  const result = await ctx.db.transaction(async (tx) => {
    const ids = await tx
      .select({ id: entries.id })
      .from(entries)
      .where(sql.join(where, sql` and `))
      .orderBy(entries.id)
      .limit(DELETE_BATCH_MAX + 1)
      .for("update", { skipLocked: true });
    const chosen = ids.slice(0, DELETE_BATCH_MAX).map((r) => r.id);
    if (!chosen.length) return { rows: [] as EntryRow[], hasMore: false };
    const rows = await tx
      .delete(entries)
      .where(sql`${entries.id} in (${sql.join(chosen.map((id) => sql`${id}`), sql`, `)})`)
      .returning();
    await writeMemoryEvents(tx, rows.map((row) => entryEvent(memoryEvents.deleted, row, row.version, actingAgent(caller))), now);
    return { rows, hasMore: ids.length > DELETE_BATCH_MAX };
  });
  ctx.published();
  return { deleted: result.rows.length, entry_ids: result.rows.map((r) => r.id), has_more: result.hasMore };
}
