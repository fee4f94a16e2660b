import { appError, intentEvents } from "@intentmesh/contracts";
import { and, asc, eq } from "drizzle-orm";
import { enforceGovernance } from "../governance/handlers";
import type { GovernancePolicy } from "@intentmesh/contracts";
import { type Assignment, type Caller } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import type { IntentsContext } from "../kernel/context";
import { assignments } from "../db/schema";
import { appendToLog, assertIntentExists, lockIntent } from "../kernel/event-log";
import { toAssignment } from "../kernel/mapping";

/**
 * POST /intents/{id}/agents: assigns an agent. Assigning an agent already assigned with the same
 * role changes nothing and appends no event; a new role is an update.
 */
export async function assignAgent(
  ctx: IntentsContext,
  intentId: string,
  ifMatch: number | null,
  body: { agent_id: string; role?: string | null | undefined },
  caller: Caller,
): Promise<Assignment> {
  const now = ctx.clock.now();
  const role = body.role ?? null;
  let changed = false;
  const assignment = await ctx.db.transaction(async (tx) => {
    // Locks the intent (and checks If-Match) before touching its assignments; the policy is read under that lock.
    const intent = await lockIntent(tx, intentId, ifMatch);
    await enforceGovernance(ctx, intentId, intent.governancePolicy as GovernancePolicy | null, { kind: "assignment", agent_id: body.agent_id }, caller, tx);
    const [existing] = await tx.select().from(assignments).where(and(eq(assignments.intentId, intentId), eq(assignments.agentId, body.agent_id)));
    if (existing && existing.role === role) return toAssignment(existing);
    const [row] = await tx
      .insert(assignments)
      .values({ intentId, agentId: body.agent_id, role, assignedBy: caller.actor, assignedAt: now })
      .onConflictDoUpdate({ target: [assignments.intentId, assignments.agentId], set: { role, assignedBy: caller.actor, assignedAt: now } })
      .returning();
    await appendToLog(tx, intentId, [newEvent(intentEvents.agentAssigned, caller.actor, { agent_id: body.agent_id, role })], now);
    changed = true;
    return toAssignment(row!);
  });
  if (changed) ctx.published();
  return assignment;
}

export async function listAssignments(ctx: IntentsContext, intentId: string): Promise<{ agents: Assignment[] }> {
  const rows = await ctx.db.select().from(assignments).where(eq(assignments.intentId, intentId)).orderBy(asc(assignments.assignedAt));
  if (!rows.length) await assertIntentExists(ctx.db, intentId);
  return { agents: rows.map(toAssignment) };
}

/** DELETE /intents/{id}/agents/{agent_id}. */
export async function unassignAgent(ctx: IntentsContext, intentId: string, ifMatch: number | null, agentId: string, caller: Caller): Promise<Assignment> {
  const now = ctx.clock.now();
  const removed = await ctx.db.transaction(async (tx) => {
    const intent = await lockIntent(tx, intentId, ifMatch);
    await enforceGovernance(ctx, intentId, intent.governancePolicy as GovernancePolicy | null, { kind: "unassignment" }, caller, tx);
    const [row] = await tx
      .delete(assignments)
      .where(and(eq(assignments.intentId, intentId), eq(assignments.agentId, agentId)))
      .returning();
    if (!row) throw appError("ASSIGNMENT_NOT_FOUND", `agent ${agentId} is not assigned to intent ${intentId}`, { agent_id: agentId });
    await appendToLog(tx, intentId, [newEvent(intentEvents.agentUnassigned, caller.actor, { agent_id: agentId })], now);
    return toAssignment(row);
  });
  ctx.published();
  return removed;
}
