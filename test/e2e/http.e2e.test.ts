import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { apiRoutes as routes } from "@intentmesh/contracts";
import { createIntent, expectError, TIMESTAMP, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";
import { registerAgents } from "../support/agents";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

/** Every REST endpoint of the gateway, with its path parameters filled in. */
function endpoints(intentId: string): { method: string; path: string }[] {
  const list = routes.map((route) => ({
    method: route.method.toUpperCase(),
    path: route.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === "intent_id" ? intentId : name === "agent_id" ? "agent-x" : UNKNOWN_ID)),
  }));
  list.push({ method: "GET", path: `/subscribe/intents/${intentId}` });
  return list;
}

describe("authentication: X-API-Key on every /api/v1 endpoint", () => {
  it("answers 401 UNAUTHORIZED {code, message, details} without a key and with an unknown key, on every endpoint and both prefixes", async () => {
    const intent = await createIntent(cluster);
    const all = endpoints(intent.id);
    expect(all.length).toBeGreaterThanOrEqual(16);
    for (const prefix of ["/api/v1", "/v1"]) {
      for (const { method, path } of all) {
        const body = method === "GET" || method === "DELETE" ? undefined : { title: "x", scope: "s", event_type: "x.y" };
        const missing = await cluster.api(`${prefix}${path}`, { method, body, key: null, headers: { "If-Match": "1" } });
        expect(missing.status, `${method} ${prefix}${path} without a key`).toBe(401);
        expectError(missing, 401, "UNAUTHORIZED");
        const unknown = await cluster.api(`${prefix}${path}`, { method, body, key: null, headers: { "X-API-Key": "not-a-valid-key-000000000000000", "If-Match": "1" } });
        expect(unknown.status, `${method} ${prefix}${path} with an unknown key`).toBe(401);
        expectError(unknown, 401, "UNAUTHORIZED");
      }
    }
    // Nothing was done on behalf of the unauthenticated calls.
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body).toMatchObject({ version: 1, state: {}, status: "active" });
    const log = await cluster.api(`/intents/${intent.id}/events`);
    expect(log.body.events.map((e: any) => e.event_type)).toEqual(["intent_created"]);
  });

  it("does not create an intent for an unauthenticated POST /intents", async () => {
    const tag = uniqueTag("unauth");
    const res = await cluster.api("/intents", { body: { title: "x", created_by: tag }, key: null });
    expectError(res, 401, "UNAUTHORIZED");
    const list = await cluster.api(`/intents?created_by=${tag}`);
    expect(list.status).toBe(200);
    expect(list.body.intents).toEqual([]);
  });

  it("accepts every configured key; a peer server's key (role federation) reaches only the federation routes", async () => {
    for (const key of Object.keys(TEST_KEYS) as (keyof typeof TEST_KEYS)[]) {
      const res = await cluster.api("/intents?limit=1", { key });
      if (key === "federation") expectError(res, 403, "FORBIDDEN");
      else expect(res.status, key).toBe(200);
    }
    expect((await cluster.api("/federation/status", { key: "federation" })).status).toBe(200);
    expectError(await cluster.api(`/subscribe/intents/${UNKNOWN_ID}`, { key: "federation" }), 403, "FORBIDDEN");
  });

  it("needs no key for /healthz, /readyz, /openapi.json, /docs and the discovery document", async () => {
    const health = await cluster.api("/healthz", { key: null });
    expect(health.status).toBe(200);

    const ready = await cluster.api("/readyz", { key: null });
    expect(ready.status).toBe(200);
    expect(ready.body.services.intents.database).toBe("ok");

    const openapi = await cluster.api("/openapi.json", { key: null });
    expect(openapi.status).toBe(200);
    expect(openapi.body.paths["/api/v1/intents"]).toBeDefined();
    expect(openapi.body.paths["/api/v1/intents"].post).toBeDefined();
    // Every REST route and every SSE stream is described, the registry's included.
    for (const path of ["/api/v1/agents/{agent_id}/heartbeat", "/api/v1/pools/{role_id}", "/api/v1/subscribe/agents/{agent_id}", "/api/v1/subscribe/portfolios/{portfolio_id}"]) {
      expect(openapi.body.paths[path], path).toBeDefined();
    }
    expect(openapi.body.paths["/api/v1/intents/{intent_id}"]).toBeDefined();
    for (const path of ["/api/v1/federation/dispatch", "/api/v1/federation/receive", "/api/v1/federation/callbacks/{dispatch_id}", "/.well-known/did.json"]) {
      expect(openapi.body.paths[path], path).toBeDefined();
    }

    const docs = await fetch(`${cluster.baseUrl}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-type")).toMatch(/text\/html/);
    expect((await docs.text()).toLowerCase()).toContain("<html");

    const discovery = await cluster.api("/.well-known/openintent.json", { key: null });
    expect(discovery.status).toBe(200);
    expect(discovery.body.capabilities).toBeTypeOf("object");
    expect(discovery.body.capabilities).not.toBeNull();
    expect(Array.isArray(discovery.body.rfcs)).toBe(true);
    expect(discovery.body.rfcs.length).toBeGreaterThan(0);
    // What it announces matches what is served: the registry, portfolios and their streams.
    expect(discovery.body.capabilities.agent_registry).toMatchObject({ heartbeats: true, drain: true });
    expect(discovery.body.capabilities.subscriptions.streams).toEqual(["intents", "portfolios", "agents", "channels"]);
    expect(discovery.body.spec_parts).toEqual(expect.arrayContaining(["2.15", "3.4", "4.9", "2.5", "2.6", "2.7", "2.8", "2.12", "2.13", "2.14", "4.7", "4.8"]));
  });

  it("runs the federation service disabled unless configured: ready, not announced, status and agents say so, the rest 404 FEDERATION_DISABLED", async () => {
    const ready = await cluster.api("/readyz", { key: null });
    expect(ready.body.services.federation).toMatchObject({ service: "federation", database: "ok", enabled: false });
    const discovery = await cluster.api("/.well-known/openintent.json", { key: null });
    expect(discovery.body.capabilities.federation).toBe(false);
    expect(discovery.body.spec_parts).not.toContain("4.11");
    for (const path of ["/.well-known/openintent-federation.json", "/.well-known/did.json"]) {
      expectError(await cluster.api(path, { key: null }), 404, "FEDERATION_DISABLED");
    }
    // Status and agents answer, as the other implementation does and the official clients expect (CLIENTS.md, federation).
    const status = await cluster.api("/federation/status");
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ enabled: false, server_did: null, trust_policy: "allowlist", peer_count: 0, active_dispatches: 0, total_dispatches: 0, total_received: 0 });
    const agents = await cluster.api("/federation/agents", { key: "agent" });
    expect(agents.status).toBe(200);
    expect(agents.body).toMatchObject({ agents: [], has_more: false });
    expectError(await cluster.api("/federation/dispatch", { body: { intent_id: UNKNOWN_ID, target_server: "https://peer.example.org" } }), 404, "FEDERATION_DISABLED");
    // Receive and callbacks ask for a peer's key first, disabled or not (SPEC 5.1); with one, federation is off.
    expectError(await cluster.api("/api/v1/federation/receive", { body: {}, key: null }), 401, "UNAUTHORIZED");
    expectError(await cluster.api("/api/v1/federation/receive", { body: {}, key: "federation" }), 404, "FEDERATION_DISABLED");
    expectError(await cluster.api(`/api/v1/federation/callbacks/${UNKNOWN_ID}`, { body: {}, key: "federation" }), 404, "FEDERATION_DISABLED");
    // The API key is still required for the operator routes.
    expectError(await cluster.api("/federation/status", { key: null }), 401, "UNAUTHORIZED");
  });
});

describe("/v1 is an alias of /api/v1", () => {
  it("serves the same resources under both prefixes", async () => {
    const created = await cluster.api("/v1/intents", { body: { title: "through the alias" } });
    expect(created.status).toBe(201);
    const viaApi = await cluster.api(`/api/v1/intents/${created.body.id}`);
    const viaAlias = await cluster.api(`/v1/intents/${created.body.id}`);
    expect(viaApi.status).toBe(200);
    expect(viaAlias.status).toBe(200);
    expect(viaAlias.body).toEqual(viaApi.body);
    const patched = await cluster.api(`/v1/intents/${created.body.id}/state`, { body: [{ op: "set", path: "/a", value: 1 }], headers: { "If-Match": "1" } });
    expect(patched.status).toBe(200);
    const after = await cluster.api(`/api/v1/intents/${created.body.id}`);
    expect(after.body).toMatchObject({ state: { a: 1 }, version: 2 });
  });
});

describe("request bodies", () => {
  it("reads an empty application/json body as {}: POST /intents answers 400 VALIDATION_FAILED naming title", async () => {
    const res = await cluster.api("/intents", { method: "POST", rawBody: "", headers: { "Content-Type": "application/json" } });
    expectError(res, 400, "VALIDATION_FAILED");
    expect(res.body.message).toContain("title");
  });

  it("reads an empty application/json body as {}: POST /intents/{id}/leases answers 400 because scope is missing, not a JSON error", async () => {
    const intent = await createIntent(cluster);
    const res = await cluster.api(`/intents/${intent.id}/leases`, { method: "POST", rawBody: "", headers: { "Content-Type": "application/json" } });
    expect(res.status).toBe(400);
    expect(res.body.code).not.toBe("INVALID_JSON");
    expectError(res, 400, "VALIDATION_FAILED");
    expect(JSON.stringify(res.body)).toContain("scope");
  });

  it("answers malformed JSON with 400 INVALID_JSON", async () => {
    const res = await cluster.api("/intents", { method: "POST", rawBody: '{"title": "x",', headers: { "Content-Type": "application/json" } });
    expectError(res, 400, "INVALID_JSON");
  });

  it("answers an unknown route with 404 ROUTE_NOT_FOUND, under the API prefix and outside it", async () => {
    const inside = await cluster.api("/api/v1/no-such-thing");
    expectError(inside, 404, "ROUTE_NOT_FOUND");
    const outside = await cluster.api("/api/v2/intents", { key: "admin" });
    expectError(outside, 404, "ROUTE_NOT_FOUND");
    const wrongMethod = await cluster.api("/api/v1/intents", { method: "PUT", body: { title: "x" } });
    expectError(wrongMethod, 404, "ROUTE_NOT_FOUND");
  });

  describe("with a body limit of 1kb", () => {
    let small: TestCluster;
    beforeAll(async () => {
      small = await startTestCluster({ bodyLimit: "1kb" });
    });
    afterAll(async () => {
      await small?.stop();
    });

    it("answers a body over the limit with 413 PAYLOAD_TOO_LARGE and creates nothing; a body under it passes", async () => {
      const tag = uniqueTag("big");
      const big = await small.api("/intents", { body: { title: "big", created_by: tag, description: "x".repeat(4096) } });
      expectError(big, 413, "PAYLOAD_TOO_LARGE");
      const list = await small.api(`/intents?created_by=${tag}`);
      expect(list.body.intents).toEqual([]);

      const fits = await small.api("/intents", { body: { title: "small", created_by: tag, description: "x".repeat(200) } });
      expect(fits.status).toBe(201);
      // The default cluster (1mb) takes the same large body.
      const sameOnDefault = await cluster.api("/intents", { body: { title: "big", description: "x".repeat(4096) } });
      expect(sameOnDefault.status).toBe(201);
    });
  });
});

describe("If-Match and ETag", () => {
  it("accepts If-Match as 3, \"3\" and W/\"3\"", async () => {
    const intent = await createIntent(cluster);
    const forms = ["1", '"2"', 'W/"3"'];
    for (const [i, form] of forms.entries()) {
      const res = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: `/k${i}`, value: i }], headers: { "If-Match": form } });
      expect(res.status, `If-Match: ${form} -> ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.version).toBe(i + 2);
    }
    const moved = await cluster.api(`/intents/${intent.id}/status`, { body: { status: "blocked" }, headers: { "If-Match": 'W/"4"' } });
    expect(moved.status).toBe(200);
    expect(moved.body.version).toBe(5);
  });

  it("refuses an If-Match that is not a version with 400, changing nothing", async () => {
    const intent = await createIntent(cluster);
    const res = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/a", value: 1 }], headers: { "If-Match": "abc" } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: expect.any(String), message: expect.any(String), details: expect.any(Object) });
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body).toMatchObject({ version: 1, state: {} });
  });

  it("sends the version as a quoted ETag on create, get, state and status", async () => {
    const created = await cluster.api("/intents", { body: { title: "etag", status: "active" } });
    expect(created.headers.get("etag")).toBe('"1"');
    const id = created.body.id as string;
    const got = await cluster.api(`/intents/${id}`);
    expect(got.headers.get("etag")).toBe('"1"');
    const patched = await cluster.api(`/intents/${id}/state`, { body: [{ op: "set", path: "/a", value: 1 }], headers: { "If-Match": "1" } });
    expect(patched.headers.get("etag")).toBe('"2"');
    const moved = await cluster.api(`/intents/${id}/status`, { body: { status: "blocked" }, headers: { "If-Match": "2" } });
    expect(moved.headers.get("etag")).toBe('"3"');
    const again = await cluster.api(`/intents/${id}`);
    expect(again.headers.get("etag")).toBe('"3"');
    expect(again.body.version).toBe(3);
  });
});

describe("timestamps", () => {
  it("writes every timestamp as ISO 8601 UTC with milliseconds and +00:00", async () => {
    const intent = await createIntent(cluster);
    expect(intent.created_at).toMatch(TIMESTAMP);
    expect(intent.updated_at).toMatch(TIMESTAMP);
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body.created_at).toMatch(TIMESTAMP);
    expect(read.body.updated_at).toMatch(TIMESTAMP);

    const event = await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "note.added", payload: {} } });
    expect(event.body.created_at).toMatch(TIMESTAMP);
    const log = await cluster.api(`/intents/${intent.id}/events`);
    for (const e of log.body.events) expect(e.created_at).toMatch(TIMESTAMP);

    const assigned = await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: "agent-ts" } });
    expect(assigned.body.assigned_at).toMatch(TIMESTAMP);

    await registerAgents(cluster, ["agent-ts"], "admin");
    const lease = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "ts", ttl_seconds: 60 }, headers: { "X-Agent-ID": "agent-ts" } });
    expect(lease.status).toBe(201);
    expect(lease.body.acquired_at).toMatch(TIMESTAMP);
    expect(lease.body.expires_at).toMatch(TIMESTAMP);
    const released = await cluster.api(`/intents/${intent.id}/leases/${lease.body.id}`, { method: "DELETE", headers: { "X-Agent-ID": "agent-ts" } });
    expect(released.body.released_at).toMatch(TIMESTAMP);
  });
});

describe("error bodies", () => {
  it("always carry {code, message, details}; a version 409 carries current_version at the top level", async () => {
    const intent = await createIntent(cluster);
    await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/a", value: 1 }], headers: { "If-Match": "1" } });

    expectError(await cluster.api("/intents", { key: null }), 401, "UNAUTHORIZED");
    expectError(await cluster.api("/intents", { body: { title: "" } }), 400, "VALIDATION_FAILED");
    expectError(await cluster.api("/intents", { body: { title: "x", unknown_field: 1 } }), 400, "VALIDATION_FAILED");
    expectError(await cluster.api(`/intents/${UNKNOWN_ID}`), 404, "INTENT_NOT_FOUND");
    expectError(await cluster.api("/api/v1/nowhere"), 404, "ROUTE_NOT_FOUND");
    expectError(await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/b", value: 1 }] }), 428, "PRECONDITION_REQUIRED");
    expectError(await cluster.api(`/intents/${intent.id}/status`, { body: { status: "draft" }, headers: { "If-Match": "2" } }), 409, "INVALID_TRANSITION");

    const stale = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/b", value: 1 }], headers: { "If-Match": "1" } });
    expectError(stale, 409, "VERSION_MISMATCH");
    expect(stale.body.current_version).toBe(2);

    const staleStatus = await cluster.api(`/intents/${intent.id}/status`, { body: { status: "blocked" }, headers: { "If-Match": "7" } });
    expectError(staleStatus, 409, "VERSION_MISMATCH");
    expect(staleStatus.body.current_version).toBe(2);
  });
});

describe("unknown intents on every sub-resource", () => {
  const subResources = (id: string) => [
    { method: "GET", path: `/intents/${id}` },
    { method: "POST", path: `/intents/${id}/state`, body: [{ op: "set", path: "/a", value: 1 }], headers: { "If-Match": "1" } },
    { method: "POST", path: `/intents/${id}/status`, body: { status: "blocked" }, headers: { "If-Match": "1" } },
    { method: "GET", path: `/intents/${id}/events` },
    { method: "GET", path: `/intents/${id}/events?event_type=nothing.here&limit=5` },
    { method: "POST", path: `/intents/${id}/events`, body: { event_type: "note.added", payload: {} } },
    { method: "GET", path: `/intents/${id}/agents` },
    { method: "POST", path: `/intents/${id}/agents`, body: { agent_id: "agent-x" } },
    { method: "DELETE", path: `/intents/${id}/agents/agent-x` },
    { method: "GET", path: `/intents/${id}/leases` },
    { method: "GET", path: `/intents/${id}/leases?active=true` },
    { method: "POST", path: `/intents/${id}/leases`, body: { scope: "research", ttl_seconds: 60 } },
    { method: "GET", path: `/intents/${id}/leases/${UNKNOWN_ID}` },
    { method: "POST", path: `/intents/${id}/leases/${UNKNOWN_ID}/renew`, body: { ttl_seconds: 60 } },
    { method: "DELETE", path: `/intents/${id}/leases/${UNKNOWN_ID}` },
    { method: "GET", path: `/subscribe/intents/${id}` },
  ];

  it("answers 404 INTENT_NOT_FOUND for an unknown id, never 200 with an empty list", async () => {
    for (const r of subResources(UNKNOWN_ID)) {
      const res = await cluster.api(r.path, { method: r.method, body: r.body, headers: r.headers });
      expect({ status: res.status, code: res.body?.code }, `${r.method} ${r.path}`).toEqual({ status: 404, code: "INTENT_NOT_FOUND" });
      expectError(res, 404, "INTENT_NOT_FOUND");
    }
  });

  it("answers 404 for a malformed id", async () => {
    for (const r of subResources("not-a-uuid")) {
      const res = await cluster.api(r.path, { method: r.method, body: r.body, headers: r.headers });
      expect({ status: res.status, code: res.body?.code }, `${r.method} ${r.path}`).toEqual({ status: 404, code: "INTENT_NOT_FOUND" });
    }
  });
});
