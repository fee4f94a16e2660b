import { appError } from "@intentmesh/contracts";
import { type Caller } from "@intentmesh/contracts";

/**
 * The acting agent of a request: the body's agent id (or actor) where the spec has one, else the
 * X-Agent-ID header, else the key's principal. A body naming someone other than X-Agent-ID is a
 * contradiction, refused rather than guessed.
 */
export function actingAgent(caller: Caller, fromBody: string | undefined | null, field = "agent_id"): string {
  if (!fromBody) return caller.actor;
  if (caller.agent_id && caller.agent_id !== fromBody) {
    throw appError("AGENT_MISMATCH", `${field} ${fromBody} differs from the X-Agent-ID header ${caller.agent_id}`, {
      [field]: fromBody,
      x_agent_id: caller.agent_id,
    });
  }
  return fromBody;
}

export const isCoordinatorOrAdmin = (caller: Caller) => caller.roles.includes("admin") || caller.roles.includes("coordinator");
