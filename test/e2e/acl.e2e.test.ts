import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { allEvents, expectError, expectRejected, statusOf } from "../support/e2e-helpers";

/**
 * Access control (RFC-0011) through the gateway: the official Python client's eight calls with
 * exactly the bodies it sends (client.py get_acl ... deny_access_request) and what its models
 * parse (models.py IntentACL, ACLEntry, AccessRequest), then the enforcement.
 */
let cluster: TestCluster;
const clock = new ManualClock(new Date());
beforeAll(async () => {
  cluster = await startTestCluster({ clock });
});
afterAll(async () => {
  await cluster?.stop();
});

/** Python 3.10's datetime.fromisoformat: an explicit offset, no `Z`. */
const PY_ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6})?[+-]\d\d:\d\d$/;

/** One client session: the Python client's httpx session with its default headers (X-Agent-ID on every call). */
function pythonClient(agentId: string, key: keyof typeof TEST_KEYS = "agent") {
  const headers = { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId, "Content-Type": "application/json" };
  const call = async (method: string, path: string, json?: unknown) => {
    const res = await fetch(`${cluster.baseUrl}/api/v1${path}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : {}, text };
  };
  return {
    agentId,
    createIntent: (title: string) => call("POST", "/intents", { title, description: "", constraints: {}, state: {} }),
    getIntent: (id: string) => call("GET", `/intents/${id}`),
    getAcl: (id: string) => call("GET", `/intents/${id}/acl`),
    setAcl: (id: string, defaultPolicy: string, entries: unknown[] = []) => call("PUT", `/intents/${id}/acl`, { default_policy: defaultPolicy, entries }),
    grantAccess: (id: string, principalId: string, opts: { principal_type?: string; permission?: string; reason?: string; expires_at?: string } = {}) => {
      const payload: Record<string, unknown> = { principal_id: principalId, principal_type: opts.principal_type ?? "agent", permission: opts.permission ?? "read" };
      if (opts.reason) payload.reason = opts.reason;
      if (opts.expires_at) payload.expires_at = opts.expires_at;
      return call("POST", `/intents/${id}/acl/entries`, payload);
    },
    revokeAccess: (id: string, entryId: string) => call("DELETE", `/intents/${id}/acl/entries/${entryId}`),
    requestAccess: (id: string, principalId: string, opts: { principal_type?: string; permission?: string; reason?: string; capabilities?: string[] } = {}) => {
      const payload: Record<string, unknown> = { principal_id: principalId, principal_type: opts.principal_type ?? "agent", requested_permission: opts.permission ?? "write", reason: opts.reason ?? "" };
      if (opts.capabilities?.length) payload.capabilities = opts.capabilities;
      return call("POST", `/intents/${id}/access-requests`, payload);
    },
    listAccessRequests: (id: string) => call("GET", `/intents/${id}/access-requests`),
    approveAccessRequest: (id: string, requestId: string, opts: { permission?: string; expires_at?: string; reason?: string } = {}) => {
      const payload: Record<string, unknown> = { decided_by: agentId };
      if (opts.permission) payload.permission = opts.permission;
      if (opts.expires_at) payload.expires_at = opts.expires_at;
      if (opts.reason) payload.reason = opts.reason;
      return call("POST", `/intents/${id}/access-requests/${requestId}/approve`, payload);
    },
    denyAccessRequest: (id: string, requestId: string, reason?: string) => {
      const payload: Record<string, unknown> = { decided_by: agentId };
      if (reason) payload.reason = reason;
      return call("POST", `/intents/${id}/access-requests/${requestId}/deny`, payload);
    },
    appendEvent: (id: string) => call("POST", `/intents/${id}/events`, { event_type: "comment", actor: agentId, payload: { text: "hi" } }),
  };
}

/** ACLEntry.from_dict: principal_id required; a Permission value; parseable times. */
function expectPythonEntry(entry: any): void {
  expect(typeof entry.id).toBe("string");
  expect(typeof entry.principal_id).toBe("string");
  expect(["read", "write", "admin"]).toContain(entry.permission);
  expect(typeof entry.granted_by).toBe("string");
  expect(entry.granted_at).toMatch(PY_ISO);
  if (entry.expires_at) expect(entry.expires_at).toMatch(PY_ISO);
}

/** IntentACL.from_dict: an AccessPolicy value, entries parsed each. */
function expectPythonAcl(acl: any, intentId: string): void {
  expect(acl.intent_id).toBe(intentId);
  expect(["open", "closed"]).toContain(acl.default_policy);
  for (const entry of acl.entries) expectPythonEntry(entry);
}

/** AccessRequest.from_dict: principal_id required; Permission and AccessRequestStatus values; parseable times. */
function expectPythonRequest(request: any): void {
  expect(typeof request.id).toBe("string");
  expect(typeof request.principal_id).toBe("string");
  expect(["read", "write", "admin"]).toContain(request.requested_permission);
  expect(["pending", "approved", "denied"]).toContain(request.status);
  expect(Array.isArray(request.capabilities)).toBe(true);
  expect(request.created_at).toMatch(PY_ISO);
  if (request.decided_at) expect(request.decided_at).toMatch(PY_ISO);
}

/** A refusal as the client's _handle_response sees it: the status, and our code in the body. */
function expectRefused(res: { status: number; body: any; text?: string }, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.body.code).toBe(code);
}

/** Python's datetime.isoformat() of an aware UTC datetime. */
const pyIso = (date: Date) => date.toISOString().replace("Z", "+00:00");

describe("the Python client's access-control calls", () => {
  it("get_acl, set_acl, grant_access, revoke_access: each sent as the client sends it, each answer parsed as it parses it", async () => {
    const owner = pythonClient("writer-a");
    const reader = pythonClient("reader-b", "other");
    const created = await owner.createIntent("acl via the client");
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    // An intent without an ACL: open to everyone, as before.
    const initial = await owner.getAcl(id);
    expect(initial.status).toBe(200);
    expectPythonAcl(initial.body, id);
    expect(initial.body).toMatchObject({ default_policy: "open", default_permission: "admin", owner: null, entries: [] });
    expect((await reader.getIntent(id)).status).toBe(200);

    // set_acl(intent_id, AccessPolicy.CLOSED, entries=[...]): the caller's key becomes the owner.
    const set = await owner.setAcl(id, "closed", [{ principal_id: "reader-b", principal_type: "agent", permission: "read" }]);
    expect(set.status, set.text).toBe(200);
    expectPythonAcl(set.body, id);
    expect(set.body).toMatchObject({ default_policy: "closed", owner: "agent-1", entries: [{ principal_id: "reader-b", permission: "read", granted_by: "writer-a" }] });

    // Written back as get_acl answered it (ACLEntry.to_dict), nothing changes but the version.
    const again = await owner.setAcl(id, "closed", set.body.entries.map((e: any) => ({ id: e.id, principal_id: e.principal_id, principal_type: e.principal_type, permission: e.permission, granted_by: e.granted_by, granted_at: e.granted_at, expires_at: e.expires_at, reason: e.reason })));
    expect(again.status, again.text).toBe(200);
    expect(again.body.entries).toEqual(set.body.entries);
    expect(again.body.version).toBe(set.body.version + 1);

    // reader-b reads, and may not write.
    expect((await reader.getIntent(id)).status).toBe(200);
    const refused = await reader.appendEvent(id);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: "INTENT_ACCESS_DENIED", details: { needed: "write", held: "read" } });

    // grant_access(intent_id, "reader-b", permission=Permission.WRITE, reason=..., expires_at=datetime)
    const expires = new Date(clock.now().getTime() + 3_600_000);
    const granted = await owner.grantAccess(id, "reader-b", { permission: "write", reason: "needs to log progress", expires_at: pyIso(expires) });
    expect(granted.status, granted.text).toBe(201);
    expectPythonEntry(granted.body);
    expect(granted.body).toMatchObject({ principal_id: "reader-b", principal_type: "agent", permission: "write", reason: "needs to log progress", expires_at: pyIso(expires) });
    // One entry per principal: the grant replaced the read entry, keeping its id.
    expect(granted.body.id).toBe(set.body.entries[0].id);
    expect((await reader.appendEvent(id)).status).toBe(201);

    // A naive datetime's isoformat() (no offset) is read as UTC.
    const naive = await owner.grantAccess(id, "auditor", { expires_at: expires.toISOString().replace("Z", "") });
    expect(naive.status, naive.text).toBe(201);
    expect(naive.body.expires_at).toBe(pyIso(expires));

    // revoke_access: 204 and no body; the next request is refused.
    const revoked = await owner.revokeAccess(id, granted.body.id);
    expect(revoked.status).toBe(204);
    expect(revoked.text).toBe("");
    expectRefused(await reader.appendEvent(id), 403, "INTENT_ACCESS_DENIED");
    expect((await reader.getIntent(id)).status).toBe(403);
    expect((await owner.revokeAccess(id, granted.body.id)).status).toBe(404);

    // Only admins of the intent see or change its ACL.
    expectRefused(await reader.getAcl(id), 403, "INTENT_ACCESS_DENIED");

    const types = (await allEvents(cluster, id)).map((e) => e.event_type);
    expect(types).toEqual(expect.arrayContaining(["access_granted", "access_revoked"]));
    const events = await allEvents(cluster, id);
    expect(events.find((e) => e.event_type === "access_granted" && e.payload.action === "acl_set")).toMatchObject({ actor: "writer-a", payload: { default_policy: "closed" } });
    expect(events.find((e) => e.event_type === "access_revoked")).toMatchObject({ actor: "writer-a", payload: { entry_id: granted.body.id, principal_id: "reader-b", permission: "write" } });
  });

  it("request_access, list_access_requests, approve_access_request, deny_access_request", async () => {
    const owner = pythonClient("owner-e");
    const outsider = pythonClient("outsider-f", "other");
    const id = (await owner.createIntent("requests via the client")).body.id as string;
    expect((await owner.setAcl(id, "closed")).status).toBe(200);
    expect((await outsider.getIntent(id)).status).toBe(403);

    // request_access works without any access; capabilities only when given.
    const asked = await outsider.requestAccess(id, "outsider-f", { permission: "write", reason: "I can summarise", capabilities: ["summarise"] });
    expect(asked.status, asked.text).toBe(201);
    expectPythonRequest(asked.body);
    expect(asked.body).toMatchObject({ intent_id: id, principal_id: "outsider-f", principal_type: "agent", requested_permission: "write", status: "pending", capabilities: ["summarise"], requested_by: "agent-2" });
    // ... for itself only.
    expectRefused(await outsider.requestAccess(id, "someone-else"), 403, "FORBIDDEN");
    const second = await outsider.requestAccess(id, "outsider-f", { permission: "read" });
    expect(second.status).toBe(201);
    expect(second.body.capabilities).toEqual([]);

    // list_access_requests: data.get("access_requests", data); the owner sees all, the asker its own.
    const listed = await owner.listAccessRequests(id);
    expect(listed.status).toBe(200);
    expect(listed.body.access_requests.map((r: any) => r.id)).toEqual([asked.body.id, second.body.id]);
    for (const request of listed.body.access_requests) expectPythonRequest(request);
    const own = await outsider.listAccessRequests(id);
    expect(own.body.access_requests).toHaveLength(2);
    expect((await pythonClient("nobody-g", "operator").listAccessRequests(id)).body.access_requests).toEqual([]);

    // approve_access_request(permission=READ, expires_at=...): the asker gets read, not the write it asked for.
    const expires = new Date(clock.now().getTime() + 600_000);
    const approved = await owner.approveAccessRequest(id, asked.body.id, { permission: "read", expires_at: pyIso(expires), reason: "read first" });
    expect(approved.status, approved.text).toBe(200);
    expectPythonRequest(approved.body);
    expect(approved.body).toMatchObject({ status: "approved", decided_by: "owner-e", decision_reason: "read first" });
    expect((await outsider.getIntent(id)).status).toBe(200);
    expect((await outsider.appendEvent(id)).status).toBe(403);
    const acl = await owner.getAcl(id);
    expect(acl.body.entries).toEqual([expect.objectContaining({ id: approved.body.entry_id, principal_id: "outsider-f", permission: "read", expires_at: pyIso(expires) })]);

    // A decided request is not decided again; deny_access_request on the other.
    expectRefused(await owner.approveAccessRequest(id, asked.body.id), 409, "ACCESS_REQUEST_DECIDED");
    const denied = await owner.denyAccessRequest(id, second.body.id, "not now");
    expect(denied.status).toBe(200);
    expectPythonRequest(denied.body);
    expect(denied.body).toMatchObject({ status: "denied", decided_by: "owner-e", decision_reason: "not now" });
    // Only an admin of the intent decides, and decided_by is the caller.
    const third = await outsider.requestAccess(id, "outsider-f");
    expectRefused(await outsider.approveAccessRequest(id, third.body.id), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(
      cluster.sdk("agent", "owner-e").send("accessRequestDeny", { intent_id: id, request_id: third.body.id, body: { decided_by: "someone-else" } }),
      400,
      "AGENT_MISMATCH",
    );

    const events = await allEvents(cluster, id);
    expect(events.filter((e) => e.event_type.startsWith("access_")).map((e) => e.event_type)).toEqual([
      "access_granted",
      "access_requested",
      "access_requested",
      "access_request_approved",
      "access_request_denied",
      "access_requested",
    ]);
    expect(events.find((e) => e.event_type === "access_requested")).toMatchObject({ actor: "outsider-f", payload: { request_id: asked.body.id, requested_permission: "write", capabilities: ["summarise"] } });
  });
});

describe("enforcement", () => {
  it("expires a grant on the injected clock: refused from expires_at on, then swept with access_expired", async () => {
    const owner = pythonClient("owner-h");
    const temp = pythonClient("temp-i", "other");
    const id = (await owner.createIntent("expiring grant")).body.id as string;
    await owner.setAcl(id, "closed");
    const entry = await owner.grantAccess(id, "temp-i", { permission: "write", expires_at: pyIso(new Date(clock.now().getTime() + 60_000)) });
    expect((await temp.appendEvent(id)).status).toBe(201);
    clock.advance(60_000);
    // The decision does not wait for the sweeper.
    expect((await temp.appendEvent(id)).status).toBe(403);
    expect((await owner.getAcl(id)).body.entries).toEqual([]);
    expect(await cluster.intents.aclSweeper.sweep()).toBeGreaterThanOrEqual(1);
    const expired = (await allEvents(cluster, id)).filter((e) => e.event_type === "access_expired");
    expect(expired).toEqual([expect.objectContaining({ actor: "system", payload: expect.objectContaining({ entry_id: entry.body.id, principal_id: "temp-i", permission: "write" }) })]);
    expect(await cluster.intents.aclSweeper.sweep()).toBe(0);
  });

  it("keeps an intent without an ACL exactly as open as before, for every key", async () => {
    const id = (await pythonClient("maker-j").createIntent("no acl")).body.id as string;
    for (const key of ["agent", "other", "operator", "coordinator"] as const) {
      expect((await cluster.sdk(key).send("intentsGet", { intent_id: id })).status).toBe(200);
      expect((await cluster.sdk(key).send("intentsAppendEvent", { intent_id: id, body: { event_type: "comment", payload: {} } })).status).toBe(201);
    }
  });

  it("binds neither admin keys nor the owner, and lists only what the caller may read", async () => {
    const owner = pythonClient("owner-k");
    const id = (await owner.createIntent("closed to all")).body.id as string;
    await owner.setAcl(id, "closed");
    expect((await cluster.sdk("admin").send("intentsGet", { intent_id: id })).status).toBe(200);
    // The owner is the key (agent-1), whatever X-Agent-ID it sends.
    expect((await pythonClient("another-name").getIntent(id)).status).toBe(200);
    expect(await statusOf(cluster.sdk("other").send("intentsGet", { intent_id: id }))).toBe(403);
    const listed = async (key: keyof typeof TEST_KEYS) => (await cluster.sdk(key).ops.intentsList({ query: { limit: 500 } })).intents.map((i) => i.id);
    expect(await listed("other")).not.toContain(id);
    expect(await listed("agent")).toContain(id);
    expect(await listed("admin")).toContain(id);
    // A group entry names a key role.
    await owner.grantAccess(id, "operator", { principal_type: "group", permission: "read" });
    expect((await cluster.sdk("operator").send("intentsGet", { intent_id: id })).status).toBe(200);
    expect(await listed("operator")).toContain(id);
  });

  it("creates an intent with its ACL in one step, never open in between", async () => {
    const res = await cluster.sdk("agent", "maker-l").send("intentsCreate", {
      body: { title: "born closed", acl: { default_policy: "closed", entries: [{ principal_id: "helper-m", permission: "write" }] } },
    });
    expect(res.status).toBe(201);
    const id = res.data.id;
    expect(await statusOf(cluster.sdk("other").send("intentsGet", { intent_id: id }))).toBe(403);
    expect((await cluster.sdk("other", "helper-m").send("intentsGet", { intent_id: id })).status).toBe(200);
    const events = await allEvents(cluster, id);
    expect(events.map((e) => e.event_type)).toEqual(["intent_created", "access_granted"]);
    expect(events[1]!.payload).toMatchObject({ action: "acl_set", default_policy: "closed", entries: [expect.objectContaining({ principal_id: "helper-m", permission: "write" })] });
  });

  it("refuses a denied write with nothing written, and answers an unknown intent 404 whatever the ACL", async () => {
    const owner = pythonClient("owner-n");
    const id = (await owner.createIntent("nothing written")).body.id as string;
    await owner.setAcl(id, "open");
    const before = (await allEvents(cluster, id)).length;
    const other = cluster.sdk("other");
    await expectRejected(other.send("intentsAppendEvent", { intent_id: id, body: { event_type: "comment", payload: {} } }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(other.send("intentsPatchState", { intent_id: id, ifMatch: 1, body: [{ op: "set", path: "/x", value: 1 }] }), 403, "INTENT_ACCESS_DENIED");
    expect((await allEvents(cluster, id)).length).toBe(before);
    // Open with the default read: reading is allowed.
    expect((await other.send("intentsListEvents", { intent_id: id })).status).toBe(200);
    await expectRejected(other.send("intentsGet", { intent_id: "00000000-0000-4000-8000-000000000000" }), 404, "INTENT_NOT_FOUND");
  });
});

describe("the official MCP server's permissions calls (mcp-server/src/client.ts)", () => {
  it("get_permissions, set_permissions (RFC-0011 permissions block, If-Match the ACL's version) and grant_access map onto the ACL", async () => {
    const owner = pythonClient("writer-m");
    const reader = pythonClient("reader-m", "other");
    const id = (await owner.createIntent("permissions via the MCP server")).body.id as string;
    // As the MCP server sends them: X-API-Key, X-Agent-ID, a JSON body.
    const call = async (method: string, path: string, json?: unknown, headers: Record<string, string> = {}, as: { key: keyof typeof TEST_KEYS; agent: string } = { key: "agent", agent: "writer-m" }) => {
      const res = await fetch(`${cluster.baseUrl}/api/v1${path}`, {
        method,
        headers: { "X-API-Key": TEST_KEYS[as.key], "X-Agent-ID": as.agent, "Content-Type": "application/json", ...headers },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as any };
    };

    const read = await call("GET", `/intents/${id}/permissions`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual((await owner.getAcl(id)).body);

    // openintent_set_permissions: the RFC's object form; restricted is a closed policy with the allow list.
    const set = await call("PUT", `/intents/${id}/permissions`, { permissions: { policy: "restricted", default: "read", allow: [{ agent: "reader-m", level: "read" }] } }, { "If-Match": String(read.body.version) });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toMatchObject({ default_policy: "closed", owner: "agent-1", entries: [{ principal_id: "reader-m", principal_type: "agent", permission: "read" }] });
    expectError(await call("PUT", `/intents/${id}/permissions`, { permissions: "open" }, { "If-Match": String(read.body.version) }), 409, "VERSION_MISMATCH");
    expect((await reader.getIntent(id)).status).toBe(200);
    expect((await reader.appendEvent(id)).status).toBe(403);

    // openintent_grant_access: {agent_id, level, scopes: ["*"], granted_by}; the server records who granted it.
    const granted = await call("POST", `/intents/${id}/permissions/grants`, { agent_id: "reader-m", level: "write", scopes: ["*"], granted_by: "someone-else" });
    expect(granted.status, JSON.stringify(granted.body)).toBe(201);
    expect(granted.body).toMatchObject({ principal_id: "reader-m", principal_type: "agent", permission: "write", granted_by: "writer-m" });
    expect((await reader.appendEvent(id)).status).toBe(201);

    // A narrower scope is refused rather than granted wider; delegation is not served.
    expectError(await call("POST", `/intents/${id}/permissions/grants`, { agent_id: "reader-m", level: "read", scopes: ["state"] }), 400, "VALIDATION_FAILED");
    expectError(await call("PUT", `/intents/${id}/permissions`, { permissions: { policy: "open", delegate: { to: ["x"] } } }), 400, "VALIDATION_FAILED");
    expectError(await call("PUT", `/intents/${id}/permissions`, { permissions: { policy: "open", default_policy: "closed" } }), 400, "VALIDATION_FAILED");
    expectError(await call("PUT", `/intents/${id}/permissions`, { permissions: ["a", "a"] }), 400, "VALIDATION_FAILED");

    // The shorthands: a list of agents (each gets write, nobody else anything), and a policy name.
    const listed = await call("PUT", `/intents/${id}/permissions`, { permissions: ["reader-m", "helper-m"] });
    expect(listed.body).toMatchObject({ default_policy: "closed", entries: [{ principal_id: "reader-m", permission: "write" }, { principal_id: "helper-m", permission: "write" }] });
    const open = await call("PUT", `/intents/${id}/permissions`, { permissions: "open" });
    expect(open.body).toMatchObject({ default_policy: "open", default_permission: "read", entries: [] });
    // Only an admin of the intent changes them.
    expectError(await call("PUT", `/intents/${id}/permissions`, { permissions: "private" }, {}, { key: "other", agent: "reader-m" }), 403, "INTENT_ACCESS_DENIED");
  });
});
