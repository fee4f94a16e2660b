/**
 * The task scenario (task_claim_complete); bench/run.ts runs it.
 *
 * Each autocannon connection is one agent (registered with the bench key before the run) working
 * through tasks of an intent of its own: create (the bench key is an admin), claim, start,
 * complete, then the next task. Every request is counted, so requests/s is four times the tasks
 * done per second. The task id travels from the create response to the next three requests.
 */
import type autocannon from "autocannon";

interface BenchApi {
  request(method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

type MapLimit = <T>(count: number, limit: number, fn: (i: number) => Promise<T>) => Promise<T[]>;

export interface TaskWorker {
  agentId: string;
  intentId: string;
}

/** One agent and one intent per connection. */
export async function taskWorkers(api: BenchApi, connections: number, runTag: string, mapLimit: MapLimit, createIntent: (title: string) => Promise<{ id: string }>): Promise<TaskWorker[]> {
  return mapLimit(connections, 16, async (i) => {
    const agentId = `bench-task-${runTag}-${i}`;
    const res = await api.request("POST", "/api/v1/agents", { agent_id: agentId, role_id: "bench-tasks" });
    if (res.status !== 201) throw new Error(`registering ${agentId} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    const intent = await createIntent(`tasks of ${agentId}`);
    return { agentId, intentId: intent.id };
  });
}

/** Binds each connection to its worker and cycles create -> claim -> start -> complete. */
export function taskClientSetup(workers: TaskWorker[]): (client: autocannon.Client) => void {
  let next = 0;
  return (client) => {
    const worker = workers[next++ % workers.length]!;
    let taskId = "";
    let n = 0;
    const asAgent = (req: autocannon.Request) => ({ ...req.headers, "X-Agent-ID": worker.agentId });
    const step = (action: "claim" | "start" | "complete", body: string): autocannon.Request => ({
      method: "POST",
      setupRequest: (req) => ({ ...req, headers: asAgent(req), path: `/api/v1/tasks/${taskId}/${action}`, body }),
    });
    client.setRequests([
      {
        method: "POST",
        path: `/api/v1/intents/${worker.intentId}/tasks`,
        setupRequest: (req) => ({ ...req, headers: asAgent(req), body: JSON.stringify({ name: `bench task ${n++}`, input: { n } }) }),
        onResponse: (status, body) => {
          if (status === 201) taskId = (JSON.parse(body) as { id: string }).id;
        },
      },
      step("claim", "{}"),
      step("start", "{}"),
      step("complete", JSON.stringify({ output: { result: "done" } })),
    ]);
  };
}
