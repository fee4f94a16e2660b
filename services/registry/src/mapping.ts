import { isoTimestamp, type Agent, type AgentStatus, type AgentSummary } from "@intentmesh/contracts";
import type { agents } from "./db/schema";

export type AgentRow = typeof agents.$inferSelect;

/** A row of registry.agents to the full record of spec 2.15. */
export function toAgent(row: AgentRow): Agent {
  return {
    agent_id: row.agentId,
    role_id: row.roleId,
    name: row.name,
    capabilities: row.capabilities,
    capacity: { max_concurrent_tasks: row.maxConcurrentTasks, current_load: row.currentLoad },
    status: row.status as AgentStatus,
    endpoint: row.endpoint,
    heartbeat_config: {
      interval_seconds: row.intervalSeconds,
      unhealthy_after_seconds: row.unhealthyAfterSeconds,
      dead_after_seconds: row.deadAfterSeconds,
    },
    metadata: row.metadata,
    registered_at: isoTimestamp(row.registeredAt),
    last_heartbeat_at: isoTimestamp(row.lastHeartbeatAt),
    version: row.version,
    origin_server_url: row.originServerUrl,
    drain_deadline: row.drainDeadline ? isoTimestamp(row.drainDeadline) : null,
    tasks_in_progress: row.tasksInProgress,
  };
}

export function toSummary(row: AgentRow): AgentSummary {
  const agent = toAgent(row);
  return {
    agent_id: agent.agent_id,
    role_id: agent.role_id,
    name: agent.name,
    capabilities: agent.capabilities,
    capacity: agent.capacity,
    status: agent.status,
    last_heartbeat_at: agent.last_heartbeat_at,
  };
}

/** A raw row (snake_case columns, as `select *` returns it) to the drizzle row shape. */
export function agentFromRaw(raw: Record<string, unknown>): AgentRow {
  const date = (v: unknown) => (v === null || v === undefined ? null : v instanceof Date ? v : new Date(String(v)));
  return {
    agentId: String(raw.agent_id),
    ownerPrincipal: String(raw.owner_principal),
    roleId: (raw.role_id as string | null) ?? null,
    name: (raw.name as string | null) ?? null,
    capabilities: (raw.capabilities as string[]) ?? [],
    maxConcurrentTasks: (raw.max_concurrent_tasks as number | null) ?? null,
    currentLoad: Number(raw.current_load),
    tasksInProgress: (raw.tasks_in_progress as string[]) ?? [],
    status: String(raw.status),
    endpoint: (raw.endpoint as string | null) ?? null,
    intervalSeconds: Number(raw.interval_seconds),
    unhealthyAfterSeconds: Number(raw.unhealthy_after_seconds),
    deadAfterSeconds: Number(raw.dead_after_seconds),
    metadata: (raw.metadata as Record<string, unknown>) ?? {},
    originServerUrl: (raw.origin_server_url as string | null) ?? null,
    registeredAt: date(raw.registered_at)!,
    lastHeartbeatAt: date(raw.last_heartbeat_at)!,
    version: Number(raw.version),
    drainDeadline: date(raw.drain_deadline),
    pendingCommands: (raw.pending_commands as AgentRow["pendingCommands"]) ?? [],
    nextCheckAt: date(raw.next_check_at),
    eventSeq: Number(raw.event_seq),
    updatedAt: date(raw.updated_at)!,
  };
}
