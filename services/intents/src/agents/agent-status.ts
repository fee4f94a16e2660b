import { sql } from "drizzle-orm";
import { appError, type AppError } from "@intentmesh/contracts";
import { rowsOf, type Database, type Tx } from "@intentmesh/db";

// What the intents service knows of an agent's life (intents.agent_status, kept by
// agent-lifecycle-projection.ts) and what it means for taking new work.

/**
 * Spec 3.4 on this side: a draining agent keeps its leases but takes no new work (409
 * AGENT_DRAINING); a dead or deregistered one must register again first (409 AGENT_NOT_ACTIVE);
 * unhealthy agents and agents this service has not heard of may. Returns the refusal, or null.
 * With `lock`, the agent's status row is held (see knownAgentStatus).
 */
export async function agentWorkRefusal(db: Database | Tx, agentId: string, lock = false): Promise<AppError | null> {
  return refusalOfStatus(agentId, await knownAgentStatus(db, agentId, lock));
}

/** The refusal agentWorkRefusal answers for an agent whose known status is `status` (undefined: never heard of). */
export function refusalOfStatus(agentId: string, status: string | undefined): AppError | null {
  if (status === "draining") {
    return appError("AGENT_DRAINING", `agent ${agentId} is draining: it keeps the leases it holds but takes no new ones`, { agent_id: agentId, status });
  }
  if (status === "dead" || status === "deregistered") {
    return appError("AGENT_NOT_ACTIVE", `agent ${agentId} is ${status}; register it again before taking leases`, { agent_id: agentId, status });
  }
  return null;
}

/**
 * The status the intents service last learned for an agent; undefined when it never heard of it.
 * With `lock`, the row is held (shared) until the transaction ends, so a death being projected
 * waits for a lease being granted, and then expires it too.
 */
export async function knownAgentStatus(db: Database | Tx, agentId: string, lock = false): Promise<string | undefined> {
  const rows = rowsOf<{ status: string }>(
    await db.execute(sql`select status from intents.agent_status where agent_id = ${agentId} ${lock ? sql`for share` : sql``}`),
  );
  return rows[0]?.status;
}
