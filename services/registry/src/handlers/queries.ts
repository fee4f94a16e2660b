import { and, asc, desc, eq, gt, sql, type SQL } from "drizzle-orm";
import {
  errors,
  fitPage,
  Uuid,
  isoTimestamp,
  type Agent,
  type AgentBinding,
  type AgentHealth,
  type AgentStatus,
  type AgentEvent,
  type AgentEventPage,
  type AgentSummary,
  type Caller,
  type ListAgentsQuery,
  type z,
  type ListAgentEventsQuery,
  sequenceCursor,
} from "@intentmesh/contracts";
import type { RegistryContext } from "../context";
import { agentEvents, agents } from "../db/schema";
import { assertMayList, assertMayRead } from "../domain/access";
import { healthOf } from "../domain/lifecycle";
import { toAgent, toSummary } from "../mapping";

async function findAgent(ctx: RegistryContext, agentId: string) {
  const [row] = await ctx.db.select().from(agents).where(eq(agents.agentId, agentId));
  if (!row) throw errors.notFound("agent", agentId);
  return row;
}

/** GET /agents/{id} (and /agents/{id}/record): the full record, to the agent itself, coordinators, operators and admins. */
export async function getAgent(ctx: RegistryContext, agentId: string, caller: Caller): Promise<Agent> {
  const row = await findAgent(ctx, agentId);
  assertMayRead(agentId, row.ownerPrincipal, caller);
  return toAgent(row);
}

/** GET /agents/{id}/health: readable by whoever may read the record; computed on the server clock now (lifecycle.ts healthOf). */
export async function getAgentHealth(ctx: RegistryContext, agentId: string, caller: Caller): Promise<AgentHealth> {
  const row = await findAgent(ctx, agentId);
  assertMayRead(agentId, row.ownerPrincipal, caller);
  const now = ctx.clock.now();
  const health = healthOf(
    { status: row.status as AgentStatus, lastHeartbeatAt: row.lastHeartbeatAt, unhealthyAfterSeconds: row.unhealthyAfterSeconds, deadAfterSeconds: row.deadAfterSeconds, drainDeadline: row.drainDeadline },
    now,
  );
  const agent = toAgent(row);
  return {
    agent_id: agent.agent_id,
    status: health.status,
    recorded_status: agent.status,
    healthy: health.healthy,
    last_heartbeat_at: agent.last_heartbeat_at,
    seconds_since_heartbeat: health.secondsSinceHeartbeat,
    heartbeat_config: agent.heartbeat_config,
    unhealthy_at: health.unhealthyAt ? isoTimestamp(health.unhealthyAt) : null,
    dead_at: health.deadAt ? isoTimestamp(health.deadAt) : null,
    capacity: { ...agent.capacity, available: agent.capacity.max_concurrent_tasks === null ? null : agent.capacity.max_concurrent_tasks - agent.capacity.current_load },
    tasks_in_progress: agent.tasks_in_progress.length,
    drain_deadline: agent.drain_deadline,
    checked_at: isoTimestamp(now),
  };
}

/**
 * GET /agents (4.9): summary records matching every filter given (capabilities: ANY of them;
 * status: default active; role_id; min_available_capacity: max_concurrent_tasks - current_load
 * at least that, agents without a declared maximum never qualify), and the total of matches.
 */
export async function listAgents(ctx: RegistryContext, query: ListAgentsQuery, caller: Caller): Promise<{ agents: AgentSummary[]; total: number }> {
  assertMayList(caller);
  const filters: SQL[] = [sql`${agents.status} in (${sql.join((query.status ?? ["active"]).map((s) => sql`${s}`), sql`, `)})`];
  if (query.capabilities?.length) filters.push(sql`${agents.capabilities} && ${`{${query.capabilities.map((c) => JSON.stringify(c)).join(",")}}`}::text[]`);
  if (query.role_id) filters.push(eq(agents.roleId, query.role_id));
  if (query.min_available_capacity !== undefined) {
    filters.push(sql`${agents.maxConcurrentTasks} - ${agents.currentLoad} >= ${query.min_available_capacity}`);
  }
  const where = and(...filters);
  const [rows, [count]] = await Promise.all([
    ctx.db.select().from(agents).where(where).orderBy(asc(agents.agentId)).limit(query.limit).offset(query.offset),
    ctx.db.select({ total: sql<number>`count(*)::int` }).from(agents).where(where),
  ]);
  // Summaries carry capabilities (up to 100 of 100 characters): a page also stops at the byte limit.
  return { agents: fitPage(rows.map(toSummary)).items, total: count?.total ?? 0 };
}

/**
 * GET /pools/{role_id}: the pool of agents sharing a role (4.9 rule 5): capacity is the sum of
 * members' max_concurrent_tasks minus the sum of their current_load. Members are the agents
 * that can take work: active ones (draining, unhealthy, dead and deregistered ones do not count).
 */
export async function poolCapacity(ctx: RegistryContext, roleId: string, caller: Caller) {
  assertMayList(caller);
  const [row] = await ctx.db
    .select({
      members: sql<number>`count(*)::int`,
      max: sql<number>`coalesce(sum(${agents.maxConcurrentTasks}), 0)::int`,
      load: sql<number>`coalesce(sum(${agents.currentLoad}), 0)::int`,
    })
    .from(agents)
    .where(and(eq(agents.roleId, roleId), eq(agents.status, "active")));
  const members = row?.members ?? 0;
  const max = row?.max ?? 0;
  const load = row?.load ?? 0;
  return { role_id: roleId, members, max_concurrent_tasks: max, current_load: load, available_capacity: max - load };
}

/** The principal an agent is bound to; the gateway asks before letting a key act as that agent. */
export async function agentBinding(ctx: RegistryContext, agentId: string): Promise<AgentBinding> {
  const [row] = await ctx.query<{ owner_principal: string }>("registry_binding", "select owner_principal from registry.agents where agent_id = $1", [agentId]);
  if (!row) throw errors.notFound("agent", agentId);
  return { agent_id: agentId, principal: row.owner_principal };
}

/** GET /agents/{id}/events: the agent's own log, oldest first, paged by sequence (or event id). */
export async function listAgentEvents(ctx: RegistryContext, agentId: string, query: z.infer<typeof ListAgentEventsQuery>, caller: Caller): Promise<AgentEventPage> {
  const row = await findAgent(ctx, agentId);
  assertMayRead(agentId, row.ownerPrincipal, caller);
  const after = await resolveCursor(ctx, agentId, query.after);
  const tail = query.tail === "true";
  const rows = await ctx.db
    .select()
    .from(agentEvents)
    .where(and(eq(agentEvents.agentId, agentId), gt(agentEvents.sequence, after)))
    .orderBy(tail ? desc(agentEvents.sequence) : asc(agentEvents.sequence))
    .limit(query.limit + 1);
  const { items: page, cut } = fitPage(rows.slice(0, query.limit), (row) => Buffer.byteLength(row.wire));
  if (tail) page.reverse();
  const last = page[page.length - 1];
  return {
    events: page.map((e) => JSON.parse(e.wire) as AgentEvent),
    next_cursor: String(last ? last.sequence : after),
    has_more: !tail && (cut || rows.length > query.limit),
  };
}

async function resolveCursor(ctx: RegistryContext, agentId: string, after: string | undefined): Promise<number> {
  if (after === undefined || after === "") return 0;
  const sequence = sequenceCursor(after);
  if (sequence !== undefined) return sequence;
  if (!Uuid.safeParse(after).success) throw errors.validation("after must be a sequence number or an event id");
  const [row] = await ctx.db
    .select({ sequence: agentEvents.sequence })
    .from(agentEvents)
    .where(and(eq(agentEvents.agentId, agentId), eq(agentEvents.id, after)));
  if (row) return row.sequence;
  throw errors.validation(`after names no event of agent ${agentId}: give a sequence number or an event id of this agent`);
}
