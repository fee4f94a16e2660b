import { isoTimestamp, type MemoryEntry, type MemoryType } from "@intentmesh/contracts";
import type { entries } from "./db/schema";
import { PRIORITY_OF_RANK } from "./domain/capacity";

export type EntryRow = typeof entries.$inferSelect;

/** The entry of 2.14 as the API returns it. */
export function toEntry(row: EntryRow): MemoryEntry {
  const episodic = row.memoryType === "episodic";
  const scope: { task_id?: string; intent_id?: string } = {};
  if (row.taskId) scope.task_id = row.taskId;
  if (row.intentId) scope.intent_id = row.intentId;
  return {
    id: row.id,
    agent_id: row.agentId,
    namespace: row.namespace,
    key: row.key,
    value: row.value,
    memory_type: row.memoryType as MemoryType,
    scope: row.taskId || row.intentId ? scope : null,
    tags: row.tags,
    ttl: row.ttl,
    version: row.version,
    created_at: isoTimestamp(row.createdAt),
    updated_at: isoTimestamp(row.updatedAt),
    expires_at: row.expiresAt ? isoTimestamp(row.expiresAt) : null,
    pinned: episodic ? Boolean(row.pinned) : null,
    priority: episodic ? (PRIORITY_OF_RANK[row.priority ?? 1] ?? "normal") : null,
    curated_by: row.curatedBy,
    sensitivity: (row.sensitivity as MemoryEntry["sensitivity"]) ?? null,
  };
}
