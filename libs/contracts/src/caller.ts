import { appError } from "./errors";
import type { Caller, Role } from "./common";

/**
 * Who is calling, defined once. The gateway builds the Caller from the API key and X-Agent-ID
 * (`actor` is X-Agent-ID when sent, else the key's principal; `agent_id` is X-Agent-ID or null)
 * and enforces each route's roles (libs/contracts/src/api, `access.roles`): a handler never
 * re-checks a role its route already requires. What a service decides from the caller beyond
 * that (ownership: the holder of a lease, the uploader of an attachment, the agent of a task)
 * is its own permission function, one per service.
 */

export const ALL_ROLES: readonly Role[] = ["admin", "coordinator", "operator", "agent"];
/** People who answer, decide and steer: never a bare agent key. */
export const HUMAN_ROLES: readonly Role[] = ["admin", "coordinator", "operator"];
/** Those who steer other agents' work: they may act for any agent and move any task. */
export const COORDINATOR_ROLES: readonly Role[] = ["admin", "coordinator"];

const hasAny = (caller: Caller, roles: readonly Role[]) => caller.roles.some((role) => roles.includes(role));

export const isAdmin = (caller: Caller): boolean => caller.roles.includes("admin");
/** The coordinator role itself (memory's task coordinators); most rules want isCoordinatorOrAdmin. */
export const isCoordinator = (caller: Caller): boolean => caller.roles.includes("coordinator");
/** Coordinators and admins: they act for any agent, move any task, release any lease. */
export const isCoordinatorOrAdmin = (caller: Caller): boolean => hasAny(caller, COORDINATOR_ROLES);
/** Operators, coordinators and admins. */
export const isHuman = (caller: Caller): boolean => hasAny(caller, HUMAN_ROLES);

/**
 * The agent a request acts as, or null when a person acts as themself: X-Agent-ID, else the
 * principal of an agent key. An operator, coordinator or admin key without X-Agent-ID is a
 * person (channels show it every message; a governance policy's agent rules do not bind it).
 */
export const agentOf = (caller: Caller): string | null => caller.agent_id ?? (caller.roles.includes("agent") ? caller.actor : null);

/**
 * The acting agent of a request whose body may name one (agent_id, or actor): the body's name
 * where the spec has one, else the caller's actor. A body naming someone other than X-Agent-ID
 * is a contradiction, refused rather than guessed (the gateway has already bound both to the key).
 */
export function actingAgent(caller: Caller, fromBody?: string | null, field = "agent_id"): string {
  if (!fromBody) return caller.actor;
  if (caller.agent_id && caller.agent_id !== fromBody) {
    throw appError("AGENT_MISMATCH", `${field} ${fromBody} differs from the X-Agent-ID header ${caller.agent_id}`, {
      [field]: fromBody,
      x_agent_id: caller.agent_id,
    });
  }
  return fromBody;
}
