import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { expectError, TIMESTAMP, uniqueTag } from "../support/e2e-helpers";
import { knownAgentStatus } from "../../services/intents/src/agents/agent-status";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const register = (body: Record<string, unknown>, key: "agent" | "other" | "admin" | "coordinator" | "operator" = "agent") => cluster.api("/agents", { body, key });
const beat = (agentId: string, body: Record<string, unknown> = {}, key: "agent" | "other" | "admin" = "agent") =>
  cluster.api(`/agents/${agentId}/heartbeat`, { body: { status: "active", client_timestamp: clock().now().toISOString(), ...body }, key });

describe("registration (4.9 rules 1-6)", () => {
  it("answers 201 with the full record and the version as ETag", async () => {
    const id = uniqueTag("reg");
    const res = await register({ agent_id: id, role_id: "researcher", name: "R", capabilities: ["search", "summarize"], capacity: { max_concurrent_tasks: 4 }, endpoint: "https://agents.example.com/r", metadata: { model: "x" } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    expect(res.body).toMatchObject({
      agent_id: id,
      role_id: "researcher",
      name: "R",
      capabilities: ["search", "summarize"],
      capacity: { max_concurrent_tasks: 4, current_load: 0 },
      status: "active",
      endpoint: "https://agents.example.com/r",
      heartbeat_config: { interval_seconds: 30, unhealthy_after_seconds: 90, dead_after_seconds: 300 },
      metadata: { model: "x" },
      version: 1,
      origin_server_url: null,
    });
    expect(res.body.registered_at).toMatch(TIMESTAMP);
    expect(res.body.last_heartbeat_at).toMatch(TIMESTAMP);
  });

  it("generates an agent_id when none is given", async () => {
    const res = await register({ name: "anonymous" });
    expect(res.status).toBe(201);
    expect(res.body.agent_id).toMatch(/^agent-[0-9a-f-]{36}$/);
  });

  it("refuses an id that is active with 409", async () => {
    const id = uniqueTag("dup");
    expect((await register({ agent_id: id })).status).toBe(201);
    expectError(await register({ agent_id: id }), 409, "AGENT_ALREADY_REGISTERED");
    // Rule 3 holds whoever asks: another key gets the same 409 for a live id.
    expectError(await register({ agent_id: id }, "other"), 409, "AGENT_ALREADY_REGISTERED");
  });

  it("refuses an invalid heartbeat_config with 400 naming the rule", async () => {
    const low = await register({ agent_id: uniqueTag("hb"), heartbeat_config: { interval_seconds: 30, unhealthy_after_seconds: 59 } });
    expectError(low, 400, "VALIDATION_FAILED");
    expect(low.body.message).toContain("unhealthy_after_seconds must be at least 2 x interval_seconds");
    const dead = await register({ agent_id: uniqueTag("hb"), heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 20, dead_after_seconds: 39 } });
    expectError(dead, 400, "VALIDATION_FAILED");
    expect(dead.body.message).toContain("dead_after_seconds must be at least 2 x unhealthy_after_seconds");
    const ok = await register({ agent_id: uniqueTag("hb"), heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 20, dead_after_seconds: 40 } });
    expect(ok.status).toBe(201);
  });

  it("requires If-Match on PATCH and PUT /agents/{id}/status: 428 without it, 409 when stale, and nothing changes", async () => {
    const id = uniqueTag("ifmatch");
    await register({ agent_id: id });
    for (const method of ["PATCH", "PUT"]) {
      expectError(await cluster.api(`/agents/${id}/status`, { method, body: { status: "draining" }, key: "agent" }), 428, "PRECONDITION_REQUIRED");
      const stale = await cluster.api(`/agents/${id}/status`, { method, body: { status: "draining" }, headers: { "If-Match": "7" }, key: "agent" });
      expectError(stale, 409, "VERSION_MISMATCH");
      expect(stale.body.current_version).toBe(1);
    }
    expectError(await cluster.api(`/agents/${id}/status`, { method: "PATCH", body: { status: "deregistered" }, key: "agent" }), 428, "PRECONDITION_REQUIRED");
    expect((await cluster.api(`/agents/${id}`, { key: "agent" })).body).toMatchObject({ status: "active", version: 1 });
    expect((await cluster.api(`/agents/${id}/events`, { key: "agent" })).body.events).toHaveLength(1);
    const drained = await cluster.api(`/agents/${id}/status`, { method: "PATCH", body: { status: "draining" }, headers: { "If-Match": 'W/"1"' }, key: "agent" });
    expect(drained.status, JSON.stringify(drained.body)).toBe(200);
    expect(drained.headers.get("etag")).toBe('"2"');
  });

  it("re-activates a deregistered id with its version reset, and emits agent.lifecycle", async () => {
    const id = uniqueTag("re");
    await register({ agent_id: id });
    const drained = await cluster.api(`/agents/${id}/status`, { method: "PATCH", body: { status: "draining" }, headers: { "If-Match": "1" }, key: "agent" });
    expect(drained.body.version).toBe(2);
    const gone = await cluster.api(`/agents/${id}`, { method: "DELETE", key: "agent" });
    expect(gone.body).toMatchObject({ status: "deregistered", version: 3 });
    const again = await register({ agent_id: id, name: "second life" });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ status: "active", version: 1, name: "second life" });
    const events = await cluster.api(`/agents/${id}/events`, { key: "agent" });
    expect(events.body.events.map((e: any) => [e.payload.previous_status, e.payload.new_status, e.payload.reason])).toEqual([
      ["registering", "active", "registered"],
      ["active", "draining", "drain_initiated"],
      ["draining", "deregistered", "deregistered"],
      ["deregistered", "active", "re_registered"],
    ]);
  });

  it("keeps the binding across re-registration: another key may not take the id (403)", async () => {
    const id = uniqueTag("bind");
    await register({ agent_id: id });
    await cluster.api(`/agents/${id}`, { method: "DELETE", key: "agent" });
    expectError(await register({ agent_id: id }, "other"), 403, "AGENT_KEY_MISMATCH");
  });

  it("refuses a registration whose X-Agent-ID names another key's agent (403 AGENT_NOT_BOUND); its own id or its own agent is fine", async () => {
    const victim = uniqueTag("victim");
    await register({ agent_id: victim });
    const spoofed = await cluster.api("/agents", { body: { agent_id: uniqueTag("new") }, headers: { "X-Agent-ID": victim }, key: "other" });
    expectError(spoofed, 403, "AGENT_NOT_BOUND");
    const self = uniqueTag("self");
    const own = await cluster.api("/agents", { body: { agent_id: self }, headers: { "X-Agent-ID": self }, key: "other" });
    expect(own.status, JSON.stringify(own.body)).toBe(201);
    const worker = uniqueTag("worker");
    expect((await cluster.api("/agents", { body: { agent_id: worker }, headers: { "X-Agent-ID": self }, key: "other" })).status).toBe(201);
    const log = (await cluster.api(`/agents/${worker}/events`, { key: "other" })).body.events;
    expect(log[0].actor).toBe(self);
  });

  it("refuses endpoint and origin_server_url addresses other than http(s) with 400", async () => {
    const res = await register({ agent_id: uniqueTag("url"), endpoint: "file:///etc/passwd" });
    expectError(res, 400, "VALIDATION_FAILED");
    expect(res.body.message).toContain("endpoint: must be an http:// or https:// URL");
  });

  it("answers the alias paths of the OpenIntent clients", async () => {
    const id = uniqueTag("alias");
    const reg = await cluster.api("/agents/register", { body: { agent_id: id }, key: "agent" });
    expect(reg.status).toBe(201);
    const record = await cluster.api(`/agents/${id}/record`, { key: "agent" });
    expect(record.body.agent_id).toBe(id);
    const drain = await cluster.api(`/agents/${id}/status`, { method: "PUT", body: { status: "draining", drain_timeout_seconds: 60 }, headers: { "If-Match": "1" }, key: "agent" });
    expect(drain.status).toBe(200);
    expect(drain.body.status).toBe("draining");
  });
});

describe("listing and discovery (4.9, 5.4)", () => {
  it("filters by capabilities (ANY), status (default active), role_id and min_available_capacity, with the total", async () => {
    const role = uniqueTag("role");
    const ids = [uniqueTag("l"), uniqueTag("l"), uniqueTag("l"), uniqueTag("l")];
    await register({ agent_id: ids[0], role_id: role, capabilities: ["a", "b"], capacity: { max_concurrent_tasks: 5 } });
    await register({ agent_id: ids[1], role_id: role, capabilities: ["c"], capacity: { max_concurrent_tasks: 2 } });
    await register({ agent_id: ids[2], role_id: role, capabilities: ["b"], capacity: { max_concurrent_tasks: 3 } });
    await register({ agent_id: ids[3], role_id: role, capabilities: ["a"] });
    await beat(ids[0]!, { current_load: 4 });
    await cluster.api(`/agents/${ids[2]}/status`, { method: "PATCH", body: { status: "draining" }, headers: { "If-Match": "1" }, key: "agent" });

    const list = async (query: string) => (await cluster.api(`/agents?role_id=${role}${query}`, { key: "coordinator" })).body;
    const all = await list("");
    expect(all.total).toBe(3);
    expect(all.agents.map((a: any) => a.agent_id).sort()).toEqual([ids[0], ids[1], ids[3]].sort());
    expect(Object.keys(all.agents[0]).sort()).toEqual(["agent_id", "capabilities", "capacity", "last_heartbeat_at", "name", "role_id", "status"]);
    expect((await list("&capabilities=b,c")).agents.map((a: any) => a.agent_id).sort()).toEqual([ids[0], ids[1]].sort());
    expect((await list("&status=draining")).agents.map((a: any) => a.agent_id)).toEqual([ids[2]]);
    expect((await list("&status=active,draining")).total).toBe(4);
    expect((await list("&min_available_capacity=2")).agents.map((a: any) => a.agent_id)).toEqual([ids[1]]);
    expect((await list("&min_available_capacity=1")).agents.map((a: any) => a.agent_id).sort()).toEqual([ids[0], ids[1]].sort());
  });

  it("is restricted to coordinators and admins", async () => {
    expect((await cluster.api("/agents", { key: "admin" })).status).toBe(200);
    expectError(await cluster.api("/agents", { key: "agent" }), 403, "FORBIDDEN");
    expectError(await cluster.api("/agents", { key: "operator" }), 403, "FORBIDDEN");
  });

  it("reads one full record for the agent itself, coordinators, operators and admins; 404 for an unknown id", async () => {
    const id = uniqueTag("one");
    await register({ agent_id: id, metadata: { k: 1 } });
    for (const key of ["agent", "coordinator", "operator", "admin"] as const) {
      const res = await cluster.api(`/agents/${id}`, { key });
      expect(res.status).toBe(200);
      expect(res.headers.get("etag")).toBe('"1"');
      expect(res.body).toMatchObject({ metadata: { k: 1 }, heartbeat_config: { interval_seconds: 30 }, endpoint: null });
    }
    expectError(await cluster.api(`/agents/${id}`, { key: "other" }), 403, "FORBIDDEN");
    expectError(await cluster.api(`/agents/${uniqueTag("nobody")}`, { key: "admin" }), 404, "AGENT_NOT_FOUND");
  });

  it("gives pool capacity per role_id: sum of max_concurrent_tasks minus sum of current_load over active members", async () => {
    const role = uniqueTag("pool");
    const [a, b] = [uniqueTag("p"), uniqueTag("p")];
    await register({ agent_id: a, role_id: role, capacity: { max_concurrent_tasks: 4 } });
    await register({ agent_id: b, role_id: role, capacity: { max_concurrent_tasks: 6 } });
    await beat(a, { current_load: 3 });
    await beat(b, { current_load: 1 });
    const pool = await cluster.api(`/pools/${role}`, { key: "coordinator" });
    expect(pool.body).toEqual({ role_id: role, members: 2, max_concurrent_tasks: 10, current_load: 4, available_capacity: 6 });
    expectError(await cluster.api(`/pools/${role}`, { key: "agent" }), 403, "FORBIDDEN");
  });
});

describe("keys and identity (part 5)", () => {
  it("accepts an unregistered X-Agent-ID or body agent_id as the caller's label: a standalone agent is assigned, leases, records costs and failures, appends events (4.9 rule 6)", async () => {
    const solo = uniqueTag("solo");
    const headers = { "X-Agent-ID": solo };
    const intent = (await cluster.api("/intents", { body: { title: "t", status: "active" } })).body;
    const assigned = await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: solo } });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(201);
    const lease = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "x" }, headers, key: "agent" });
    expect(lease.status, JSON.stringify(lease.body)).toBe(201);
    expect(lease.body.agent_id).toBe(solo);
    const patched = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/x/done", value: true }], headers: { ...headers, "If-Match": "1" }, key: "agent" });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const cost = await cluster.api(`/intents/${intent.id}/costs`, { body: { agent_id: solo, cost_type: "tokens", amount: 5, unit: "tokens" }, key: "agent" });
    expect(cost.status, JSON.stringify(cost.body)).toBe(201);
    expect(cost.body.agent_id).toBe(solo);
    const failure = await cluster.api(`/intents/${intent.id}/failures`, { body: { attempt_number: 1, error_code: "TIMEOUT" }, headers, key: "agent" });
    expect(failure.status, JSON.stringify(failure.body)).toBe(201);
    expect(failure.body.agent_id).toBe(solo);
    const event = await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "comment", payload: { text: "hi" } }, headers, key: "agent" });
    expect(event.status, JSON.stringify(event.body)).toBe(201);
    expect(event.body.actor).toBe(solo);
    // Registration is still optional, not forbidden: the key may register the id later and keeps acting as it.
    expect((await register({ agent_id: solo })).status).toBe(201);
    expect((await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "comment" }, headers, key: "agent" })).status).toBe(201);
    // ...and from then on the id is bound: another key is refused.
    expectError(await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "comment" }, headers, key: "other" }), 403, "AGENT_NOT_BOUND");
  });

  it("refuses an unregistered label that is another key's principal (403 AGENT_ID_RESERVED), writing nothing", async () => {
    const intent = (await cluster.api("/intents", { body: { title: "t", status: "active" } })).body;
    // "agent-2" is the principal of the `other` key.
    const res = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "y" }, headers: { "X-Agent-ID": "agent-2" }, key: "agent" });
    expectError(res, 403, "AGENT_ID_RESERVED");
    expect((await cluster.api(`/intents/${intent.id}/leases`)).body.leases).toEqual([]);
  });

  it("lets admin and coordinator keys act for any agent, even one registered with another key; registered-agent rules still hold", async () => {
    const id = uniqueTag("supervised");
    await register({ agent_id: id });
    const intent = (await cluster.api("/intents", { body: { title: "t", status: "active" } })).body;
    const byAdmin = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "a" }, headers: { "X-Agent-ID": id }, key: "admin" });
    expect(byAdmin.status, JSON.stringify(byAdmin.body)).toBe(201);
    expect(byAdmin.body.agent_id).toBe(id);
    const byCoordinator = await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "comment", actor: id }, key: "coordinator" });
    expect(byCoordinator.status, JSON.stringify(byCoordinator.body)).toBe(201);
    // Heartbeats stay bound to the registering key, even for admins.
    expectError(await cluster.api(`/agents/${id}/heartbeat`, { body: { status: "active", client_timestamp: new Date().toISOString() }, key: "admin" }), 403, "AGENT_KEY_MISMATCH");
    // A draining agent takes no new lease, whoever asks for it.
    const version = (await cluster.api(`/agents/${id}`, { key: "agent" })).body.version;
    await cluster.api(`/agents/${id}/status`, { method: "PATCH", body: { status: "draining" }, headers: { "If-Match": String(version) }, key: "agent" });
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, id)).toBe("draining"));
    expectError(await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "b" }, headers: { "X-Agent-ID": id }, key: "admin" }), 409, "AGENT_DRAINING");
  });

  it("refuses acting as an agent bound to another key, by header or by body agent_id (403 AGENT_NOT_BOUND)", async () => {
    const id = uniqueTag("mine");
    await register({ agent_id: id });
    const intent = (await cluster.api("/intents", { body: { title: "t", status: "active" } })).body;
    expectError(await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "x" }, headers: { "X-Agent-ID": id }, key: "other" }), 403, "AGENT_NOT_BOUND");
    expectError(await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "x", agent_id: id }, key: "other" }), 403, "AGENT_NOT_BOUND");
    expectError(await cluster.api(`/subscribe/intents/${intent.id}`, { headers: { "X-Agent-ID": id }, key: "other" }), 403, "AGENT_NOT_BOUND");
    const own = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "x", agent_id: id }, key: "agent" });
    expect(own.status).toBe(201);
    expect(own.body.agent_id).toBe(id);
  });

  it("refuses an agent id that is another key's principal (403 AGENT_ID_RESERVED); a key may register its own", async () => {
    // "agent-2" is the principal of the `other` key: requests of that key without X-Agent-ID act under that name.
    expectError(await register({ agent_id: "agent-2" }, "agent"), 403, "AGENT_ID_RESERVED");
    expect((await register({ agent_id: "agent-2" }, "other")).status).toBe(201);
  });

  it("lets actor and created_by be free labels, but not another key's registered agent (403 AGENT_NOT_BOUND)", async () => {
    const theirs = uniqueTag("theirs");
    await register({ agent_id: theirs }, "other");
    const intent = (await cluster.api("/intents", { body: { title: "t", created_by: "alice-from-ops" }, key: "agent" })).body;
    expect(intent.created_by).toBe("alice-from-ops");
    expectError(await cluster.api("/intents", { body: { title: "t", created_by: theirs }, key: "agent" }), 403, "AGENT_NOT_BOUND");
    expect((await cluster.api("/intents", { body: { title: "t", created_by: theirs }, key: "other" })).status).toBe(201);
    const label = await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "note.x", actor: "bob" }, key: "agent" });
    expect(label.status).toBe(201);
    expect(label.body.actor).toBe("bob");
    expectError(await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "note.x", actor: theirs }, key: "agent" }), 403, "AGENT_NOT_BOUND");
    expectError(await cluster.api("/portfolios", { body: { name: "p", created_by: theirs }, key: "agent" }), 403, "AGENT_NOT_BOUND");
  });

  it("a dead agent takes no new lease until it registers again (409 AGENT_NOT_ACTIVE)", async () => {
    const id = uniqueTag("dead");
    await register({ agent_id: id, heartbeat_config: { interval_seconds: 1, unhealthy_after_seconds: 2, dead_after_seconds: 4 } });
    clock().advance(5000);
    await cluster.registry.sweeper.sweep();
    const intent = (await cluster.api("/intents", { body: { title: "t", status: "active" } })).body;
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, id)).toBe("dead"));
    expectError(await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "x" }, headers: { "X-Agent-ID": id }, key: "agent" }), 409, "AGENT_NOT_ACTIVE");
    expect((await register({ agent_id: id })).status).toBe(201);
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, id)).toBe("active"));
    expect((await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "x" }, headers: { "X-Agent-ID": id }, key: "agent" })).status).toBe(201);
  });
});
