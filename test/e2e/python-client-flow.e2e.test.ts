import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";
import { expectError, uniqueTag } from "../support/e2e-helpers";

/**
 * The call sequences of the official OpenIntent Python client (v0.17, CLIENTS.md section 6),
 * replayed with the exact bodies and headers it sends, and checked for what it parses from each
 * answer. Every request carries X-API-Key, X-Agent-ID and Content-Type: application/json, GET and
 * DELETE included, as the client's session headers do.
 */
let cluster: TestCluster;
const open: SseClient[] = [];
beforeAll(async () => {
  cluster = await startTestCluster({ ssePingMs: 50 });
});
afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  await cluster?.stop();
});

/** ISO timestamps as Python 3.10's datetime.fromisoformat accepts them: no `Z`, an explicit offset. */
const PY_ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6})?[+-]\d\d:\d\d$/;

/** The values of the client's closed EventType enum that an intent's log may hold (models.py). */
const PY_EVENT_TYPES = new Set([
  "intent_created", "state_patched", "status_changed", "agent_assigned", "agent_unassigned", "constraint_added", "constraint_removed",
  "dependency_added", "dependency_removed", "lease_acquired", "lease_released", "arbitration_requested", "decision_recorded",
  "attachment_added", "portfolio_created", "added_to_portfolio", "removed_from_portfolio", "failure_recorded", "comment",
  "tool_call_started", "tool_call_completed", "tool_call_failed", "llm_request_started", "llm_request_completed", "llm_request_failed",
  "governance.policy_set", "governance.policy_removed", "governance.approval_granted", "governance.approval_denied", "governance.violation",
  "intent.suspended", "intent.resumed", "intent.suspension_expired", "engagement.decision", "intent.suspension_renotified", "intent.suspension_escalated",
]);
const PY_INTENT_STATUSES = ["draft", "active", "blocked", "completed", "abandoned", "suspended_awaiting_input"];
const PY_AGENT_STATUSES = ["registering", "active", "draining", "unhealthy", "dead", "deregistered"];

/** One client session: the Python client's httpx session with its default headers. */
function pythonClient(agentId: string, key: keyof typeof TEST_KEYS = "agent") {
  const headers = { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId, "Content-Type": "application/json" };
  const call = async (method: string, path: string, json?: unknown, extra: Record<string, string> = {}) => {
    const res = await fetch(`${cluster.baseUrl}/api/v1${path}`, { method, headers: { ...headers, ...extra }, body: json === undefined ? undefined : JSON.stringify(json) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : {} };
  };
  return {
    get: (path: string) => call("GET", path),
    post: (path: string, json: unknown, extra?: Record<string, string>) => call("POST", path, json, extra),
    put: (path: string, json: unknown) => call("PUT", path, json),
    patch: (path: string, json: unknown, extra?: Record<string, string>) => call("PATCH", path, json, extra),
    delete: (path: string) => call("DELETE", path),
  };
}

/** What Intent.from_dict needs: id, title, an IntentStatus, a version, a state object, parseable times. */
function expectPythonIntent(intent: any): void {
  expect(typeof intent.id).toBe("string");
  expect(typeof intent.title).toBe("string");
  expect(PY_INTENT_STATUSES).toContain(intent.status);
  expect(Number.isInteger(intent.version)).toBe(true);
  expect(intent.state).toBeTypeOf("object");
  expect(intent.created_at).toMatch(PY_ISO);
  expect(intent.updated_at).toMatch(PY_ISO);
}

describe("an unchanged Python agent (CLIENTS.md section 6)", () => {
  it("registers, heartbeats, creates and activates an intent, is assigned, leases, patches, logs, records a cost, attaches, fails, sets a retry policy", async () => {
    const agentId = uniqueTag("py-agent");
    const py = pythonClient(agentId);

    // register_agent: POST /agents/register {agent_id, capabilities}
    const registered = await py.post("/agents/register", { agent_id: agentId, capabilities: ["research"] });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect(registered.body.agent_id).toBe(agentId);
    expect(PY_AGENT_STATUSES).toContain(registered.body.status);
    expect(registered.body.metadata).toEqual({});
    expect(registered.body.registered_at).toMatch(PY_ISO);

    // agent_heartbeat: {status, current_load, tasks_in_progress} without client_timestamp. Spec 4.9
    // requires client_timestamp, and the spec stands (docs/compatibility.md): 400 naming it.
    const heartbeat = await py.post(`/agents/${agentId}/heartbeat`, { status: "active", current_load: 0, tasks_in_progress: [] });
    expectError(heartbeat, 400, "VALIDATION_FAILED");
    expect(heartbeat.body.message).toContain("client_timestamp");
    const withTimestamp = await py.post(`/agents/${agentId}/heartbeat`, { status: "active", current_load: 0, tasks_in_progress: [], client_timestamp: new Date().toISOString() });
    expect(withTimestamp.status).toBe(200);

    // create_intent: a draft (table 3.1), then set_status(active) with If-Match: str(version).
    const created = await py.post("/intents", { title: "Research the market", description: "", constraints: {}, state: {}, created_by: agentId });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expectPythonIntent(created.body);
    expect(created.body).toMatchObject({ status: "draft", version: 1, created_by: agentId });
    const id = created.body.id as string;
    const read = await py.get(`/intents/${id}`);
    expect(read.status).toBe(200);
    expectPythonIntent(read.body);
    const activated = await py.post(`/intents/${id}/status`, { status: "active" }, { "If-Match": String(read.body.version) });
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);
    expectPythonIntent(activated.body);
    expect(activated.body).toMatchObject({ status: "active", version: 2 });

    // assign_agent: {agent_id}
    const assigned = await py.post(`/intents/${id}/agents`, { agent_id: agentId });
    expect(assigned.status).toBe(201);

    // acquire_lease {scope, duration_seconds}; renew_lease PATCH {duration_seconds}; get_leases reads {"leases": [...]}.
    const lease = await py.post(`/intents/${id}/leases`, { scope: "research", duration_seconds: 300 });
    expect(lease.status, JSON.stringify(lease.body)).toBe(201);
    expect(lease.body).toMatchObject({ intent_id: id, agent_id: agentId, scope: "research", released_at: null });
    expect(lease.body.expires_at).toMatch(PY_ISO);
    expect(lease.body.acquired_at).toMatch(PY_ISO);
    expect(Date.parse(lease.body.expires_at) - Date.parse(lease.body.acquired_at)).toBe(300_000);
    const renewed = await py.patch(`/intents/${id}/leases/${lease.body.id}`, { duration_seconds: 600 });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect(renewed.body.id).toBe(lease.body.id);
    const leases = await py.get(`/intents/${id}/leases`);
    expect(leases.body.leases.map((l: any) => l.id)).toEqual([lease.body.id]);
    // A second agent's acquire of the same scope: 409 whose text mentions the lease, with existing_lease.
    const rival = await pythonClient(uniqueTag("py-rival")).post(`/intents/${id}/leases`, { scope: "research", duration_seconds: 300 });
    expect(rival.status).toBe(409);
    expect(JSON.stringify(rival.body).toLowerCase()).toContain("lease");
    expect(rival.body.existing_lease.id).toBe(lease.body.id);
    expect(typeof rival.body.message).toBe("string");

    // update_state: {"patches": [{op: set, path: key, value}]} with If-Match; answers the Intent.
    const patched = await py.post(`/intents/${id}/state`, { patches: [{ op: "set", path: "research", value: { progress: 0.5 } }] }, { "If-Match": "2" });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expectPythonIntent(patched.body);
    expect(patched.body).toMatchObject({ version: 3, state: { research: { progress: 0.5 } } });
    const stale = await py.post(`/intents/${id}/state`, { patches: [{ op: "set", path: "research", value: {} }] }, { "If-Match": "2" });
    expect(stale.status).toBe(409);
    expect(stale.body.current_version).toBe(3);
    expect(JSON.stringify(stale.body).toLowerCase()).not.toContain("lease"); // else the client raises LeaseConflictError

    // log_event: {event_type, actor, payload, trace_id, parent_event_id}
    const first = await py.post(`/intents/${id}/events`, { event_type: "comment", actor: agentId, payload: { text: "found sources" } });
    expect(first.status).toBe(201);
    const traced = await py.post(`/intents/${id}/events`, {
      event_type: "tool_call_completed",
      actor: agentId,
      payload: { tool: "search" },
      trace_id: "trace-1",
      parent_event_id: first.body.id,
    });
    expect(traced.status, JSON.stringify(traced.body)).toBe(201);
    expect(traced.body).toMatchObject({ intent_id: id, event_type: "tool_call_completed", actor: agentId, trace_id: "trace-1", parent_event_id: first.body.id });
    expect(traced.body.created_at).toMatch(PY_ISO);

    // record_cost: {agent_id, cost_type, amount, unit, provider, metadata}; the client reads metadata.
    const cost = await py.post(`/intents/${id}/costs`, {
      agent_id: agentId,
      cost_type: "tokens",
      amount: 1523,
      unit: "tokens",
      provider: "openai",
      metadata: { model: "gpt-4o", prompt_tokens: 1200 },
    });
    expect(cost.status, JSON.stringify(cost.body)).toBe(201);
    expect(cost.body).toMatchObject({ intent_id: id, agent_id: agentId, cost_type: "tokens", amount: 1523, unit: "tokens", provider: "openai", metadata: { model: "gpt-4o", prompt_tokens: 1200 } });
    const noProvider = await py.post(`/intents/${id}/costs`, { agent_id: agentId, cost_type: "api_call", amount: 2, unit: "cents", provider: null, metadata: {} });
    expect(noProvider.status).toBe(201);
    expect(noProvider.body.provider).toBeNull();
    const costs = await py.get(`/intents/${id}/costs`);
    expect(costs.body.costs.map((c: any) => c.id)).toEqual([cost.body.id, noProvider.body.id]);
    expect(costs.body.summary).toMatchObject({ total: 1525, by_agent: { [agentId]: 1525 } });

    // add_attachment: {filename, mime_type, size, storage_url, metadata}; the client reads uploaded_by.
    const attachment = await py.post(`/intents/${id}/attachments`, {
      filename: "report.pdf",
      mime_type: "application/pdf",
      size: 20480,
      storage_url: "https://files.example.com/report.pdf",
      metadata: { pages: 12 },
    });
    expect(attachment.status, JSON.stringify(attachment.body)).toBe(201);
    expect(attachment.body).toMatchObject({ filename: "report.pdf", mime_type: "application/pdf", size: 20480, storage_url: "https://files.example.com/report.pdf", metadata: { pages: 12 }, uploaded_by: agentId });
    const attachments = await py.get(`/intents/${id}/attachments`);
    expect(attachments.body.attachments.map((a: any) => a.id)).toEqual([attachment.body.id]);

    // set_retry_policy (PUT, every field, fallback null); get_retry_policy.
    const policy = await py.put(`/intents/${id}/retry-policy`, {
      strategy: "exponential",
      max_retries: 3,
      base_delay_ms: 1000,
      max_delay_ms: 60000,
      fallback_agent_id: null,
      failure_threshold: 3,
    });
    expect(policy.status, JSON.stringify(policy.body)).toBe(200);
    expect(policy.body).toMatchObject({ intent_id: id, strategy: "exponential", max_retries: 3, base_delay_ms: 1000, max_delay_ms: 60000, fallback_agent_id: null, failure_threshold: 3 });
    expect((await py.get(`/intents/${id}/retry-policy`)).body).toEqual(policy.body);

    // record_failure: {agent_id, attempt_number, error_code, error_message, retry_scheduled_at, metadata}, no error_type.
    const failure = await py.post(`/intents/${id}/failures`, {
      agent_id: agentId,
      attempt_number: 1,
      error_code: "RATE_LIMIT",
      error_message: "429 from the provider",
      retry_scheduled_at: null,
      metadata: { provider: "openai" },
    });
    expect(failure.status, JSON.stringify(failure.body)).toBe(201);
    expect(failure.body).toMatchObject({ intent_id: id, agent_id: agentId, attempt_number: 1, error_code: "RATE_LIMIT", error_message: "429 from the provider", retry_scheduled_at: null, metadata: { provider: "openai" } });
    // With its defaults (error_code and error_message None) and a naive datetime's isoformat().
    const bare = await py.post(`/intents/${id}/failures`, {
      agent_id: agentId,
      attempt_number: 2,
      error_code: null,
      error_message: null,
      retry_scheduled_at: "2030-01-01T12:00:00.123456",
      metadata: {},
    });
    expect(bare.status, JSON.stringify(bare.body)).toBe(201);
    expect(bare.body).toMatchObject({ error_code: "UNKNOWN", error_message: "", retry_scheduled_at: "2030-01-01T12:00:00.123+00:00" });
    const failures = await py.get(`/intents/${id}/failures`);
    expect(failures.body.failures.map((f: any) => f.id)).toEqual([failure.body.id, bare.body.id]);

    // release_lease: any 2xx.
    expect((await py.delete(`/intents/${id}/leases/${lease.body.id}`)).status).toBe(200);

    // get_events: every event of the log has a type the client's strict EventType enum knows.
    const events = await py.get(`/intents/${id}/events?limit=100`);
    expect(events.status).toBe(200);
    const types: string[] = events.body.events.map((e: any) => e.event_type);
    expect(types.filter((t) => !PY_EVENT_TYPES.has(t))).toEqual([]);
    expect(types).toEqual(expect.arrayContaining(["intent_created", "status_changed", "agent_assigned", "lease_acquired", "state_patched", "comment", "attachment_added", "lease_released"]));
    for (const event of events.body.events) expect(event.created_at).toMatch(PY_ISO);
  });

  it("learns of its assignment on GET /agents/{id}/subscribe as event AGENT_ASSIGNED with data.intent_id, then fetches the intent", async () => {
    const agentId = uniqueTag("py-base");
    const py = pythonClient(agentId);
    expect((await py.post("/agents/register", { agent_id: agentId, capabilities: [] })).status).toBe(201);
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/agents/${agentId}/subscribe`, {
      "X-API-Key": TEST_KEYS.agent,
      "X-Agent-ID": agentId,
      Accept: "text/event-stream",
      "Cache-Control": "no-cache",
    });
    open.push(sse);
    expect(sse.status).toBe(200);
    const coordinator = pythonClient("planner", "coordinator");
    const intent = (await coordinator.post("/intents", { title: "Write", description: "", constraints: {}, state: {}, created_by: "planner" })).body;
    expect((await coordinator.post(`/intents/${intent.id}/agents`, { agent_id: agentId })).status).toBe(201);
    await sse.waitFor((c) => c.frames.some((f) => f.event === "AGENT_ASSIGNED"), 5000);
    const frame = sse.frames.find((f) => f.event === "AGENT_ASSIGNED")!;
    const intentId = JSON.parse(frame.data!).intent_id;
    expect(intentId).toBe(intent.id);
    const fetched = await py.get(`/intents/${intentId}`);
    expect(fetched.status).toBe(200);
    expectPythonIntent(fetched.body);
  });

  it("request_input (BaseAgent): status, then the _suspension patch, then intent.suspended: one tracked suspension; the operator's answer resolves it", async () => {
    const agentId = uniqueTag("py-ask");
    const py = pythonClient(agentId);
    const intent = (await py.post("/intents", { title: "Ask", description: "", constraints: {}, state: {}, created_by: agentId })).body;
    const active = (await py.post(`/intents/${intent.id}/status`, { status: "active" }, { "If-Match": "1" })).body;
    // Step 2: GET the intent. Step 3: POST /status {"status": "suspended_awaiting_input"} with If-Match: v.
    const got = await py.get(`/intents/${intent.id}`);
    expect(got.body.version).toBe(active.version);
    const suspend = await py.post(`/intents/${intent.id}/status`, { status: "suspended_awaiting_input" }, { "If-Match": String(got.body.version) });
    expect(suspend.status, JSON.stringify(suspend.body)).toBe(200);
    // Steps 4-5: the record as the SDK writes it (spec names, nulls omitted, client escalation names).
    const suspensionId = randomUUID();
    const record = {
      id: suspensionId,
      question: "Which?",
      response_type: "choice",
      choices: [{ value: "a", label: "A" }, { value: "b", label: "B" }],
      suspended_at: new Date().toISOString(),
      timeout_seconds: 300,
      fallback_policy: "fail",
      retry_policy: { max_attempts: 2, interval_seconds: 60, strategy: "fixed", escalation_ladder: [{ attempt: 1, channel_hint: "email", notify_to: "lead" }], final_fallback_policy: "fail" },
    };
    const patched = await py.post(`/intents/${intent.id}/state`, { patches: [{ op: "set", path: "_suspension", value: record }] }, { "If-Match": String(suspend.body.version) });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expectPythonIntent(patched.body);
    // Step 6: the SDK's own intent.suspended is answered with the server's one.
    const announced = await py.post(`/intents/${intent.id}/events`, { event_type: "intent.suspended", actor: agentId, payload: { suspension_id: suspensionId, question: "Which?" } });
    expect(announced.status).toBe(201);
    expect((await cluster.sdk().ops.intentsListEvents({ intent_id: intent.id, query: { event_type: "intent.suspended" } })).events).toHaveLength(1);
    // Step 7: the operator answers; the SDK's poll sees the resolution.
    // The operator's side is not the Python client's: it goes through the typed client.
    const answer = await cluster.sdk("operator").send("governanceRespond", { intent_id: intent.id, body: { suspension_id: suspensionId, value: "b", responded_by: "op" } });
    expect(answer.status).toBe(200);
    const polled = await py.get(`/intents/${intent.id}`);
    expect(polled.body.state._suspension).toMatchObject({ resolution: "responded", response: "b" });
    expect(polled.body.status).toBe("active");
    // The engagement decision the SDK logs stays open to it.
    expect((await py.post(`/intents/${intent.id}/events`, { event_type: "engagement.decision", actor: agentId, payload: { mode: "autonomous" } })).status).toBe(201);
  });

  it("sends Content-Type: application/json with empty bodies (DELETE, GET) and If-Match as 3, \"3\" or W/\"3\"", async () => {
    const agentId = uniqueTag("py-hdr");
    const py = pythonClient(agentId);
    const intent = (await py.post("/intents", { title: "Headers", description: "", constraints: {}, state: {}, created_by: agentId, status: "active" })).body;
    for (const [i, ifMatch] of ["1", '"2"', 'W/"3"'].entries()) {
      const res = await py.post(`/intents/${intent.id}/state`, { patches: [{ op: "set", path: "n", value: i }] }, { "If-Match": ifMatch });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const lease = (await py.post(`/intents/${intent.id}/leases`, { scope: "n", duration_seconds: 60 })).body;
    const empty = await fetch(`${cluster.baseUrl}/api/v1/intents/${intent.id}/leases/${lease.id}`, {
      method: "DELETE",
      headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": agentId, "Content-Type": "application/json", "Content-Length": "0" },
    });
    expect(empty.status).toBe(200);
  });
});
