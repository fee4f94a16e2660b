import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ManualClock } from "@intentmesh/contracts";
import { parseAllowedNetworks, pinnedConnector } from "@intentmesh/ssrf";
import { startTestCluster, TEST_KEYS, type ApiResponse, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError } from "../support/e2e-helpers";
import { readBody, startLoopbackServer, tripwire, type LoopbackServer } from "../../libs/ssrf/test/support";

/**
 * RFC-0014 through the gateway, driven as the official clients drive it: every call of the
 * Python client (openintent/client.py) with its exact paths, bodies and headers (X-API-Key,
 * X-Agent-ID and Content-Type on every request, GET and DELETE included), and the MCP server's
 * three vault tools, and what crosses services (tool.invoked in an intent's log, costs, dormancy on
 * deregistration); the vault's own grant rules and outbound guard are tested in its lane
 * (services/vault/test/grants.service.test.ts). The tool is an HTTP server on 127.0.0.1, reached through an allow-list made
 * for this test (127.0.0.1/32 only); every outbound connect goes through a tripwire that refuses
 * anything but loopback.
 */

const SECRET = "sk_live_vault_e2e_0123456789abcdef";
const wire = tripwire(pinnedConnector);
let tool: LoopbackServer;
let cluster: TestCluster;
let clock: ManualClock;
/** What the tool received, per request: method, path and query, headers, body. */
const received: { method: string; url: string; headers: Record<string, unknown>; body: string }[] = [];

beforeAll(async () => {
  tool = await startLoopbackServer(async (req, res) => {
    const body = await readBody(req);
    received.push({ method: req.method!, url: req.url!, headers: { ...req.headers }, body });
    if (req.url?.startsWith("/fail")) {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: `bad key ${req.headers["x-api-key"] ?? req.headers.authorization}` }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    // A careless tool that echoes the credential back: the proxy must cut it out.
    res.end(JSON.stringify({ ok: true, path: req.url, echoed_key: req.headers["x-api-key"] ?? null, echoed_auth: req.headers.authorization ?? null, got: body ? JSON.parse(body) : null }));
  });
  clock = new ManualClock(new Date("2026-03-01T10:00:00.000Z"));
  cluster = await startTestCluster({ clock, vault: { proxy: { outbound: { allowedNetworks: parseAllowedNetworks(["127.0.0.1/32"]), connect: wire.connect } } } });
});

afterAll(async () => {
  await cluster?.stop();
  await tool?.close();
  // Every connect of the test went to loopback, or the guard let something through.
  expect(wire.tripped).toEqual([]);
});

type Key = keyof typeof TEST_KEYS;

/** The Python client's transport: the same three headers on every request, JSON in and out. */
function pythonClient(key: Key, agentId: string) {
  const headers = { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId, "Content-Type": "application/json" };
  const call = async (method: string, path: string, json?: unknown, params?: Record<string, string | number>): Promise<ApiResponse> => {
    const query = params ? `?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))}` : "";
    const res = await fetch(`${cluster.baseUrl}${path}${query}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  return {
    create_vault: (owner_id: string, name: string) => call("POST", "/api/v1/vaults", { owner_id, name }),
    get_vault: (id: string) => call("GET", `/api/v1/vaults/${id}`),
    create_credential: (vault_id: string, service: string, label: string, auth_type = "api_key", kwargs: Record<string, unknown> = {}) =>
      call("POST", "/api/v1/credentials", { vault_id, service, label, auth_type, ...kwargs }),
    get_credential: (id: string) => call("GET", `/api/v1/credentials/${id}`),
    create_tool_grant: (credential_id: string, agent_id: string, granted_by: string, scopes: string[] | null = null, kwargs: Record<string, unknown> = {}) =>
      call("POST", "/api/v1/grants", { credential_id, agent_id, granted_by, scopes: scopes ?? [], ...kwargs }),
    get_tool_grant: (id: string) => call("GET", `/api/v1/grants/${id}`),
    list_agent_grants: (agent: string) => call("GET", `/api/v1/agents/${agent}/grants`),
    revoke_grant: (id: string) => call("DELETE", `/api/v1/grants/${id}`),
    record_invocation: (grant_id: string, service: string, toolName: string, agent_id: string, kwargs: Record<string, unknown> = {}) =>
      call("POST", "/api/v1/invocations", { grant_id, service, tool: toolName, agent_id, ...kwargs }),
    list_invocations: (grant_id: string, limit = 50) => call("GET", `/api/v1/grants/${grant_id}/invocations`, undefined, { limit }),
    invoke_tool: (tool_name: string, agent_id: string, parameters: Record<string, unknown> | null = null, kwargs: Record<string, unknown> = {}) =>
      call("POST", "/api/v1/tools/invoke", { tool_name, agent_id, parameters: parameters ?? {}, ...kwargs }),
  };
}

/** The MCP server's client (mcp-server/src/client.ts): its headers, its paths, its bodies. */
function mcpClient(key: Key, agentId: string) {
  const headers = { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId, "Content-Type": "application/json" };
  const call = async (method: string, path: string, body?: unknown): Promise<ApiResponse> => {
    const res = await fetch(`${cluster.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  return {
    storeCredential: (p: { vault_id: string; credential_name: string; credential_type: string; metadata?: Record<string, unknown> }) =>
      call("POST", `/api/v1/vaults/${p.vault_id}/credentials`, { name: p.credential_name, credential_type: p.credential_type, metadata: p.metadata ?? {}, stored_by: agentId }),
    getCredential: (p: { vault_id: string; credential_name: string }) => call("GET", `/api/v1/vaults/${p.vault_id}/credentials/${p.credential_name}`),
    grantTool: (p: { intent_id: string; agent_id: string; tool_name: string; constraints?: Record<string, unknown> }) =>
      call("POST", `/api/v1/intents/${p.intent_id}/tools/grants`, { agent_id: p.agent_id, tool_name: p.tool_name, constraints: p.constraints ?? {}, granted_by: agentId }),
  };
}

const ok = (res: ApiResponse, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

/** A vault of the operator with one credential to the loopback tool; the secret sent as the other implementation's clients send it (metadata.api_key). */
async function stripeSetup(name: string, extra: Record<string, unknown> = {}) {
  const user = pythonClient("operator", "user-1");
  const vault = ok(await user.create_vault("user-1", name), 201);
  const credential = ok(
    await user.create_credential(vault.id, "stripe", `${name}-stripe`, "api_key", {
      scopes_available: ["charges.read", "charges.create", "refunds.create"],
      metadata: { environment: "test", api_key: SECRET, base_url: tool.url, auth: { location: "header", header_name: "X-API-Key" }, endpoints: { "charges.read": { path: "/charges", method: "GET", cost_cents: 2 } }, ...extra },
    }),
    201,
  );
  return { user, vault, credential };
}

describe("the Python client's vault calls (RFC-0014)", () => {
  it("create_vault, create_credential, get_vault, get_credential: the secret is sealed and never answered", async () => {
    const { user, vault, credential } = await stripeSetup("acme");
    expect(vault).toMatchObject({ owner_id: "user-1", name: "acme", credentials: [] });
    expect(credential).toMatchObject({ vault_id: vault.id, service: "stripe", label: "acme-stripe", auth_type: "api_key", status: "active", secret_fields: ["api_key"] });
    expect(credential.metadata).toEqual(expect.objectContaining({ environment: "test", base_url: tool.url }));
    expect(credential.metadata).not.toHaveProperty("api_key");
    const again = ok(await user.get_credential(credential.id));
    expect(JSON.stringify(again)).not.toContain(SECRET);
    expect(ok(await user.get_vault(vault.id)).credentials).toEqual([credential.id]);
    // At rest: nothing of the secret in any column of the credential row.
    const rows = await cluster.database.db.execute(`select row_to_json(c)::text as t from vault.credentials c where id = '${credential.id}'` as never);
    expect(JSON.stringify(rows)).not.toContain(SECRET);
    expect(JSON.stringify(rows)).not.toContain(Buffer.from(SECRET).toString("base64"));
  });

  it("another principal may neither read the vault nor grant from it", async () => {
    const { vault, credential } = await stripeSetup("private");
    const stranger = pythonClient("agent", "agent-1");
    expectError(await stranger.get_vault(vault.id), 403, "VAULT_ACCESS_DENIED");
    expectError(await stranger.get_credential(credential.id), 403, "VAULT_ACCESS_DENIED");
    expectError(await stranger.create_tool_grant(credential.id, "agent-1", "agent-1", ["charges.read"]), 403, "VAULT_ACCESS_DENIED");
  });

  it("create_tool_grant, get_tool_grant, list_agent_grants, invoke_tool, record_invocation, list_invocations, revoke_grant", async () => {
    const { user, credential } = await stripeSetup("flow");
    const grant = ok(await user.create_tool_grant(credential.id, "billing-1", "user-1", ["charges.read"], { constraints: { max_invocations_per_hour: 100 } }), 201);
    expect(grant).toMatchObject({ credential_id: credential.id, agent_id: "billing-1", granted_by: "user-1", scopes: ["charges.read"], status: "active", source: "direct", delegatable: false, delegation_depth: 0 });
    expect(ok(await user.get_tool_grant(grant.id)).id).toBe(grant.id);

    const agent = pythonClient("agent", "billing-1");
    const listed = ok(await agent.list_agent_grants("billing-1"));
    expect(Array.isArray(listed)).toBe(true);
    expect(listed.map((g: { id: string }) => g.id)).toContain(grant.id);

    received.length = 0;
    const result = ok(await agent.invoke_tool("stripe.charges.read", "billing-1", { charge_id: "ch_1" }));
    expect(result).toMatchObject({ tool_name: "stripe.charges.read", status: "success", grant_id: grant.id, service: "stripe", http_status: 200, cost: { amount_cents: 2 } });
    // The tool got the credential, as configured: header X-API-Key, GET with the parameters in the query.
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ method: "GET", url: "/charges?charge_id=ch_1" });
    expect(received[0]!.headers["x-api-key"]).toBe(SECRET);
    // The tool echoed it back; the agent never sees it.
    expect(result.result).toMatchObject({ ok: true, echoed_key: "[REDACTED]" });
    expect(JSON.stringify(result)).not.toContain(SECRET);

    clock.advance(1000);
    const recorded = ok(await agent.record_invocation(grant.id, "stripe", "charges.read", "billing-1", { parameters: { charge_id: "ch_2" }, status: "success", duration_ms: 12 }), 201);
    expect(recorded).toMatchObject({ grant_id: grant.id, tool: "charges.read", reported: true, status: "success" });
    const invocations = ok(await agent.list_invocations(grant.id));
    expect(invocations.map((i: { invocation_id: string }) => i.invocation_id)).toEqual([recorded.invocation_id, result.invocation_id]);
    expect(ok(await user.get_tool_grant(grant.id)).invocation_count).toBe(2);

    const revoked = ok(await user.revoke_grant(grant.id));
    expect(revoked).toMatchObject({ status: "revoked", grant_id: grant.id, grant: { status: "revoked" } });
    const refused = await agent.invoke_tool("stripe.charges.read", "billing-1", { charge_id: "ch_3" });
    expectError(refused, 403, "GRANT_REVOKED");
    expect(received).toHaveLength(1);
  });

  it("a tool invoked for an intent is in the intent's log as tool.invoked, and its cost in the intent's costs", async () => {
    const { user, credential } = await stripeSetup("ledger");
    const intent = await createIntent(cluster, { title: "billing run" });
    ok(await user.create_tool_grant(credential.id, "billing-2", "user-1", ["charges.read"], { context: { intent_id: intent.id } }), 201);
    const agent = pythonClient("agent", "billing-2");
    // The grant is bound to the intent: an invocation without context is for that intent.
    const result = ok(await agent.invoke_tool("charges.read", "billing-2", { charge_id: "ch_9" }));
    expect(result.context).toMatchObject({ intent_id: intent.id });
    await vi.waitFor(async () => {
      const events = await allEvents(cluster, intent.id);
      const invoked = events.find((e) => e.event_type === "tool.invoked")!;
      expect(invoked).toBeDefined();
      expect(invoked.payload).toMatchObject({ invocation_id: result.invocation_id, service: "stripe", tool: "charges.read", status: "success", parameters_summary: { charge_id: "ch_9" }, cost: { amount_cents: 2 } });
    });
    const costs = await cluster.sdk().ops.costsList({ intent_id: intent.id });
    expect(costs.costs).toHaveLength(1);
    expect(costs.costs[0]).toMatchObject({ agent_id: "billing-2", cost_type: "api_call", amount: 2, unit: "cents", provider: "stripe", metadata: { invocation_id: result.invocation_id, category: "external_tool" } });
    // Bound to that intent: another intent is refused, and nothing is written.
    const other = await createIntent(cluster, { title: "another" });
    expectError(await agent.invoke_tool("charges.read", "billing-2", {}, { context: { intent_id: other.id } }), 403, "GRANT_CONTEXT_MISMATCH");
  });

  it("a tool's error status is recorded as an error invocation, its echo of the key cut out", async () => {
    const { user, credential } = await stripeSetup("failing", { endpoints: { "charges.create": { path: "/fail", method: "POST" } } });
    ok(await user.create_tool_grant(credential.id, "billing-3", "user-1", ["charges.create"]), 201);
    const agent = pythonClient("agent", "billing-3");
    const result = ok(await agent.invoke_tool("charges.create", "billing-3", { amount: 100 }));
    expect(result).toMatchObject({ status: "error", http_status: 500, error: { code: "SERVICE_ERROR" } });
    expect(result.result.error).toBe("bad key [REDACTED]");
  });
});

describe("grant rules across services", () => {
  it("heartbeat rule 6: grants persist across re-registration and stay dormant while the agent is deregistered", async () => {
    const { user, credential } = await stripeSetup("dormancy");
    const id = "dormant-agent-1";
    const asAgent = cluster.sdk("agent", id);
    expect((await asAgent.send("agentsRegister", { body: { agent_id: id } })).status).toBe(201);
    const grant = ok(await user.create_tool_grant(credential.id, id, "user-1", ["charges.read"]), 201);
    const agent = pythonClient("agent", id);
    ok(await agent.invoke_tool("charges.read", id, {}));
    expect((await asAgent.send("agentsDeregister", { agent_id: id })).status).toBe(200);
    await vi.waitFor(async () => expect(ok(await user.get_tool_grant(grant.id))).toMatchObject({ status: "suspended", dormant: true }));
    expectError(await agent.invoke_tool("charges.read", id, {}), 403, "GRANT_DORMANT");
    expect((await asAgent.send("agentsRegister", { body: { agent_id: id } })).status).toBe(201);
    await vi.waitFor(async () => expect(ok(await user.get_tool_grant(grant.id))).toMatchObject({ status: "active", dormant: false }));
    ok(await agent.invoke_tool("charges.read", id, {}));
    expect(ok(await user.get_tool_grant(grant.id)).invocation_count).toBe(2);
  });

});

describe("the MCP server's vault tools", () => {
  it("openintent_store_credential, openintent_get_credential, openintent_grant_tool", async () => {
    const user = pythonClient("operator", "user-1");
    const vault = ok(await user.create_vault("user-1", "mcp"), 201);
    const mcp = mcpClient("operator", "mcp-admin");
    const stored = ok(
      await mcp.storeCredential({ vault_id: vault.id, credential_name: "search-api", credential_type: "bearer", metadata: { base_url: tool.url, token: SECRET, endpoints: { web_search: { path: "/search" } } } }),
      201,
    );
    expect(stored).toMatchObject({ label: "search-api", service: "search-api", auth_type: "bearer_token", secret_fields: ["token"] });
    const read = ok(await mcp.getCredential({ vault_id: vault.id, credential_name: "search-api" }));
    expect(read.id).toBe(stored.id);
    expect(JSON.stringify(read)).not.toContain(SECRET);
    expectError(await mcp.getCredential({ vault_id: vault.id, credential_name: "nope" }), 404, "CREDENTIAL_NOT_FOUND");

    const intent = await createIntent(cluster, { title: "research" });
    const grant = ok(await mcp.grantTool({ intent_id: intent.id, agent_id: "researcher-1", tool_name: "search-api", constraints: { max_invocations: 5 } }), 201);
    expect(grant).toMatchObject({ agent_id: "researcher-1", credential_id: stored.id, context: { intent_id: intent.id, tools: ["search-api"] }, constraints: { max_invocations: 5 } });
    received.length = 0;
    const result = ok(await pythonClient("agent", "researcher-1").invoke_tool("search-api", "researcher-1", { q: "x" }));
    expect(result.status).toBe("success");
    expect(received[0]).toMatchObject({ method: "POST", url: "/" });
    expect(received[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expectError(await mcp.grantTool({ intent_id: intent.id, agent_id: "researcher-1", tool_name: "no-such-tool" }), 404, "CREDENTIAL_NOT_FOUND");
    expectError(await mcp.grantTool({ intent_id: "00000000-0000-4000-8000-000000000000", agent_id: "researcher-1", tool_name: "search-api" }), 404, "INTENT_NOT_FOUND");
    expectError(await user.create_tool_grant(stored.id, "researcher-1", "user-1", [], { context: { intent_id: "00000000-0000-4000-8000-000000000000" } }), 404, "INTENT_NOT_FOUND");
  });
});
