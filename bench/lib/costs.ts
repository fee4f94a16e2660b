/**
 * Fixtures and requests of the cost scenarios (record_cost, get_costs); bench/run.ts runs them.
 *
 * record_cost: POST /intents/{id}/costs rotating over the pool intents and over a few agents
 * (X-Agent-ID, registered with the bench key first; when the registry is not part of the run the
 * costs are recorded for the key's principal instead).
 * get_costs: GET /intents/{id}/costs of an intent holding COST_FIXTURE_RECORDS records: the first
 * page (100 records) and the summary of all of them.
 */
import type autocannon from "autocannon";

export const COST_FIXTURE_RECORDS = 10_000;
const BENCH_AGENTS = ["bench-agent-1", "bench-agent-2", "bench-agent-3", "bench-agent-4"];

interface BenchApi {
  request(method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

type MapLimit = <T>(count: number, limit: number, fn: (i: number) => Promise<T>) => Promise<T[]>;

/** The body of one recorded cost: a model call, in tokens, with its price in cents. */
const costBody = (i: number) =>
  JSON.stringify({ cost_type: "tokens", amount: 1200 + (i % 50), unit: "tokens", cents: 0.36, provider: "bench-llm", metadata: { model: "bench-model", prompt_tokens: 1000, completion_tokens: 200 + (i % 50) } });

/** Registers the bench agents with the bench key; null when this run has no registry (POST /agents is 404 or fails). */
export async function registerBenchAgents(api: BenchApi, log: (line: string) => void): Promise<string[] | null> {
  for (const agentId of BENCH_AGENTS) {
    const res = await api.request("POST", "/api/v1/agents", { agent_id: agentId });
    if (res.status !== 201 && res.status !== 409) {
      log(`  POST /api/v1/agents answered ${res.status}: record_cost records costs for the key's principal, without X-Agent-ID`);
      return null;
    }
  }
  return BENCH_AGENTS;
}

/** An intent with COST_FIXTURE_RECORDS cost records, recorded through the API; checked through its summary. */
export async function costFixtureIntent(api: BenchApi, intentId: string, agents: string[] | null, mapLimit: MapLimit): Promise<void> {
  await mapLimit(COST_FIXTURE_RECORDS, 32, async (i) => {
    const res = await api.request("POST", `/api/v1/intents/${intentId}/costs`, { ...JSON.parse(costBody(i)), ...(agents ? { agent_id: agents[i % agents.length] } : {}) });
    if (res.status !== 201) throw new Error(`recording fixture cost ${i} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
  });
  const check = await api.request("GET", `/api/v1/intents/${intentId}/costs?limit=1`);
  const count = (check.body as { summary?: { count?: number } }).summary?.count;
  if (count !== COST_FIXTURE_RECORDS) throw new Error(`the get_costs fixture has ${count} cost records, not ${COST_FIXTURE_RECORDS}`);
}

/** record_cost: one POST per request, rotating over the intents and the agents. */
export function recordCostRequests(intentIds: string[], agents: string[] | null): autocannon.Request[] {
  let i = 0;
  return [
    {
      method: "POST",
      setupRequest: (req) => {
        const n = i++;
        const headers = agents ? { ...req.headers, "X-Agent-ID": agents[n % agents.length]! } : req.headers;
        return { ...req, headers, path: `/api/v1/intents/${intentIds[n % intentIds.length]}/costs`, body: costBody(n) };
      },
    },
  ];
}

/** get_costs: the first page and the summary of the fixture intent. */
export const getCostsRequests = (intentId: string): autocannon.Request[] => [{ method: "GET", path: `/api/v1/intents/${intentId}/costs` }];
