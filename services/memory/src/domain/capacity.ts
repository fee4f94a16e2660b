import type { MemoryPriority } from "@intentmesh/contracts";

/** low 0, normal 1, high 2: the stored rank of an episodic priority. */
export const PRIORITY_RANK: Record<MemoryPriority, number> = { low: 0, normal: 1, high: 2 };
export const PRIORITY_OF_RANK: MemoryPriority[] = ["low", "normal", "high"];

export interface EvictionCandidate {
  id: string;
  pinned: boolean;
  priority: number;
  lastUsedAt: Date;
}

/**
 * The episodic eviction order (3.7, 4.8 rule 4): pinned entries never; among the rest, lower
 * priority first, and within a priority the least recently used first. The SQL of the capacity
 * check orders the same way (capacity-store.ts); this is the rule the unit tests pin down.
 */
export function evictionOrder(candidates: EvictionCandidate[]): EvictionCandidate[] {
  return candidates
    .filter((c) => !c.pinned)
    .sort((a, b) => a.priority - b.priority || a.lastUsedAt.getTime() - b.lastUsedAt.getTime() || a.id.localeCompare(b.id));
}

export interface WorkingUsage {
  entries: number;
  bytes: number;
}
export interface WorkingLimits {
  maxEntries: number | null;
  maxTotalSizeKb: number | null;
}

/**
 * Whether a task's working memory may grow from `usage` by `addEntries` entries and `addBytes`
 * bytes (4.8 rule 6, memory_policy max_entries / max_total_size_kb); the reason when not.
 */
export function workingCapacityViolation(usage: WorkingUsage, addEntries: number, addBytes: number, limits: WorkingLimits): string | null {
  if (limits.maxEntries != null && addEntries > 0 && usage.entries + addEntries > limits.maxEntries) {
    return `the task's working memory holds ${usage.entries} entries and its limit is ${limits.maxEntries}`;
  }
  if (limits.maxTotalSizeKb != null && addBytes > 0 && usage.bytes + addBytes > limits.maxTotalSizeKb * 1024) {
    return `the task's working memory would hold ${Math.ceil((usage.bytes + addBytes) / 1024)} KB and its limit is ${limits.maxTotalSizeKb} KB`;
  }
  return null;
}

/** The working limits of a task: its memory_policy, tightened by the guardrail max_working_memory_per_task. */
export function workingLimits(policy: { max_entries?: number | null; max_total_size_kb?: number | null }, guardrailMax: number | null | undefined): WorkingLimits {
  const entries = [policy.max_entries, guardrailMax].filter((v): v is number => typeof v === "number");
  return { maxEntries: entries.length ? Math.min(...entries) : null, maxTotalSizeKb: policy.max_total_size_kb ?? null };
}
