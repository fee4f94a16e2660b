/**
 * GET /.well-known/openintent.json: what this server supports, so clients and peers can adapt.
 * `spec_parts` names the parts of the specification implemented so far; it grows with each service.
 */
export function discoveryDocument(version: string, options: { federation?: boolean } = {}) {
  return {
    protocol: "openintent",
    server: "intentmesh",
    version,
    api: { base_path: "/api/v1", aliases: ["/v1"], docs: "/docs", openapi: "/openapi.json" },
    authentication: { scheme: "api_key", header: "X-API-Key" },
    capabilities: {
      intents: true,
      state_patches: { ops: ["append", "set", "remove"], pointer: "RFC 6901", atomic: true },
      optimistic_concurrency: { request_header: "If-Match", response_header: "ETag" },
      event_log: { append_only: true, pagination: "cursor" },
      leases: { scopes: "* or a state path", derived_status: ["ACTIVE", "RELEASED", "EXPIRED"] },
      assignments: true,
      costs: { budgets: ["max_total_cents", "max_per_agent_cents", "max_per_call_cents", "alert_threshold_percent"] },
      attachments: { storage: "reference only", schemes: ["http", "https", "s3"] },
      retry_policies: { strategies: ["none", "fixed", "exponential", "linear"], fallback_agents: true },
      portfolios: true,
      subscriptions: { transport: "sse", resume: "Last-Event-ID", keepalive: "ping comment", streams: ["intents", "portfolios", "agents", "channels"] },
      suspension: { response_types: ["choice", "confirm", "text", "form"], server_timeouts: true, retry_strategies: ["fixed", "linear", "exponential"], config: "/api/v1/server/config" },
      governance: { policies: true, approvals: true, engagement_decisions: true },
      channels: { message_types: ["request", "response", "notify", "broadcast"], member_policies: ["intent", "explicit"], addressing: ["agent", "role:<role_id>", "*"], audit: true, implicit_creation: "/api/v1/intents/{intent_id}/channels/{name}/messages" },
      memory: { types: ["working", "episodic", "semantic"], query: "/api/v1/memory", batch: true },
      agent_registry: { heartbeats: true, lifecycle: ["active", "draining", "unhealthy", "dead", "deregistered"], drain: true, pools: true },
      federation: options.federation
        ? {
            document: "/.well-known/openintent-federation.json",
            did: "/.well-known/did.json",
            identity: "did:web",
            signatures: "RFC 9421 (ed25519, Content-Digest RFC 9530)",
            trust_policies: ["open", "allowlist", "trustless"],
            endpoints: ["/api/v1/federation/status", "/api/v1/federation/agents", "/api/v1/federation/dispatch", "/api/v1/federation/receive"],
          }
        : false,
    },
    spec_parts: [
      ...["2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11", "2.15", "2.12", "2.13", "2.14", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "4.1", "4.2", "4.3", "4.4", "4.5", "4.6", "4.7", "4.8", "4.9", "4.10", "5", "7", "8", "9"],
      ...(options.federation ? ["2.16", "4.11", "5.7"] : []),
    ],
    rfcs: [
      "https://www.rfc-editor.org/rfc/rfc6901",
      "https://www.rfc-editor.org/rfc/rfc8259",
      "https://www.rfc-editor.org/rfc/rfc9110",
      "https://www.rfc-editor.org/rfc/rfc3339",
      "https://www.rfc-editor.org/rfc/rfc8615",
      "https://html.spec.whatwg.org/multipage/server-sent-events.html",
      ...(options.federation ? ["https://www.rfc-editor.org/rfc/rfc9421", "https://www.rfc-editor.org/rfc/rfc9530", "https://w3c-ccg.github.io/did-method-web/"] : []),
    ],
  };
}
