import { appError } from "@intentmesh/contracts";
import { isCoordinatorOrAdmin, type Caller, type TaskStatus } from "@intentmesh/contracts";
import { unblockTarget } from "./task-status";
import { allows } from "../kernel/access";

/**
 * Who may do what to a task (docs/tasks.md): coordinators and admins create, assign, cancel,
 * skip and retry, and may move any task; the assigned agent moves its own task; an agent claims
 * an unassigned ready task for itself; everyone else gets 403. Creating and cancelling are
 * gated by their routes' roles (COORDINATOR_ROLES), the only role gate; these are the rules
 * that depend on the task.
 */

/** The parts of a task its access rules read. */
export interface TaskHolding {
  id: string;
  assignedAgent: string | null;
  blockedFrom: string | null;
}

const forbidden = (message: string, details: Record<string, unknown>) => appError("FORBIDDEN", message, details);

/** The assigned agent moves its own task; coordinators and admins move any. */
export function assertMayMoveTask(task: TaskHolding, caller: Caller, what: string): void {
  if (allows(caller, { permission: "task.move", assignedAgent: task.assignedAgent })) return;
  const holder = task.assignedAgent ? `it is assigned to ${task.assignedAgent}` : "it is assigned to no agent";
  throw forbidden(`${caller.actor} may not ${what} task ${task.id}: ${holder}; only that agent, coordinators and admins may`, { task_id: task.id });
}

/**
 * Claiming a ready task for `agent`: a coordinator or admin for anyone; an agent (key role
 * `agent`) for itself only, and only a task that is unassigned or assigned to it.
 */
export function assertMayClaimTask(task: TaskHolding, caller: Caller, agent: string): void {
  if (allows(caller, { permission: "task.claim", assignedAgent: task.assignedAgent, agent })) return;
  if (agent !== caller.actor) throw forbidden(`${caller.actor} may claim tasks for itself only, not for ${agent}`, { task_id: task.id });
  if (task.assignedAgent !== null && task.assignedAgent !== agent) {
    throw forbidden(`task ${task.id} is assigned to ${task.assignedAgent}; only that agent may claim it`, { task_id: task.id });
  }
  throw forbidden("only agents, coordinators and admins claim tasks", { task_id: task.id });
}

/** The statuses an assigned agent may PATCH its own task to; the others are for coordinators and admins. */
export const AGENT_PATCH_TARGETS: readonly TaskStatus[] = ["claimed", "running", "completed", "failed", "blocked"];

/**
 * PATCH /tasks/{tid} by someone who is not a coordinator or admin: claiming (ready -> claimed,
 * for itself), or the assigned agent moving its task to one of AGENT_PATCH_TARGETS (or back to
 * where it was blocked from) and changing its output, error or blocked_reason. Assigning to
 * someone else is for coordinators and admins.
 */
export function assertMayPatchTask(
  task: TaskHolding & { status: TaskStatus },
  caller: Caller,
  change: { to: TaskStatus | undefined; assignedAgent: string | null | undefined },
): void {
  if (isCoordinatorOrAdmin(caller)) return;
  const claiming = change.to === "claimed" && task.status === "ready";
  if (claiming) assertMayClaimTask(task, caller, change.assignedAgent ?? task.assignedAgent ?? caller.actor);
  else assertMayMoveTask(task, caller, "change");
  const reassigning = change.assignedAgent !== undefined && change.assignedAgent !== task.assignedAgent;
  if (reassigning && !(claiming && change.assignedAgent === caller.actor) && !allows(caller, { permission: "task.assign" })) throw forbidden("only coordinators and admins assign tasks", { task_id: task.id });
  const to = change.to;
  if (to && !AGENT_PATCH_TARGETS.includes(to) && !(task.status === "blocked" && to === unblockTarget(task.blockedFrom as TaskStatus | null))) {
    throw forbidden(`only coordinators and admins move a task to ${to}`, { task_id: task.id });
  }
}
