/**
 * A valid body for every operation of the catalogue that takes one, as the e2e tests send them
 * (issue 23 items 9-11): services/gateway/src/openapi-bodies.test.ts checks each against the
 * server's contract and the OpenAPI document, test/e2e/catalogue-served.e2e.test.ts sends them
 * with an unknown field to every route. A new operation with a body needs an entry (tested).
 */
export const REPRESENTATIVE_ID = "0b6f3c1e-6a51-4d7e-9a4b-2f1d8c3e5a70";
const ID = REPRESENTATIVE_ID;
const NOW = "2026-11-22T06:53:03.123+00:00";
const LATER = "2099-01-01T00:00:00.000+00:00";
const policy = { max_attempts: 2, interval_seconds: 60, strategy: "fixed", escalation_ladder: [{ attempt: 1, channel_hint: "slack", notify_to: "ops" }] };

export const REPRESENTATIVE_BODIES: Record<string, unknown> = {
  intentsCreate: { title: "Write the launch post", description: "d", created_by: "writer-1", constraints: { budget: { max_total_cents: 1000 } }, state: { draft: "" }, confidence: 50, status: "active" },
  intentsPatchState: { patches: [{ op: "set", path: "/draft", value: "v1" }] },
  intentsTransition: { status: "active", reason: "go" },
  intentsAppendEvent: { event_type: "comment", actor: "writer-1", payload: { text: "hi" }, trace_id: "t-1", parent_event_id: ID },
  aclSet: { default_policy: "closed", default_permission: "read", entries: [{ principal_id: "writer-1", principal_type: "agent", permission: "write", reason: "drafts", expires_at: LATER }] },
  aclGrant: { principal_id: "reviewer-1", principal_type: "agent", permission: "read", reason: "review", expires_at: LATER },
  accessRequestCreate: { principal_id: "writer-1", principal_type: "agent", requested_permission: "write", reason: "needs to draft", capabilities: ["write"] },
  accessRequestApprove: { decided_by: "lead", permission: "write", expires_at: LATER, reason: "ok" },
  accessRequestDeny: { decided_by: "lead", reason: "not now" },
  intentsAssignAgent: { agent_id: "writer-1", role: "worker" },
  intentsAcquireLease: { scope: "draft", ttl_seconds: 600, agent_id: "writer-1" },
  intentsRenewLease: { duration_seconds: 300 },
  intentsRenewLeaseByPatch: { ttl_seconds: 300 },
  agentsRegister: { agent_id: "writer-1", role_id: "writer", name: "Writer", capabilities: ["write"], capacity: { max_concurrent_tasks: 2 }, endpoint: "https://agents.example.org/w1", heartbeat_config: { interval_seconds: 30, unhealthy_after_seconds: 90, dead_after_seconds: 300 }, metadata: { team: "a" } },
  agentsRegisterAlias: { agent_id: "writer-1", capabilities: ["write"], max_concurrent_tasks: 1 },
  agentsHeartbeat: { status: "active", current_load: 1, tasks_in_progress: [ID], client_timestamp: NOW },
  agentsChangeStatus: { status: "draining", drain_timeout_seconds: 120, reason: "deploy" },
  agentsChangeStatusByPut: { status: "draining" },
  attachmentsCreate: { filename: "a.png", mime_type: "image/png", size: 10, storage_url: "https://files.example.org/a.png", metadata: { width: 10, height: 10 } },
  retriesPutPolicy: { strategy: "exponential", max_retries: 3, base_delay_ms: 1000, max_delay_ms: 60000, fallback_agent_id: null },
  retriesRecordFailure: { agent_id: "writer-1", attempt_number: 1, error_code: "TIMEOUT", error_message: "slow", retry_scheduled_at: LATER, metadata: {} },
  portfoliosCreate: { name: "launch", description: null, created_by: "lead", metadata: {} },
  portfoliosUpdate: { name: "launch 2" },
  portfoliosAddMember: { intent_id: ID, role: "member" },
  costsRecord: { agent_id: "writer-1", cost_type: "tokens", amount: 10, unit: "tokens", provider: null, metadata: {} },
  costsSetBudget: { max_total_cents: 1000, alert_threshold_percent: 80 },
  tasksCreate: { title: "research", depends_on: [], input: { q: 1 } },
  tasksCreateWithIntentId: { intent_id: ID, name: "research" },
  tasksPatch: { status: "blocked", blocked_reason: "waiting" },
  tasksClaim: {},
  tasksStart: {},
  tasksComplete: { output: { a: 1 } },
  tasksFail: { error: "boom", error_code: "TIMEOUT" },
  tasksCancel: { reason: "not needed" },
  governancePolicySet: { completion_mode: "quorum", quorum_threshold: 0.5, write_scope: "any", max_cost: 100, allowed_agents: ["writer-1"], require_status_reason: true },
  governanceSuspend: { question: "Ship it?", response_type: "choice", choices: [{ value: "yes", label: "Yes" }, { value: "no", label: "No" }], timeout_seconds: 600, fallback_policy: "fail", retry_policy: policy },
  governanceRespond: { suspension_id: ID, value: "yes", responded_by: "operator", metadata: { via: "slack" } },
  governanceCreateApproval: { action: "complete", reason: "done", context: {}, requested_by: "writer-1" },
  governanceApprove: { notes: "ok", approved_by: "lead" },
  governanceDeny: { reason: "no", denied_by: "lead" },
  governanceDecideEngagement: { confidence: 0.9, risk: 0.1, reversibility: 0.9, context: {} },
  memoryBatch: { entries: [{ namespace: "notes", key: "k", value: { a: 1 } }, { id: ID, if_match: 1, value: { a: 2 } }] },
  memoryDeleteBatch: { namespace: "notes.*", agent_id: "writer-1" },
  memoryPatchNamespace: { permissions: { default: "read", allow: [{ agent: "writer-1", access: "write" }] } },
  memoryCreate: { agent_id: "writer-1", namespace: "notes", key: "k", value: { a: 1 }, memory_type: "episodic", tags: ["x"], pinned: true, priority: "high" },
  memoryPatch: { value: { a: 2 }, tags: ["y"] },
  memorySetCapacity: { episodic_capacity: 10 },
  memoryPut: { value: { a: 1 } },
  channelsCreate: { name: "general", members: ["writer-1"], member_policy: "explicit", options: { audit: true, ttl_seconds: 600, max_messages: 100 } },
  channelsSendByName: { sender: "writer-1", to: "*", message_type: "broadcast", payload: { hi: 1 } },
  channelsPatch: { members: ["writer-1", "writer-2"], status: "open" },
  channelsSend: { sender: "writer-1", to: "role:reviewer", message_type: "request", payload: { q: 1 }, metadata: { trace_id: "t" }, expires_at: LATER },
  channelsReply: { sender: "writer-2", payload: { a: 1 }, metadata: {} },
  channelsMarkRead: { status: "read" },
  federationDispatch: { intent_id: ID, target_server: "https://peer.example.org", agent_id: "writer-1", delegation_scope: { permissions: ["intent.read"], max_delegation_depth: 1 }, federation_policy: { max_cost: 5 }, callback_url: null, idempotency_key: "k-1" },
};

