/**
 * The governance scenarios; bench/run.ts runs them.
 *
 * - state_patch_governed: state_patch on intents carrying a governance policy whose every rule
 *   is checked on a state write and none refuses it (the bench key is an admin acting as itself):
 *   against state_patch in the same run, the overhead of enforcement.
 * - suspend_respond: each connection suspends its own intent (POST /suspend, a choice) and
 *   answers it (POST /suspend/respond), in turn; every request is counted, so a cycle is two.
 *   The latency of respond alone is measured after the run by respondLatency.
 */
import type autocannon from "autocannon";

interface BenchApi {
  request(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: unknown }>;
}

/** Checked on every state write; refuses none of the bench's writes. */
export const BENCH_POLICY = { write_scope: "assigned_only", allowed_agents: ["bench-agent"], max_cost: 1_000_000, require_status_reason: true, completion_mode: "require_approval" };

export async function governIntent(api: BenchApi, intent: { id: string; version: number }): Promise<{ id: string; version: number }> {
  const res = await api.request("PUT", `/api/v1/intents/${intent.id}/governance`, BENCH_POLICY, { "If-Match": String(intent.version) });
  if (res.status !== 200) throw new Error(`PUT governance answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
  return { id: intent.id, version: Number((res.body as { version: number }).version) };
}

const SUSPENSION = JSON.stringify({ question: "Ship it?", response_type: "choice", choices: [{ value: "yes", label: "Yes" }, { value: "no", label: "No" }], fallback_policy: "fail", timeout_seconds: 3600 });

/** Binds each connection to its intent and cycles suspend -> respond. */
export function suspendRespondClientSetup(intentIds: string[]): (client: autocannon.Client) => void {
  let next = 0;
  return (client) => {
    const intentId = intentIds[next++ % intentIds.length]!;
    let suspensionId = "";
    client.setRequests([
      {
        method: "POST",
        path: `/api/v1/intents/${intentId}/suspend`,
        body: SUSPENSION,
        onResponse: (status, body) => {
          if (status === 201) suspensionId = (JSON.parse(body) as { state: { _suspension: { id: string } } }).state._suspension.id;
        },
      },
      {
        method: "POST",
        path: `/api/v1/intents/${intentId}/suspend/respond`,
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ suspension_id: suspensionId, value: "yes" }) }),
      },
    ]);
  };
}

/** Respond latency alone: `cycles` suspend/respond pairs one after the other, timing only respond (ms, sorted). */
export async function respondLatency(api: BenchApi, intentId: string, cycles: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < cycles; i++) {
    const suspended = await api.request("POST", `/api/v1/intents/${intentId}/suspend`, JSON.parse(SUSPENSION));
    if (suspended.status !== 201) throw new Error(`suspend answered ${suspended.status}: ${JSON.stringify(suspended.body).slice(0, 300)}`);
    const id = (suspended.body as { state: { _suspension: { id: string } } }).state._suspension.id;
    const start = performance.now();
    const answered = await api.request("POST", `/api/v1/intents/${intentId}/suspend/respond`, { suspension_id: id, value: "yes" });
    times.push(performance.now() - start);
    if (answered.status !== 200) throw new Error(`respond answered ${answered.status}: ${JSON.stringify(answered.body).slice(0, 300)}`);
  }
  return times.sort((a, b) => a - b);
}

/**
 * Between runs: a run that stopped between a suspend and its answer leaves the intent suspended;
 * answer it so the next run starts each cycle from an active intent.
 */
export async function answerLeftovers(api: BenchApi, intentIds: string[]): Promise<void> {
  for (const id of intentIds) {
    const got = await api.request("GET", `/api/v1/intents/${id}`);
    const intent = got.body as { status: string; state: { _suspension?: { id: string } } };
    if (intent.status === "suspended_awaiting_input" && intent.state._suspension) {
      await api.request("POST", `/api/v1/intents/${id}/suspend/respond`, { suspension_id: intent.state._suspension.id, value: "yes" });
    }
  }
}
