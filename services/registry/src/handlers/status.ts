import { eq } from "drizzle-orm";
import {
  coordinatorCommands,
  isCoordinatorOrAdmin,
  DEFAULT_DRAIN_TIMEOUT_SECONDS,
  errors,
  isoTimestamp,
  lifecycleReasons,
  type Agent,
  type AgentStatus,
  type AgentStatusBody,
  type Caller,
  type PendingCommand,
  agentEvents,
} from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { RegistryContext } from "../context";
import { agents } from "../db/schema";
import { commitAgentChange, lifecycleEvent, type NewAgentEvent } from "../agent-log";
import { assertRequestedTransition, nextCheckAt } from "../domain/lifecycle";
import { assertMayManage, isServerInitiated } from "../domain/access";
import { toAgent, type AgentRow } from "../mapping";

/**
 * PATCH /agents/{id}/status (and PUT): a drain, by the agent itself, a coordinator or an admin.
 * A drain someone else asks for is also queued as a pending `drain` command, which the agent
 * receives with its next heartbeat. If-Match is required (spec 4.9 lists it, like every other
 * versioned write): 428 without it, 409 when stale.
 */
export async function changeAgentStatus(ctx: RegistryContext, agentId: string, ifMatch: number | null, body: AgentStatusBody, caller: Caller): Promise<Agent> {
  if (ifMatch === null) throw errors.preconditionRequired("agent status");
  if (body.status === "deregistered") return deregisterAgent(ctx, agentId, ifMatch, caller);
  const now = ctx.clock.now();
  const coordinated = await coordinatesAgent(ctx, agentId, caller);
  const row = await ctx.db.transaction(async (tx) => {
    const agent = await lockAgent(tx, agentId, ifMatch, caller, coordinated);
    const from = agent.status as AgentStatus;
    assertRequestedTransition(agentId, from, body.status);
    const timeout = body.drain_timeout_seconds ?? DEFAULT_DRAIN_TIMEOUT_SECONDS;
    const drainDeadline = new Date(now.getTime() + timeout * 1000);
    const reason = body.reason ?? "drain requested";
    const events: NewAgentEvent[] = [lifecycleEvent(agentId, { from, to: "draining", reason: lifecycleReasons.drainInitiated }, agent.version + 1, now, caller.actor)];
    const pendingCommands = [...agent.pendingCommands];
    if (isServerInitiated(agent.ownerPrincipal, caller)) {
      const command: PendingCommand = { command: "drain", reason, drain_timeout_seconds: timeout, issued_by: caller.actor, issued_at: isoTimestamp(now) };
      pendingCommands.push(command);
      events.push(newEvent(agentEvents.command, caller.actor, { agent_id: agentId, ...command }));
    }
    const timers = { status: "draining" as const, lastHeartbeatAt: agent.lastHeartbeatAt, unhealthyAfterSeconds: agent.unhealthyAfterSeconds, deadAfterSeconds: agent.deadAfterSeconds, drainDeadline };
    return (
      await commitAgentChange(
        tx,
        agentId,
        { status: "draining", drainDeadline, pendingCommands, nextCheckAt: nextCheckAt(timers, now, ctx.drainCheckSeconds) },
        events,
        now,
      )
    ).row;
  });
  ctx.published();
  return toAgent(row);
}

/**
 * DELETE /agents/{id}: deregistered at once, without a drain, from any status. Deleting an agent
 * that is already deregistered changes nothing and answers its record.
 */
export async function deregisterAgent(ctx: RegistryContext, agentId: string, ifMatch: number | null, caller: Caller): Promise<Agent> {
  const now = ctx.clock.now();
  let changed = false;
  const coordinated = await coordinatesAgent(ctx, agentId, caller);
  const row = await ctx.db.transaction(async (tx) => {
    const agent = await lockAgent(tx, agentId, ifMatch, caller, coordinated);
    const from = agent.status as AgentStatus;
    if (from === "deregistered") return agent;
    changed = true;
    const event = lifecycleEvent(agentId, { from, to: "deregistered", reason: lifecycleReasons.deregistered }, agent.version + 1, now, caller.actor);
    return (await commitAgentChange(tx, agentId, { status: "deregistered", drainDeadline: null, pendingCommands: [], nextCheckAt: null }, [event], now)).row;
  });
  if (changed) ctx.published();
  return toAgent(row);
}

/**
 * Spec 5.3 "its coordinator": besides the coordinator role, the agent holding the live coordinator
 * lease (RFC-0013) of an intent the agent is assigned to. Asked of the intents service before the
 * transaction, and only for callers the role rules do not already admit as coordinators.
 */
async function coordinatesAgent(ctx: RegistryContext, agentId: string, caller: Caller): Promise<boolean> {
  if (isCoordinatorOrAdmin(caller) || caller.actor === agentId) return false;
  const { intent_ids } = await ctx.client.request(coordinatorCommands.coordinates, caller, { coordinator: caller.actor, agent_id: agentId });
  return intent_ids.length > 0;
}

/** Locks the agent row: 404 when unknown, 403 when the caller may not manage it, 409 on a stale If-Match. */
async function lockAgent(tx: Tx, agentId: string, ifMatch: number | null, caller: Caller, coordinated: boolean): Promise<AgentRow> {
  const [agent] = await tx.select().from(agents).where(eq(agents.agentId, agentId)).for("update");
  if (!agent) throw errors.notFound("agent", agentId);
  if (!coordinated) assertMayManage(agentId, agent.ownerPrincipal, caller);
  if (ifMatch !== null && ifMatch !== agent.version) throw errors.versionMismatch("agent", agentId, agent.version, ifMatch);
  return agent;
}
