import { isCoordinatorOrAdmin, type Caller } from "@intentmesh/contracts";

/**
 * Ownership in the intents service: who may act on whose lease, attachment or task, answered by
 * one switch (the model of immich's checkAccess). Roles are not asked here: each route's roles
 * are the only role gate, enforced by the gateway before the command is sent. The rules that
 * raise an error call this and name the refusal in their own words (NOT_LEASE_HOLDER, FORBIDDEN).
 */
export type IntentsPermission =
  /** Renewing a lease: its holder only (a coordinator included, nobody renews for another agent). */
  | { permission: "lease.renew"; holder: string }
  /** Releasing a lease: its holder, a coordinator or an admin. */
  | { permission: "lease.release"; holder: string }
  /** Deleting an attachment: its uploader, a coordinator or an admin. */
  | { permission: "attachment.delete"; uploadedBy: string }
  /** Moving a task (start, complete, fail, patch its status): its assigned agent, a coordinator or an admin. */
  | { permission: "task.move"; assignedAgent: string | null }
  /** Claiming a task for `agent`: a coordinator or an admin for anyone; an agent key for itself, when the task is unassigned or already its own. */
  | { permission: "task.claim"; assignedAgent: string | null; agent: string }
  /** Assigning a task to someone else than it is assigned to: coordinators and admins. */
  | { permission: "task.assign" };

export function allows(caller: Caller, request: IntentsPermission): boolean {
  switch (request.permission) {
    case "lease.renew":
      return request.holder === caller.actor;
    case "lease.release":
      return request.holder === caller.actor || isCoordinatorOrAdmin(caller);
    case "attachment.delete":
      return request.uploadedBy === caller.actor || isCoordinatorOrAdmin(caller);
    case "task.move":
      return isCoordinatorOrAdmin(caller) || (request.assignedAgent !== null && request.assignedAgent === caller.actor);
    case "task.claim":
      if (isCoordinatorOrAdmin(caller)) return true;
      return request.agent === caller.actor && (request.assignedAgent === null || request.assignedAgent === request.agent) && caller.roles.includes("agent");
    case "task.assign":
      return isCoordinatorOrAdmin(caller);
  }
}
