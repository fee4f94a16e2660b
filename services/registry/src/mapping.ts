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
