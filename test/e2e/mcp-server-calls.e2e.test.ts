import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRoutes } from "@intentmesh/contracts";
import { startTestCluster, type ApiResponse, type TestCluster } from "../support/cluster";
import { uniqueTag } from "../support/e2e-helpers";

/**
 * Issue 31 part 2: every REST call of the official OpenIntent MCP server (tag 0.17.0,
 * mcp-server/src/client.ts), in its order, with the method, path and body that file builds, sent
 * as that server sends them (X-API-Key, X-Agent-ID, a JSON body whose undefined fields vanish).
 * None may answer 404 ROUTE_NOT_FOUND, and none may answer 400 for a body the MCP server really
 * sends, unless the spec forbids what it sends: those rows name the refusal the spec asks for
 * (docs/compatibility.md). Rows whose routes land with another issue (`landsWith`) are held to the
 * same rules as soon as their route is in the catalogue (apiRoutes); until then they must still
 * answer ROUTE_NOT_FOUND, so the table tightens by itself when they land.
 */

interface Ctx {
  agent: string;
  intentId: string;
  version: number;
  leaseId: string;
  channelId: string;
  approvalId: string;
  portfolioId: string;
  vaultId: string;
  triggerId: string;
  eventId: string;
  traceId: string;
  workflowId: string;
  planId: string;
  publicKey: string;
}

/** A workflow of one phase (docs/workflows.md), as a model would write it for create_workflow. */
const WORKFLOW_YAML = `
info:
  name: Walk
workflow:
  only:
    title: The only phase
    outputs:
      done: boolean
`;

interface Row {
  /** The client.ts method. */
  method: string;
  http: "GET" | "POST" | "PUT" | "DELETE";
  /** The path template, as in client.ts (under /api/v1). */
  template: string;
  path(c: Ctx): string;
  body?(c: Ctx): unknown;
  /** client.ts sends If-Match with the version it was given. */
  ifMatch?: boolean;
  /** Keeps what a later row needs. */
  keep?(res: ApiResponse, c: Ctx): void;
  /** The spec forbids what the MCP server sends here: the refusal it gets instead (docs/compatibility.md). */
  specRefuses?: { status: number; code: string; why: string };
  /** The answer this walk gets by design (not a refusal of the body): checked exactly. */
  answers?: { status: number; code: string; why: string };
  /**
   * A known incompatibility on main, outside this issue's files: the answer is pinned exactly so
   * the row fails (and the marker is removed) the day the route accepts the MCP server's body.
   */
  gap?: { status: number; code: string; why: string };
  /** Not on this branch: the issue whose work adds the route. */
  landsWith?: string;
}

/** JSON as client.ts sends it: fields left undefined are not sent. */
const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

const LANDS_27 = "issue 27 (plans and workflows, RFC-0011/0012)";

const rows: Row[] = [
  // Intent CRUD
  { method: "createIntent", http: "POST", template: "/intents", path: () => "/intents", body: (c) => ({ title: "walk", description: "", constraints: {}, state: {}, created_by: c.agent }), keep: (r, c) => ((c.intentId = r.body.id), (c.version = r.body.version)) },
  { method: "getIntent", http: "GET", template: "/intents/{id}", path: (c) => `/intents/${c.intentId}` },
  { method: "listIntents", http: "GET", template: "/intents", path: () => "/intents?status=active&limit=10&offset=0" },
  { method: "updateState", http: "POST", template: "/intents/{id}/state", path: (c) => `/intents/${c.intentId}/state`, body: () => ({ patches: Object.entries({ step: 1 }).map(([path, value]) => ({ op: "set", path, value })) }), ifMatch: true },
  { method: "setStatus", http: "POST", template: "/intents/{id}/status", path: (c) => `/intents/${c.intentId}/status`, body: () => ({ status: "active" }), ifMatch: true },
  // Events
  { method: "logEvent", http: "POST", template: "/intents/{id}/events", path: (c) => `/intents/${c.intentId}/events`, body: (c) => ({ event_type: "note", actor: c.agent, payload: {} }), keep: (r, c) => void (c.eventId = r.body.id) },
  { method: "getEvents", http: "GET", template: "/intents/{id}/events", path: (c) => `/intents/${c.intentId}/events?event_type=note&limit=10` },
  // Leasing
  { method: "acquireLease", http: "POST", template: "/intents/{id}/leases", path: (c) => `/intents/${c.intentId}/leases`, body: () => ({ scope: "draft", duration_seconds: 300 }), keep: (r, c) => void (c.leaseId = r.body.id) },
  { method: "releaseLease", http: "DELETE", template: "/intents/{id}/leases/{id}", path: (c) => `/intents/${c.intentId}/leases/${c.leaseId}` },
  // Agent management
  { method: "assignAgent", http: "POST", template: "/intents/{id}/agents", path: (c) => `/intents/${c.intentId}/agents`, body: () => ({ agent_id: "helper-1", role: "worker" }) },
  { method: "unassignAgent", http: "DELETE", template: "/intents/{id}/agents/{id}", path: (c) => `/intents/${c.intentId}/agents/helper-1` },
  // Messaging (RFC-0021)
  { method: "createChannel", http: "POST", template: "/intents/{id}/channels", path: (c) => `/intents/${c.intentId}/channels`, body: (c) => ({ name: uniqueTag("walk"), members: [c.agent, "helper-1"], member_policy: "explicit", options: {} }), keep: (r, c) => void (c.channelId = r.body.id) },
  { method: "sendMessage", http: "POST", template: "/channels/{id}/messages", path: (c) => `/channels/${c.channelId}/messages`, body: (c) => ({ sender: c.agent, message_type: "message", payload: { hi: 1 }, to: undefined }) },
  // The MCP tool's default timeout is 30 s; nobody answers here, so the walk asks with the shortest one.
  { method: "askOnChannel", http: "POST", template: "/channels/{id}/ask", path: (c) => `/channels/${c.channelId}/ask`, body: (c) => ({ sender: c.agent, to: "helper-1", payload: { q: 1 }, timeout: 1 }), answers: { status: 504, code: "RESPONSE_TIMEOUT", why: "helper-1 never answers in the walk" } },
  { method: "broadcastOnChannel", http: "POST", template: "/channels/{id}/messages", path: (c) => `/channels/${c.channelId}/messages`, body: (c) => ({ sender: c.agent, message_type: "broadcast", payload: { all: 1 } }) },
  { method: "getChannelMessages", http: "GET", template: "/channels/{id}/messages", path: (c) => `/channels/${c.channelId}/messages?limit=10` },
  // Workflows (RFC-0011 of the MCP server), plans (RFC-0012)
  {
    method: "createWorkflow",
    http: "POST",
    template: "/workflows",
    path: () => "/workflows",
    body: (c) => ({ name: "wf", yaml_spec: WORKFLOW_YAML, description: "", created_by: c.agent }),
    keep: (r, c) => void (c.workflowId = r.body.id),
    landsWith: LANDS_27,
  },
  { method: "triggerWorkflow", http: "POST", template: "/workflows/{id}/trigger", path: (c) => `/workflows/${c.workflowId}/trigger`, body: (c) => ({ inputs: {}, triggered_by: c.agent }), landsWith: LANDS_27 },
  { method: "getWorkflow", http: "GET", template: "/workflows/{id}", path: (c) => `/workflows/${c.workflowId}`, landsWith: LANDS_27 },
  { method: "listWorkflows", http: "GET", template: "/workflows", path: () => "/workflows?limit=10&offset=0", landsWith: LANDS_27 },
  { method: "createPlan", http: "POST", template: "/intents/{id}/plans", path: (c) => `/intents/${c.intentId}/plans`, body: (c) => ({ title: "plan", steps: [{ title: "one" }], created_by: c.agent }), keep: (r, c) => void (c.planId = r.body.id), landsWith: LANDS_27 },
  { method: "decomposeTask", http: "POST", template: "/intents/{id}/plans/decompose", path: (c) => `/intents/${c.intentId}/plans/decompose`, body: (c) => ({ task_description: "do it", max_depth: 3, requested_by: c.agent }), landsWith: LANDS_27 },
  { method: "getPlan", http: "GET", template: "/intents/{id}/plans/{id}", path: (c) => `/intents/${c.intentId}/plans/${c.planId}`, landsWith: LANDS_27 },
  // Governance (RFC-0013)
  { method: "setCoordinator", http: "POST", template: "/intents/{id}/coordinator", path: (c) => `/intents/${c.intentId}/coordinator`, body: (c) => ({ coordinator_id: c.agent, governance_policy: "default", set_by: c.agent }) },
  { method: "recordDecision", http: "POST", template: "/intents/{id}/decisions", path: (c) => `/intents/${c.intentId}/decisions`, body: (c) => ({ decision_type: "choice", rationale: "because", outcome: {}, decided_by: c.agent }),
  },
  { method: "getArbitration", http: "GET", template: "/intents/{id}/arbitration", path: (c) => `/intents/${c.intentId}/arbitration` },
  { method: "escalateToHuman", http: "POST", template: "/intents/{id}/escalations", path: (c) => `/intents/${c.intentId}/escalations`, body: (c) => ({ reason: "stuck", priority: "medium", urgency: "medium", context: {}, escalated_by: c.agent }) },
  { method: "listEscalations", http: "GET", template: "/escalations", path: (c) => `/escalations?intent_id=${c.intentId}&limit=10` },
  { method: "resolveEscalation", http: "POST", template: "/escalations/{id}/resolve", path: () => "/escalations/00000000-0000-4000-8000-000000000000/resolve", body: (c) => ({ resolution: "done", notes: JSON.stringify({}), resolved_by: c.agent }) },
  { method: "requestApproval", http: "POST", template: "/intents/{id}/approvals", path: (c) => `/intents/${c.intentId}/approvals`, body: (c) => ({ action: "ship", reason: "ship", context: { urgency: "medium" }, requested_by: c.agent }), keep: (r, c) => void (c.approvalId = r.body.id) },
  { method: "getApprovalStatus", http: "GET", template: "/intents/{id}/approvals/{id}", path: (c) => `/intents/${c.intentId}/approvals/${c.approvalId}` },
  { method: "setGovernancePolicy", http: "PUT", template: "/intents/{id}/governance", path: (c) => `/intents/${c.intentId}/governance`, body: () => ({ completion_mode: "auto" }), ifMatch: true },
  { method: "getGovernancePolicy", http: "GET", template: "/intents/{id}/governance", path: (c) => `/intents/${c.intentId}/governance` },
  { method: "approveApproval", http: "POST", template: "/intents/{id}/approvals/{id}/approve", path: (c) => `/intents/${c.intentId}/approvals/${c.approvalId}/approve`, body: (c) => ({ notes: "fine", approved_by: c.agent }), answers: { status: 403, code: "SELF_APPROVAL", why: "the walk requests and decides with one agent: self-approval is refused (403), never a 400 or a 500" } },
  { method: "denyApproval", http: "POST", template: "/intents/{id}/approvals/{id}/deny", path: (c) => `/intents/${c.intentId}/approvals/${c.approvalId}/deny`, body: (c) => ({ reason: undefined, denied_by: c.agent }), answers: { status: 403, code: "SELF_APPROVAL", why: "the walk requests and decides with one agent: self-approval is refused (403), never a 400 or a 500" } },
  // Portfolios (RFC-0004)
  { method: "createPortfolio", http: "POST", template: "/portfolios", path: () => "/portfolios", body: (c) => ({ name: uniqueTag("p"), description: "", created_by: c.agent }), keep: (r, c) => void (c.portfolioId = r.body.id) },
  { method: "addToPortfolio", http: "POST", template: "/portfolios/{id}/intents", path: (c) => `/portfolios/${c.portfolioId}/intents`, body: (c) => ({ intent_id: c.intentId }) },
  { method: "getPortfolio", http: "GET", template: "/portfolios/{id}", path: (c) => `/portfolios/${c.portfolioId}` },
  // Access control (RFC-0011, the MCP server's shape)
  { method: "setPermissions", http: "PUT", template: "/intents/{id}/permissions", path: (c) => `/intents/${c.intentId}/permissions`, body: () => ({ permissions: { default_policy: "open" } }), ifMatch: true,
    answers: { status: 409, code: "VERSION_MISMATCH", why: "If-Match is the ACL's version (GET /permissions answers it); the walk sends the intent's version, as a model that read the intent would (docs/compatibility.md)" } },
  { method: "getPermissions", http: "GET", template: "/intents/{id}/permissions", path: (c) => `/intents/${c.intentId}/permissions` },
  { method: "grantAccess", http: "POST", template: "/intents/{id}/permissions/grants", path: (c) => `/intents/${c.intentId}/permissions/grants`, body: (c) => ({ agent_id: "helper-1", level: "read", scopes: ["*"], granted_by: c.agent }) },
  // Credential vaults (RFC-0014)
  { method: "storeCredential", http: "POST", template: "/vaults/{id}/credentials", path: (c) => `/vaults/${c.vaultId}/credentials`, body: (c) => ({ name: "walk-cred", credential_type: "api_key", metadata: {}, stored_by: c.agent }) },
  { method: "getCredential", http: "GET", template: "/vaults/{id}/credentials/{id}", path: (c) => `/vaults/${c.vaultId}/credentials/walk-cred` },
  { method: "grantTool", http: "POST", template: "/intents/{id}/tools/grants", path: (c) => `/intents/${c.intentId}/tools/grants`, body: (c) => ({ agent_id: "helper-1", tool_name: "search", constraints: {}, granted_by: c.agent }) },
  // Agent memory (RFC-0015)
  { method: "memorySet", http: "PUT", template: "/agents/{id}/memory/{id}/{id}", path: (c) => `/agents/${c.agent}/memory/notes/k1`, body: () => ({ value: { n: 1 }, ttl_seconds: undefined }) },
  { method: "memoryGet", http: "GET", template: "/agents/{id}/memory/{id}/{id}", path: (c) => `/agents/${c.agent}/memory/notes/k1` },
  { method: "memoryList", http: "GET", template: "/agents/{id}/memory/{id}", path: (c) => `/agents/${c.agent}/memory/notes` },
  { method: "memoryList (no namespace)", http: "GET", template: "/agents/{id}/memory", path: (c) => `/agents/${c.agent}/memory` },
  // Agent lifecycle (RFC-0016)
  { method: "registerAgent", http: "POST", template: "/agents/register", path: () => "/agents/register", body: (c) => ({ agent_id: c.agent, name: undefined, capabilities: [], metadata: {} }) },
  {
    method: "heartbeat",
    http: "POST",
    template: "/agents/{id}/heartbeat",
    path: (c) => `/agents/${c.agent}/heartbeat`,
    body: () => ({ status: "healthy", metadata: {} }),
    specRefuses: { status: 400, code: "VALIDATION_FAILED", why: "RFC-0016 heartbeats carry client_timestamp (and healthy is no agent status)" },
  },
  { method: "getAgentRecord", http: "GET", template: "/agents/{id}/record", path: (c) => `/agents/${c.agent}/record` },
  { method: "listAgents", http: "GET", template: "/agents", path: () => "/agents?status=active" },
  {
    method: "agentHeartbeat",
    http: "POST",
    template: "/agents/{id}/heartbeat",
    path: (c) => `/agents/${c.agent}/heartbeat`,
    body: () => ({ status: "active", current_load: 0 }),
    specRefuses: { status: 400, code: "VALIDATION_FAILED", why: "RFC-0016 heartbeats carry client_timestamp" },
  },
  { method: "getHealth", http: "GET", template: "/agents/{id}/health", path: (c) => `/agents/${c.agent}/health` },
  {
    method: "setAgentStatus",
    http: "PUT",
    template: "/agents/{id}/status",
    path: (c) => `/agents/${c.agent}/status`,
    body: () => ({ status: "draining", reason: "walk" }),
    specRefuses: { status: 428, code: "PRECONDITION_REQUIRED", why: "RFC-0016 status changes are conditional on the agent's version (If-Match)" },
  },
  {
    method: "updateAgentStatus",
    http: "PUT",
    template: "/agents/{id}/status",
    path: (c) => `/agents/${c.agent}/status`,
    body: () => ({ status: "active" }),
    specRefuses: { status: 428, code: "PRECONDITION_REQUIRED", why: "RFC-0016 status changes are conditional on the agent's version (If-Match)" },
  },
  // Triggers (RFC-0017)
  { method: "createTrigger", http: "POST", template: "/intents/{id}/triggers", path: (c) => `/intents/${c.intentId}/triggers`, body: (c) => ({ name: "", trigger_type: "state_change", condition: { to_state: "completed" }, action: { title: "next" }, created_by: c.agent }), keep: (r, c) => void (c.triggerId = r.body.trigger_id ?? r.body.id) },
  { method: "listTriggers", http: "GET", template: "/intents/{id}/triggers", path: (c) => `/intents/${c.intentId}/triggers` },
  { method: "deleteTrigger", http: "DELETE", template: "/intents/{id}/triggers/{id}", path: (c) => `/intents/${c.intentId}/triggers/${c.triggerId}` },
  // Cryptographic identity (RFC-0018); the signatures are well formed but wrong: a 403, never a 400.
  { method: "registerIdentity", http: "POST", template: "/identity/register", path: () => "/identity/register", body: (c) => ({ agent_id: `${c.agent}-id`, public_key: c.publicKey, key_type: "ed25519" }) },
  { method: "verifyChallenge", http: "POST", template: "/identity/verify", path: () => "/identity/verify", body: (c) => ({ agent_id: `${c.agent}-id`, challenge: "not-the-challenge", signature: "A".repeat(86) }) },
  { method: "rotateKey", http: "POST", template: "/identity/{id}/rotate", path: (c) => `/identity/${c.agent}-id/rotate`, body: (c) => ({ new_public_key: c.publicKey, rotation_proof: "A".repeat(86) }) },
  // Verifiable event logs (RFC-0019), at the MCP server's paths
  { method: "getHashChain", http: "GET", template: "/intents/{id}/events/hashchain", path: (c) => `/intents/${c.intentId}/events/hashchain?from=1&to=3` },
  { method: "verifyInclusion", http: "GET", template: "/intents/{id}/events/{id}/proof", path: (c) => `/intents/${c.intentId}/events/${c.eventId}/proof`,
    answers: { status: 404, code: "EVENT_NOT_IN_CHECKPOINT", why: "no checkpoint covers the walk's fresh event yet (verifiable-logs.e2e proves one that is)" } },
  { method: "getCheckpoint", http: "GET", template: "/intents/{id}/events/checkpoints/{id}", path: (c) => `/intents/${c.intentId}/events/checkpoints/00000000-0000-4000-8000-000000000000`,
    answers: { status: 404, code: "CHECKPOINT_NOT_FOUND", why: "the walk names no checkpoint of the intent" } },
  { method: "getCheckpoint (latest)", http: "GET", template: "/intents/{id}/events/checkpoints/latest", path: (c) => `/intents/${c.intentId}/events/checkpoints/latest`,
    answers: { status: 404, code: "CHECKPOINT_NOT_FOUND", why: "the walk's intent has no checkpoint yet" } },
  // Distributed tracing (RFC-0020): this issue
  { method: "startTrace", http: "POST", template: "/intents/{id}/traces", path: (c) => `/intents/${c.intentId}/traces`, body: (c) => ({ trace_name: "walk", parent_trace_id: undefined, metadata: {}, started_by: c.agent }), keep: (r, c) => void (c.traceId = r.body.trace_id) },
  { method: "getTrace", http: "GET", template: "/intents/{id}/traces/{id}", path: (c) => `/intents/${c.intentId}/traces/${c.traceId}` },
  { method: "linkSpans", http: "POST", template: "/traces/{id}/spans", path: (c) => `/traces/${c.traceId}/spans`, body: (c) => ({ spans: [{ span_id: "s1", operation: "walk", status: "ok" }, { span_id: "s2", parent_span_id: "s1", operation: "step" }], linked_by: c.agent }) },
  // Federation (RFC-0022)
  { method: "getFederationStatus", http: "GET", template: "/federation/status", path: () => "/federation/status" },
  { method: "listFederatedAgents", http: "GET", template: "/federation/agents", path: () => "/federation/agents" },
  {
    method: "federationDispatch",
    http: "POST",
    template: "/federation/dispatch",
    path: () => "/federation/dispatch",
    body: (c) => ({ intent_id: c.intentId, agent_id: "remote-agent", trace_id: undefined }),
    specRefuses: { status: 400, code: "VALIDATION_FAILED", why: "RFC-0022 dispatch names its target_server (the reference server requires it too); the MCP server sends none" },
  },
  {
    method: "federationReceive",
    http: "POST",
    template: "/federation/receive",
    path: () => "/federation/receive",
    body: (c) => ({ dispatch_id: "d-1", intent: { title: "remote" }, agent_id: c.agent, source_server: "peer.example", trace_id: undefined }),
    specRefuses: { status: 403, code: "FORBIDDEN", why: "RFC-0022 receive is for peer servers: a federation key and an RFC 9421 signature (docs/federation.md)" },
  },
  // Retry policy and failures (RFC-0010)
  { method: "setRetryPolicy", http: "PUT", template: "/intents/{id}/retry-policy", path: (c) => `/intents/${c.intentId}/retry-policy`, body: () => ({ strategy: "exponential", max_retries: 3, base_delay_ms: 1000, max_delay_ms: 60000, fallback_agent_id: null, failure_threshold: 3 }) },
  { method: "getRetryPolicy", http: "GET", template: "/intents/{id}/retry-policy", path: (c) => `/intents/${c.intentId}/retry-policy` },
  { method: "recordFailure", http: "POST", template: "/intents/{id}/failures", path: (c) => `/intents/${c.intentId}/failures`, body: (c) => ({ agent_id: c.agent, attempt_number: 1, error_code: undefined, error_message: undefined, retry_scheduled_at: undefined, metadata: {} }) },
  { method: "getFailures", http: "GET", template: "/intents/{id}/failures", path: (c) => `/intents/${c.intentId}/failures?limit=10` },
];

/** Whether the catalogue serves the template: parameters match parameters, literals match literals. */
const norm = (template: string) => template.replace(/\{\w+\}/g, "{}");
const catalogued = (row: Row) => apiRoutes.some((route) => route.method.toUpperCase() === row.http && norm(route.path) === norm(row.template));
/** Served by the gateway outside the catalogue (signed federation traffic: services/gateway/src/federation-public.ts). */
const OUTSIDE_CATALOGUE = new Set(["POST /federation/receive"]);

let cluster: TestCluster;
const ctx = { agent: uniqueTag("mcp-walk") } as Ctx;
beforeAll(async () => {
  cluster = await startTestCluster();
  const { publicKey } = generateKeyPairSync("ed25519");
  ctx.publicKey = (publicKey.export({ format: "der", type: "spki" }) as Buffer).subarray(-32).toString("base64");
  const vault = await cluster.sdk().send("vaultsCreate", { body: { owner_id: ctx.agent, name: uniqueTag("walk-vault") } });
  expect(vault.status).toBe(201);
  ctx.vaultId = vault.data.id;
});
afterAll(async () => {
  await cluster?.stop();
});

describe("every REST call of the official MCP server (mcp-server/src/client.ts, 0.17.0)", () => {
  it("the table lists each client.ts method once, its templates as the file writes them", () => {
    const methods = new Set(rows.map((r) => r.method.replace(/ \(.*\)$/, "")));
    // The 75 methods of client.ts that call request(); memoryList and getCheckpoint have two paths each.
    expect(methods.size).toBe(75);
    for (const row of rows) expect(row.landsWith === undefined || !row.specRefuses, row.method).toBe(true);
  });

  for (const row of rows) {
    it(`${row.method}: ${row.http} ${row.template}${row.landsWith ? ` (lands with ${row.landsWith})` : ""}`, async () => {
      const served = catalogued(row) || OUTSIDE_CATALOGUE.has(`${row.http} ${row.template}`);
      const headers: Record<string, string> = { "X-Agent-ID": ctx.agent };
      if (row.ifMatch && ctx.intentId) headers["If-Match"] = String((await cluster.sdk().ops.intentsGet({ intent_id: ctx.intentId })).version);
      const res = await cluster.api(row.path(ctx), { key: "admin", method: row.http, headers, ...(row.body ? { body: json(row.body(ctx)) } : {}) });
      const seen = `${res.status} ${JSON.stringify(res.body)}`;
      if (!served) {
        // Not on this branch yet: it must be one of the rows that land elsewhere, and still unserved.
        expect(row.landsWith, `${row.method} is not in the catalogue: ${seen}`).toBeDefined();
        expect(res.status, seen).toBe(404);
        expect(res.body.code, seen).toBe("ROUTE_NOT_FOUND");
        return;
      }
      expect(res.body?.code, seen).not.toBe("ROUTE_NOT_FOUND");
      const exact = row.specRefuses ?? row.answers ?? row.gap;
      if (exact) {
        expect(res.status, `${exact.why}: ${seen}`).toBe(exact.status);
        expect(res.body.code, seen).toBe(exact.code);
        return;
      }
      expect(res.status, seen).not.toBe(400);
      expect(res.status, seen).toBeLessThan(500);
      row.keep?.(res, ctx);
    });
  }
});
