import { appError } from "@intentmesh/contracts";
import { eq } from "drizzle-orm";
import {
  DEFAULT_DRAIN_TIMEOUT_SECONDS,
  errors,
  isoTimestamp,
  lifecycleReasons,
  taskCommands,
  type AgentStatus,
  type Caller,
  type HeartbeatBody,
  type HeartbeatResponse,
  type PendingCommand,
} from "@intentmesh/contracts";
import type { RegistryContext } from "../context";
import { agents } from "../db/schema";
import { commitAgentChange, lifecycleEvents } from "../agent-log";
import { nextCheckAt, type Transition } from "../domain/lifecycle";
import { assertOwner } from "../domain/access";

/**
 * The common heartbeat, one statement: an active or draining agent, from its own key, that does
 * not ask to start draining. It records receipt time (the only time transitions follow), load and
 * tasks, and takes the pending commands (returning them as they were and leaving the list empty).
 * Anything else takes the transactional path.
 *
 * It writes no indexed column (next_check_at stays where it was: the sweeper, finding the agent
 * not silent after all, moves it on), so PostgreSQL updates the row in place (HOT) without
 * touching an index: heartbeats are the registry's most frequent write.
 */
const FAST_HEARTBEAT = `
update registry.agents a set
  last_heartbeat_at = $3,
  current_load = coalesce($4, a.current_load),
  tasks_in_progress = coalesce($5::text[], a.tasks_in_progress),
  pending_commands = '[]'::jsonb
from (select agent_id, pending_commands from registry.agents where agent_id = $1 for update) old
where a.agent_id = old.agent_id and a.owner_principal = $2
  and (a.status = 'active' or a.status = 'draining') and not (a.status = 'active' and $6 = 'draining')
returning a.status, a.interval_seconds, old.pending_commands`;

interface FastRow {
  status: AgentStatus;
  interval_seconds: number;
  pending_commands: PendingCommand[];
}

/** POST /agents/{id}/heartbeat (4.9): 200 with acknowledged, server_timestamp, agent_status, pending_commands. */
export async function heartbeat(ctx: RegistryContext, agentId: string, body: HeartbeatBody, caller: Caller): Promise<HeartbeatResponse> {
  const now = ctx.clock.now();
  const [fast] = await ctx.query<FastRow>("registry_heartbeat", FAST_HEARTBEAT, [
    agentId,
    caller.principal,
    now,
    body.current_load ?? null,
    body.tasks_in_progress ?? null,
    body.status,
  ]);
  const result = fast ?? (await slowHeartbeat(ctx, agentId, body, caller, now));
  warnOnDrift(ctx, agentId, body.client_timestamp, now, result.interval_seconds);
  const unknownTasks = body.tasks_in_progress?.length ? await checkTasksInProgress(ctx, agentId, body.tasks_in_progress, caller) : undefined;
  return {
    acknowledged: true,
    server_timestamp: isoTimestamp(now),
    agent_status: result.status,
    pending_commands: result.pending_commands,
    ...(unknownTasks ? { unknown_tasks: unknownTasks } : {}),
  };
}

/**
 * Spec 4.9: tasks_in_progress checked against the tasks the agent holds. Tasks belong to the
 * intents service, so the registry asks it (im.intents.tasks.held) rather than reading its
 * tables. Unknown ids are reported in the response and logged; never fatal: when the intents
 * service does not answer, the heartbeat is acknowledged without the check.
 */
async function checkTasksInProgress(ctx: RegistryContext, agentId: string, taskIds: string[], caller: Caller): Promise<string[] | undefined> {
  try {
    const { unknown } = await ctx.client.request(taskCommands.held, caller, { agent_id: agentId, task_ids: taskIds });
    if (unknown.length) ctx.logger.warn({ agent_id: agentId, unknown_tasks: unknown.slice(0, 20) }, "heartbeat lists tasks the agent does not hold");
    return unknown;
  } catch (error) {
    ctx.logger.warn({ agent_id: agentId, err: error }, "could not check the heartbeat's tasks_in_progress");
    return undefined;
  }
}

/**
 * Every other heartbeat, under the row lock: unknown (404), another key's (403), dead or
 * deregistered (410: re-register), unhealthy (back to active, heartbeat_resumed), or an active
 * agent announcing it drains (active -> draining, drain_initiated).
 */
async function slowHeartbeat(ctx: RegistryContext, agentId: string, body: HeartbeatBody, caller: Caller, now: Date): Promise<FastRow> {
  const result = await ctx.db.transaction(async (tx) => {
    const [agent] = await tx.select().from(agents).where(eq(agents.agentId, agentId)).for("update");
    if (!agent) throw errors.notFound("agent", agentId);
    assertOwner(agentId, agent.ownerPrincipal, caller, "send heartbeats");
    const status = agent.status as AgentStatus;
    if (status === "dead" || status === "deregistered") {
      throw appError("AGENT_GONE", `agent ${agentId} is ${status}; register it again before sending heartbeats`, { agent_id: agentId, status });
    }
    const transitions: Transition[] = [];
    let current = status;
    if (current === "unhealthy") {
      transitions.push({ from: "unhealthy", to: "active", reason: lifecycleReasons.heartbeatResumed });
      current = "active";
    }
    let drainDeadline = agent.drainDeadline;
    if (current === "active" && body.status === "draining") {
      transitions.push({ from: "active", to: "draining", reason: lifecycleReasons.drainInitiated });
      current = "draining";
      drainDeadline = new Date(now.getTime() + DEFAULT_DRAIN_TIMEOUT_SECONDS * 1000);
    }
    const timers = { status: current, lastHeartbeatAt: now, unhealthyAfterSeconds: agent.unhealthyAfterSeconds, deadAfterSeconds: agent.deadAfterSeconds, drainDeadline };
    const { row } = await commitAgentChange(
      tx,
      agentId,
      {
        status: current,
        lastHeartbeatAt: now,
        currentLoad: body.current_load ?? agent.currentLoad,
        tasksInProgress: body.tasks_in_progress ?? agent.tasksInProgress,
        drainDeadline,
        pendingCommands: [],
        nextCheckAt: nextCheckAt(timers, now, ctx.drainCheckSeconds),
      },
      lifecycleEvents(agentId, transitions, agent.version, now, agentId),
      now,
    );
    return { status: row.status as AgentStatus, interval_seconds: row.intervalSeconds, pending_commands: agent.pendingCommands, changed: transitions.length > 0 };
  });
  if (result.changed) ctx.published();
  return result;
}

/** Rule 3 of the heartbeat rules: a client clock further than 2 x interval from the server's is logged. */
function warnOnDrift(ctx: RegistryContext, agentId: string, clientTimestamp: string, now: Date, intervalSeconds: number): void {
  const driftSeconds = (now.getTime() - Date.parse(clientTimestamp)) / 1000;
  if (Math.abs(driftSeconds) > 2 * intervalSeconds) {
    ctx.logger.warn({ agent_id: agentId, drift_seconds: Math.round(driftSeconds * 10) / 10, interval_seconds: intervalSeconds }, "heartbeat clock drift beyond 2 x interval");
  }
}
