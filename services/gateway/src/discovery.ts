/**
 * GET /.well-known/openintent.json: what this server supports, so clients and peers can adapt.
 * `spec_parts` names the parts of the specification implemented so far; it grows with each service.
 */
export function discoveryDocument(version: string) {
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
      subscriptions: { transport: "sse", resume: "Last-Event-ID", keepalive: "ping comment", streams: ["intents"] },
      suspension: false,
      governance: false,
      channels: false,
      memory: false,
      agent_registry: false,
      federation: false,
    },
    spec_parts: ["2.1", "2.2", "2.3", "2.4", "3.1", "4.1", "4.10", "5", "7", "9"],
    rfcs: [
      "https://www.rfc-editor.org/rfc/rfc6901",
      "https://www.rfc-editor.org/rfc/rfc8259",
      "https://www.rfc-editor.org/rfc/rfc9110",
      "https://www.rfc-editor.org/rfc/rfc3339",
      "https://www.rfc-editor.org/rfc/rfc8615",
      "https://html.spec.whatwg.org/multipage/server-sent-events.html",
    ],
  };
}
