import { sql } from "drizzle-orm";
import { isoTimestamp, type Caller } from "@intentmesh/contracts";
import { agentSettings, entries } from "../db/schema";
import type { MemoryContext } from "../context";
import { actingAgent, isAdmin, isCoordinator } from "@intentmesh/contracts";
import { accessDenied } from "../entry-access";
import { episodicCapacityOf } from "../capacity-store";
import { accessibleNamespaces } from "./namespaces";

export interface MemorySummary {
  agent_id: string;
  working: { entry_count: number; total_size_kb: number; tasks_with_memory: string[] };
  episodic: { entry_count: number; capacity: number; pinned_count: number; total_size_kb: number; oldest_entry: string | null; newest_entry: string | null };
  semantic_namespaces_accessible: string[];
}

const kb = (bytes: number) => Math.round((bytes / 1024) * 100) / 100;

/**
 * GET /agents/{agent_id}/memory/summary (4.8), for the agent itself, coordinators and admins.
 * oldest_entry / newest_entry are the created_at of the agent's oldest and newest episodic
 * entries; semantic_namespaces_accessible are those the agent (with an agent key's rights) may read.
 */
export async function memorySummary(ctx: MemoryContext, agentId: string, caller: Caller): Promise<MemorySummary> {
  if (actingAgent(caller) !== agentId && caller.principal !== agentId && !isAdmin(caller) && !isCoordinator(caller)) {
    throw accessDenied(`read the memory summary of agent ${agentId}`, { agent_id: agentId });
  }
  const [working, tasksWith, episodic, capacity, namespaces] = await Promise.all([
    ctx.db
      .select({ count: sql<number>`count(*)::int`, bytes: sql<string>`coalesce(sum(${entries.valueBytes}), 0)` })
      .from(entries)
      .where(sql`${entries.agentId} = ${agentId} and ${entries.memoryType} = 'working'`),
    ctx.db
      .selectDistinct({ taskId: entries.taskId })
      .from(entries)
      .where(sql`${entries.agentId} = ${agentId} and ${entries.memoryType} = 'working' and ${entries.taskId} is not null`)
      .orderBy(entries.taskId),
    ctx.db
      .select({
        count: sql<number>`count(*)::int`,
        pinned: sql<number>`count(*) filter (where ${entries.pinned})::int`,
        bytes: sql<string>`coalesce(sum(${entries.valueBytes}), 0)`,
        oldest: sql<Date | null>`min(${entries.createdAt})`,
        newest: sql<Date | null>`max(${entries.createdAt})`,
      })
      .from(entries)
      .where(sql`${entries.agentId} = ${agentId} and ${entries.memoryType} = 'episodic'`),
    episodicCapacityOf(ctx, ctx.db, agentId),
    accessibleNamespaces(ctx, { principal: agentId, actor: agentId, agent_id: agentId, roles: ["agent"] }),
  ]);
  const w = working[0]!;
  const e = episodic[0]!;
  const at = (v: Date | string | null) => (v ? isoTimestamp(new Date(v)) : null);
  return {
    agent_id: agentId,
    working: { entry_count: w.count, total_size_kb: kb(Number(w.bytes)), tasks_with_memory: tasksWith.map((t) => t.taskId!).filter(Boolean) },
    episodic: { entry_count: e.count, capacity, pinned_count: e.pinned, total_size_kb: kb(Number(e.bytes)), oldest_entry: at(e.oldest), newest_entry: at(e.newest) },
    semantic_namespaces_accessible: namespaces.map((n) => n.namespace),
  };
}

/** PUT /agents/{agent_id}/memory/capacity: an agent's own episodic capacity (null: the server's default); coordinators and admins. */
export async function setEpisodicCapacity(ctx: MemoryContext, agentId: string, capacity: number | null, caller: Caller): Promise<{ agent_id: string; episodic_capacity: number }> {
  if (!isAdmin(caller) && !isCoordinator(caller)) throw accessDenied(`set the episodic capacity of agent ${agentId} (coordinators and admins only)`, { agent_id: agentId });
  const now = ctx.clock.now();
  await ctx.db
    .insert(agentSettings)
    .values({ agentId, episodicCapacity: capacity, updatedAt: now })
    .onConflictDoUpdate({ target: agentSettings.agentId, set: { episodicCapacity: capacity, updatedAt: now } });
  return { agent_id: agentId, episodic_capacity: await episodicCapacityOf(ctx, ctx.db, agentId) };
}
