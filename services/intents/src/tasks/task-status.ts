import { appError } from "@intentmesh/contracts";
import { type TaskStatus } from "@intentmesh/contracts";

/**
 * The task state machine, in one place (docs/tasks.md). The spec shows no task transitions
 * (3.1); these follow the clients' TaskStatus and the rules the spec does state:
 *
 * - pending: waits for its dependencies (depends_on); ready once every one is completed or skipped.
 * - ready: may be claimed (by any agent when unassigned, else only by its assigned agent).
 * - claimed -> running: the assigned agent started it.
 * - running / claimed -> ready: its agent died (4.9, reassignment) or a failure is retried (2.8).
 * - blocked: an agent or coordinator blocked it (blocked_reason), or its intent suspended
 *   (blocked_reason intent_suspended, 3.1); it unblocks back to the status it was blocked from.
 * - failed -> ready: a retry asked by a coordinator.
 * - completed, cancelled, skipped: final.
 */
export const TASK_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  pending: ["ready", "blocked", "cancelled", "skipped"],
  ready: ["claimed", "blocked", "cancelled", "skipped"],
  claimed: ["running", "ready", "blocked", "failed", "cancelled"],
  running: ["completed", "failed", "ready", "blocked", "cancelled"],
  blocked: ["pending", "ready", "claimed", "running", "failed", "cancelled"],
  failed: ["ready"],
  completed: [],
  cancelled: [],
  skipped: [],
};

/** Statuses that end a task: its working memory is archived and deleted, task-scoped channels close. */
export const TASK_END_STATUSES: readonly TaskStatus[] = ["completed", "failed", "cancelled", "skipped"];
/** Statuses in which an agent holds the task. */
export const TASK_HELD_STATUSES: readonly TaskStatus[] = ["claimed", "running"];
/** Statuses a dependency must reach for its dependents to become ready. */
export const DEPENDENCY_DONE_STATUSES: readonly TaskStatus[] = ["completed", "skipped"];

export function allowedTaskTargets(from: TaskStatus): readonly TaskStatus[] {
  return TASK_TRANSITIONS[from];
}

export const isTaskTransitionAllowed = (from: TaskStatus, to: TaskStatus) => TASK_TRANSITIONS[from].includes(to);

/** Throws INVALID_TASK_TRANSITION (409) naming from, to and the allowed targets unless the table permits the move. */
export function assertTaskTransition(taskId: string, from: TaskStatus, to: TaskStatus): void {
  if (isTaskTransitionAllowed(from, to)) return;
  const allowed = allowedTaskTargets(from);
  const options = allowed.length ? `it may move to ${allowed.join(", ")}` : "it is final and may not move";
  throw appError("INVALID_TASK_TRANSITION", `task ${taskId} cannot move from ${from} to ${to}; ${options}`, {
    task_id: taskId,
    from,
    to,
    allowed: [...allowed],
  });
}

/** A new task is ready when every dependency is done already, else pending. */
export function initialTaskStatus(dependencyStatuses: readonly TaskStatus[]): TaskStatus {
  return dependencyStatuses.every((s) => DEPENDENCY_DONE_STATUSES.includes(s)) ? "ready" : "pending";
}

/**
 * Where a blocked task goes when it unblocks: back where it was blocked from, except that a
 * task held by an agent that has since lost it (blocked_from rewritten to ready) stays ready.
 */
export function unblockTarget(blockedFrom: TaskStatus | null): TaskStatus {
  return blockedFrom && blockedFrom !== "blocked" && isTaskTransitionAllowed("blocked", blockedFrom) ? blockedFrom : "ready";
}

/** The dependencies of a task that are not done yet (neither completed nor skipped). */
export function unmetDependencies(dependencies: readonly { id: string; status: TaskStatus }[]): { id: string; status: TaskStatus }[] {
  return dependencies.filter((d) => !DEPENDENCY_DONE_STATUSES.includes(d.status));
}

/**
 * RFC 0012 1.2: a task becomes ready (and so may be claimed or started) only when every task it
 * depends on is completed (or skipped). Throws TASK_DEPENDENCIES_PENDING (409) naming the ones
 * that are not, with their statuses.
 */
export function assertDependenciesDone(taskId: string, dependencies: readonly { id: string; status: TaskStatus }[]): void {
  const unmet = unmetDependencies(dependencies);
  if (!unmet.length) return;
  throw appError(
    "TASK_DEPENDENCIES_PENDING",
    `task ${taskId} waits on ${unmet.length} unfinished ${unmet.length === 1 ? "dependency" : "dependencies"} (${unmet.map((d) => `${d.id} is ${d.status}`).join(", ")}); it can be claimed once they are completed`,
    { task_id: taskId, pending_dependencies: unmet.map((d) => ({ task_id: d.id, status: d.status })) },
  );
}
