import { appError } from "@intentmesh/contracts";
import { errors, isCoordinatorOrAdmin, type Caller } from "@intentmesh/contracts";

/**
 * Part 5 for agent records. An agent is bound to the principal of the API key that registered
 * it (keys sharing a principal are one identity: that is how a key is rotated).
 */

/**
 * Who may act on an agent record, answered by one switch (the model of immich's checkAccess):
 * `owner` is the principal the agent is bound to. Roles gate the routes; these are the rules
 * that depend on whose agent it is (and listing, which every route admits but only coordinators
 * and admins may do).
 */
export type RegistryPermission = "agent.heartbeat" | "agent.manage" | "agent.read" | "registry.list";

export function allows(caller: Caller, permission: RegistryPermission, owner?: string): boolean {
  const own = owner !== undefined && caller.principal === owner;
  switch (permission) {
    case "agent.heartbeat":
      return own;
    case "agent.manage":
      return own || isCoordinatorOrAdmin(caller);
    case "agent.read":
      return own || isCoordinatorOrAdmin(caller) || caller.roles.includes("operator");
    case "registry.list":
      return isCoordinatorOrAdmin(caller);
  }
}

/** 5.2: heartbeats only from the key the agent registered with. */
export function assertOwner(agentId: string, owner: string, caller: Caller, action: string): void {
  if (allows(caller, "agent.heartbeat", owner)) return;
  throw appError("AGENT_KEY_MISMATCH", `agent ${agentId} is bound to another API key; ${action} only with the key that registered it`, {
    agent_id: agentId,
  });
}

/** 5.3: status changes (drain, deregister) by the agent itself, a coordinator or an administrator. */
export function assertMayManage(agentId: string, owner: string, caller: Caller): void {
  if (allows(caller, "agent.manage", owner)) return;
  throw errors.forbidden(`only agent ${agentId} itself, a coordinator or an admin may change its status`, { agent_id: agentId });
}

/** Reading one record or its event stream: the agent itself, coordinators, admins and operators. */
export function assertMayRead(agentId: string, owner: string, caller: Caller): void {
  if (allows(caller, "agent.read", owner)) return;
  throw errors.forbidden(`agent ${agentId} may be read by itself, coordinators, operators and admins only`, { agent_id: agentId });
}

/** 5.4: listing the registry (and pool capacity) is for coordinators and admins. */
export function assertMayList(caller: Caller): void {
  if (allows(caller, "registry.list")) return;
  throw errors.forbidden("listing the agent registry is restricted to coordinators and admins");
}

/** True when the drain was asked by someone other than the agent: it then reaches the agent as a pending command. */
export const isServerInitiated = (owner: string, caller: Caller) => caller.principal !== owner;
