import { sql } from "drizzle-orm";
import type { Caller, MemoryEntry, PutAgentMemoryBody } from "@intentmesh/contracts";
import { entries } from "../db/schema";
import type { MemoryContext } from "../context";
import { createEntry, entryNotFound, getEntry, patchEntry } from "./entries";
import { assertAccess } from "../entry-access";
import type { EntryRow } from "../mapping";

/**
 * The MCP server's memory routes: an agent's entry addressed by namespace and key, the
 * (agent_id, namespace, key) of 2.14's uniqueness for working and episodic entries (a semantic
 * entry the agent wrote is found too).
 */
async function findByKey(ctx: MemoryContext, agentId: string, namespace: string, key: string): Promise<EntryRow | undefined> {
  const [row] = await ctx.db
    .select()
    .from(entries)
    .where(sql`${entries.agentId} = ${agentId} and ${entries.namespace} = ${namespace} and ${entries.key} = ${key}`)
    .orderBy(sql`${entries.memoryType} = 'semantic'`)
    .limit(1);
  return row;
}

/** GET /agents/{id}/memory/{namespace}/{key}: the entry, 404 ENTRY_NOT_FOUND, 403 ACCESS_DENIED. */
export async function lookupEntry(ctx: MemoryContext, agentId: string, namespace: string, key: string, caller: Caller): Promise<MemoryEntry> {
  const row = await findByKey(ctx, agentId, namespace, key);
  if (!row) throw entryNotFound(`${agentId}/${namespace}/${key}`);
  return getEntry(ctx, row.id, caller);
}

/**
 * PUT /agents/{id}/memory/{namespace}/{key}: creates the entry when there is none; an existing
 * entry is updated only with If-Match (rule 1: 428 without, 409 VERSION_MISMATCH when stale).
 */
export async function putEntry(ctx: MemoryContext, agentId: string, namespace: string, key: string, ifMatch: number | null, body: PutAgentMemoryBody, caller: Caller): Promise<MemoryEntry> {
  const ttl = body.ttl_seconds ? `duration:PT${body.ttl_seconds}S` : undefined;
  const existing = await findByKey(ctx, agentId, namespace, key);
  if (existing) {
    await assertAccess(ctx, caller, { id: existing.id, agentId, memoryType: existing.memoryType as "working", namespace, taskId: existing.taskId }, "write");
    return patchEntry(ctx, existing.id, ifMatch, { value: body.value, ...(body.tags ? { tags: body.tags } : {}), ...(ttl ? { ttl } : {}) }, caller);
  }
  return createEntry(ctx, { agent_id: agentId, namespace, key, value: body.value, memory_type: body.memory_type, tags: body.tags ?? [], scope: body.scope, ttl }, caller);
}
