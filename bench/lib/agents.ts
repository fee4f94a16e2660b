/**
 * Requests of the registry scenarios; bench/run.ts runs them.
 *
 * register_agent: POST /agents, each request a new agent id.
 * heartbeat: POST /agents/{id}/heartbeat where each autocannon connection is its own agent
 * (registered before the run), as a fleet of agents would load the server.
 */
import type autocannon from "autocannon";

interface BenchApi {
  request(method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

type MapLimit = <T>(count: number, limit: number, fn: (i: number) => Promise<T>) => Promise<T[]>;

/** Registers one agent per connection (with the bench key) for the heartbeat scenario. */
export async function registerHeartbeatAgents(api: BenchApi, connections: number, runTag: string, mapLimit: MapLimit): Promise<string[]> {
  return mapLimit(connections, 16, async (i) => {
    const agentId = `bench-hb-${runTag}-${i}`;
    const res = await api.request("POST", "/api/v1/agents", { agent_id: agentId, role_id: "bench", capabilities: ["bench"], capacity: { max_concurrent_tasks: 8 } });
    if (res.status !== 201) throw new Error(`registering ${agentId} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    return agentId;
  });
}

/** register_agent: a fresh agent id per request. */
export function registerRequests(runTag: string): autocannon.Request[] {
  let i = 0;
  return [
    {
      method: "POST",
      path: "/api/v1/agents",
      setupRequest: (req) => ({
        ...req,
        body: JSON.stringify({ agent_id: `bench-reg-${runTag}-${i++}`, role_id: "bench", capabilities: ["search", "summarize"], capacity: { max_concurrent_tasks: 4 } }),
      }),
    },
  ];
}

/** heartbeat: binds each connection to its own agent (setupClient) and sends its heartbeats. */
export function heartbeatClientSetup(agentIds: string[]): (client: autocannon.Client) => void {
  let next = 0;
  return (client) => {
    const agentId = agentIds[next++ % agentIds.length]!;
    let load = 0;
    client.setRequests([
      {
        method: "POST",
        path: `/api/v1/agents/${agentId}/heartbeat`,
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({ status: "active", current_load: load++ % 8, tasks_in_progress: [], client_timestamp: new Date().toISOString() }),
        }),
      },
    ]);
  };
}
