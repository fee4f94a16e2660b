import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import type { BodyOf } from "@intentmesh/sdk";
import { createIntent, expectError, expectRejected, uniqueTag } from "../support/e2e-helpers";
import { knownAgentStatus } from "../../services/intents/src/agents/agent-status";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const register = (body: BodyOf<"agentsRegister">, key: "agent" | "other" | "admin" | "coordinator" | "operator" = "agent") => cluster.sdk(key).send("agentsRegister", { body });

describe("keys and identity (part 5)", () => {
  it("accepts an unregistered X-Agent-ID or body agent_id as the caller's label: a standalone agent is assigned, leases, records costs and failures, appends events (4.9 rule 6)", async () => {
    const solo = uniqueTag("solo");
    const asSolo = cluster.sdk("agent", solo);
    const intent = await createIntent(cluster, { title: "t" });
    const assigned = await cluster.sdk().send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: solo } });
    expect(assigned.status).toBe(201);
    const lease = await asSolo.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "x" } });
    expect(lease.status).toBe(201);
    expect(lease.data.agent_id).toBe(solo);
    const patched = await asSolo.send("intentsPatchState", { intent_id: intent.id, ifMatch: 1, body: [{ op: "set", path: "/x/done", value: true }] });
    expect(patched.status).toBe(200);
    const cost = await cluster.sdk("agent").send("costsRecord", { intent_id: intent.id, body: { agent_id: solo, cost_type: "tokens", amount: 5, unit: "tokens" } });
    expect(cost.status).toBe(201);
    expect(cost.data.agent_id).toBe(solo);
    const failure = await asSolo.send("retriesRecordFailure", { intent_id: intent.id, body: { attempt_number: 1, error_code: "TIMEOUT" } });
    expect(failure.status).toBe(201);
    expect(failure.data.agent_id).toBe(solo);
    const event = await asSolo.send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment", payload: { text: "hi" } } });
    expect(event.status).toBe(201);
    expect(event.data.actor).toBe(solo);
    // Registration is still optional, not forbidden: the key may register the id later and keeps acting as it.
    expect((await register({ agent_id: solo })).status).toBe(201);
    expect((await asSolo.send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment" } })).status).toBe(201);
    // ...and from then on the id is bound: another key is refused.
    await expectRejected(cluster.sdk("other", solo).send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment" } }), 403, "AGENT_NOT_BOUND");
  });

  it("refuses an unregistered label that is another key's principal (403 AGENT_ID_RESERVED), writing nothing", async () => {
    const intent = await createIntent(cluster, { title: "t" });
    // "agent-2" is the principal of the `other` key.
    await expectRejected(cluster.sdk("agent", "agent-2").send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "y" } }), 403, "AGENT_ID_RESERVED");
    expect((await cluster.sdk().ops.intentsListLeases({ intent_id: intent.id })).leases).toEqual([]);
  });

  it("lets admin and coordinator keys act for any agent, even one registered with another key; registered-agent rules still hold", async () => {
    const id = uniqueTag("supervised");
    await register({ agent_id: id });
    const intent = await createIntent(cluster, { title: "t" });
    const byAdmin = await cluster.sdk("admin", id).send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "a" } });
    expect(byAdmin.status).toBe(201);
    expect(byAdmin.data.agent_id).toBe(id);
    const byCoordinator = await cluster.sdk("coordinator").send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment", actor: id } });
    expect(byCoordinator.status).toBe(201);
    // Heartbeats stay bound to the registering key, even for admins.
    await expectRejected(cluster.sdk("admin").send("agentsHeartbeat", { agent_id: id, body: { status: "active", client_timestamp: new Date().toISOString() } }), 403, "AGENT_KEY_MISMATCH");
    // A draining agent takes no new lease, whoever asks for it.
    const version = (await cluster.sdk("agent").ops.agentsGet({ agent_id: id })).version;
    expect((await cluster.sdk("agent").send("agentsChangeStatus", { agent_id: id, ifMatch: version, body: { status: "draining" } })).status).toBe(200);
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, id)).toBe("draining"));
    await expectRejected(cluster.sdk("admin", id).send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "b" } }), 409, "AGENT_DRAINING");
  });

  it("refuses acting as an agent bound to another key, by header or by body agent_id (403 AGENT_NOT_BOUND)", async () => {
    const id = uniqueTag("mine");
    await register({ agent_id: id });
    const intent = await createIntent(cluster, { title: "t" });
    await expectRejected(cluster.sdk("other", id).send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "x" } }), 403, "AGENT_NOT_BOUND");
    await expectRejected(cluster.sdk("other").send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "x", agent_id: id } }), 403, "AGENT_NOT_BOUND");
    // Invalid input is answered 400 before the binding refusal, as the request would have been refused first.
    const invalid = await cluster.api(`/intents/${intent.id}/leases`, { method: "POST", key: "other", headers: { "X-Agent-ID": id }, body: { scope: 7 } });
    expectError(invalid, 400, "VALIDATION_FAILED");
    // Raw: the SSE stream has no operation of the typed client; its refusal is a plain JSON error.
    expectError(await cluster.api(`/subscribe/intents/${intent.id}`, { headers: { "X-Agent-ID": id }, key: "other" }), 403, "AGENT_NOT_BOUND");
    const own = await cluster.sdk("agent").send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "x", agent_id: id } });
    expect(own.status).toBe(201);
    expect(own.data.agent_id).toBe(id);
  });

  it("refuses an agent id that is another key's principal (403 AGENT_ID_RESERVED); a key may register its own", async () => {
    // "agent-2" is the principal of the `other` key: requests of that key without X-Agent-ID act under that name.
    await expectRejected(register({ agent_id: "agent-2" }, "agent"), 403, "AGENT_ID_RESERVED");
    expect((await register({ agent_id: "agent-2" }, "other")).status).toBe(201);
  });

  it("lets actor and created_by be free labels, but not another key's registered agent (403 AGENT_NOT_BOUND)", async () => {
    const theirs = uniqueTag("theirs");
    await register({ agent_id: theirs }, "other");
    const asAgent = cluster.sdk("agent");
    const intent = await asAgent.ops.intentsCreate({ body: { title: "t", created_by: "alice-from-ops" } });
    expect(intent.created_by).toBe("alice-from-ops");
    await expectRejected(asAgent.send("intentsCreate", { body: { title: "t", created_by: theirs } }), 403, "AGENT_NOT_BOUND");
    expect((await cluster.sdk("other").send("intentsCreate", { body: { title: "t", created_by: theirs } })).status).toBe(201);
    const label = await asAgent.send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "note.x", actor: "bob" } });
    expect(label.status).toBe(201);
    expect(label.data.actor).toBe("bob");
    await expectRejected(asAgent.send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "note.x", actor: theirs } }), 403, "AGENT_NOT_BOUND");
    await expectRejected(asAgent.send("portfoliosCreate", { body: { name: "p", created_by: theirs } }), 403, "AGENT_NOT_BOUND");
  });

  it("a dead agent takes no new lease until it registers again (409 AGENT_NOT_ACTIVE)", async () => {
    const id = uniqueTag("dead");
    await register({ agent_id: id, heartbeat_config: { interval_seconds: 1, unhealthy_after_seconds: 2, dead_after_seconds: 4 } });
    clock().advance(5000);
    await cluster.registry.sweeper.sweep();
    const intent = await createIntent(cluster, { title: "t" });
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, id)).toBe("dead"));
    const asDead = cluster.sdk("agent", id);
    await expectRejected(asDead.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "x" } }), 409, "AGENT_NOT_ACTIVE");
    expect((await register({ agent_id: id })).status).toBe(201);
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, id)).toBe("active"));
    expect((await asDead.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "x" } })).status).toBe(201);
  });
});
