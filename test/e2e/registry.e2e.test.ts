import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { expectError, uniqueTag } from "../support/e2e-helpers";
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
