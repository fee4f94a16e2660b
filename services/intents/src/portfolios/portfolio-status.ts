import { INTENT_STATUSES, type IntentStatus, type StatusCounts } from "@intentmesh/contracts";

/**
 * The aggregate status of a portfolio, from how many members are in each status. The first
 * rule that matches decides:
 *
 *   1. any member suspended_awaiting_input  -> suspended_awaiting_input (spec 3.1)
 *   2. any member blocked                   -> blocked
 *   3. any member active                    -> active
 *   4. no members, or only drafts           -> draft
 *   5. drafts beside finished members       -> active (the work has begun and is not done)
 *   6. every member finished, some completed -> completed
 *   7. every member abandoned                -> abandoned
 *
 * So a portfolio is waiting on a human as soon as one member is, and is done only when every
 * member is done.
 */
export function aggregateStatus(counts: Partial<Record<IntentStatus, number>>): IntentStatus {
  const n = (status: IntentStatus) => counts[status] ?? 0;
  if (n("suspended_awaiting_input") > 0) return "suspended_awaiting_input";
  if (n("blocked") > 0) return "blocked";
  if (n("active") > 0) return "active";
  const finished = n("completed") + n("abandoned");
  if (n("draft") > 0) return finished > 0 ? "active" : "draft";
  if (n("completed") > 0) return "completed";
  if (n("abandoned") > 0) return "abandoned";
  return "draft";
}

/** Every status with its count, zero where no member is in it. */
export function fullCounts(counts: Partial<Record<string, number>>): StatusCounts {
  return Object.fromEntries(INTENT_STATUSES.map((s) => [s, Number(counts[s] ?? 0)])) as StatusCounts;
}

/** The member events one member status change announces besides portfolio.member_status_changed. */
export function suspensionEdge(from: IntentStatus, to: IntentStatus): "suspended" | "resumed" | null {
  if (from === to) return null;
  if (to === "suspended_awaiting_input") return "suspended";
  if (from === "suspended_awaiting_input") return "resumed";
  return null;
}
