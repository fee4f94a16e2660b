import { appError } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import {
  HEARTBEAT_DEFAULTS,
  LIVE_AGENT_STATUSES,
  lifecycleReasons,
  type Agent,
  type AgentStatus,
  type Caller,
  type RegisterAgentBody,
} from "@intentmesh/contracts";
import { checkOutboundUrl, isOutboundError } from "@intentmesh/ssrf";
import type { RegistryContext } from "../context";
import { agentSql, lockAgent } from "../db/agent-sql";
import { commitAgentChange, lifecycleEvent, writeAgentEvents } from "../agent-log";
import { nextCheckAt } from "../domain/lifecycle";
import { assertOwner } from "../domain/access";
import { toAgent, type AgentRow } from "../mapping";

/**
 * POST /agents (and /agents/register), rules 1-5 of 4.9: a new id is inserted active; an id that
 * is dead or deregistered is re-activated with its version reset to 1; an id that is active,
 * draining or unhealthy is 409. The binding to the registering key survives re-registration:
 * another key may not take the id over (403).
 */
export async function registerAgent(ctx: RegistryContext, body: RegisterAgentBody, caller: Caller): Promise<Agent> {
  if (body.origin_server_url) assertOriginServerUrl(ctx, body.origin_server_url);
  const now = ctx.clock.now();
  const agentId = body.agent_id ?? `agent-${randomUUID()}`;
  const config = body.heartbeat_config ?? HEARTBEAT_DEFAULTS;
  const fields = {
    roleId: body.role_id ?? null,
    name: body.name ?? null,
    capabilities: [...new Set(body.capabilities)],
    maxConcurrentTasks: body.capacity?.max_concurrent_tasks ?? body.max_concurrent_tasks ?? null,
    currentLoad: 0,
    tasksInProgress: [],
    status: "active",
    endpoint: body.endpoint ?? null,
    intervalSeconds: config.interval_seconds,
    unhealthyAfterSeconds: config.unhealthy_after_seconds,
    deadAfterSeconds: config.dead_after_seconds,
    metadata: body.metadata,
    originServerUrl: body.origin_server_url ?? null,
    registeredAt: now,
    lastHeartbeatAt: now,
    version: 1,
    drainDeadline: null,
    pendingCommands: [],
    nextCheckAt: nextCheckAt(
      { status: "active", lastHeartbeatAt: now, unhealthyAfterSeconds: config.unhealthy_after_seconds, deadAfterSeconds: config.dead_after_seconds, drainDeadline: null },
      now,
      ctx.drainCheckSeconds,
    ),
  } satisfies Partial<AgentRow>;

  const row = await ctx.db.transaction(async (tx) => {
    const inserted = await agentSql.insertIfAbsent(tx, { agentId, ownerPrincipal: caller.principal, ...fields, eventSeq: 1, updatedAt: now });
    if (inserted) {
      await writeAgentEvents(tx, agentId, 1, [lifecycleEvent(agentId, { from: "registering", to: "active", reason: lifecycleReasons.registered }, 1, now, caller.actor)], now);
      return inserted;
    }
    const existing = await lockAgent(tx, agentId);
    if (!existing) throw new Error(`agent ${agentId} conflicted on insert but cannot be read`);
    // Rule 3 first: a live id is 409 whoever asks; only a dead or deregistered one may be taken
    // up again, and only by the key it is bound to.
    const previous = existing.status as AgentStatus;
    if (LIVE_AGENT_STATUSES.includes(previous)) {
      throw appError("AGENT_ALREADY_REGISTERED", `agent ${agentId} is already registered and ${previous}; only a dead or deregistered agent may register again`,
        { agent_id: agentId, status: previous },
      );
    }
    assertOwner(agentId, existing.ownerPrincipal, caller, "re-register it");
    const event = lifecycleEvent(agentId, { from: previous, to: "active", reason: lifecycleReasons.reRegistered }, 1, now, caller.actor);
    return (await commitAgentChange(tx, agentId, fields, [event], now)).row;
  });
  ctx.published();
  return toAgent(row);
}

/**
 * origin_server_url makes the agent a federated one: callbacks and dispatches go there, so it
 * passes the SSRF guard's URL checks (scheme, userinfo, internal names, address literals in every
 * spelling) at registration: 400 SSRF_BLOCKED naming the refused class (docs/federation.md).
 */
function assertOriginServerUrl(ctx: RegistryContext, url: string): void {
  try {
    checkOutboundUrl(url, ctx.outboundPolicy);
  } catch (error) {
    if (!isOutboundError(error)) throw error;
    throw appError("SSRF_BLOCKED", `origin_server_url: ${error.message}`, { field: "origin_server_url", refused_class: error.refusedClass });
  }
}
