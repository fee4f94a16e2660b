import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";
import { createIntent, expectError, expectRejected, uniqueTag } from "../support/e2e-helpers";

let cluster: TestCluster;
const open: SseClient[] = [];
beforeAll(async () => {
  cluster = await startTestCluster({ ssePingMs: 50 });
});
afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  await cluster?.stop();
});

/** The typed client with the agent key (the key the agents of this file register with). */
const agentKey = () => cluster.sdk("agent");

async function subscribe(agentId: string, key: keyof typeof TEST_KEYS = "agent", headers: Record<string, string> = {}) {
  const client = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/agents/${encodeURIComponent(agentId)}`, { "X-API-Key": TEST_KEYS[key], ...headers });
  open.push(client);
  return client;
}

describe("GET /api/v1/subscribe/agents/{id}", () => {
  it("streams the agent's lifecycle, pending commands and assignments, with the intent framing", async () => {
    const id = `${uniqueTag("sse")}.dotted`;
    expect((await agentKey().send("agentsRegister", { body: { agent_id: id, heartbeat_config: { interval_seconds: 5, unhealthy_after_seconds: 10, dead_after_seconds: 20 } } })).status).toBe(201);
    const sse = await subscribe(id);
    expect(sse.status).toBe(200);

    const intent = await createIntent(cluster);
    expect((await cluster.sdk().send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: id, role: "writer" } })).status).toBe(201);
    await cluster.sdk("coordinator").send("agentsChangeStatus", { agent_id: id, ifMatch: 1, body: { status: "draining", reason: "rebalance" } });
    await sse.waitFor((c) => c.events.length >= 3, 5000);

    const types = sse.events.map((e) => e.event);
    expect(types).toEqual(expect.arrayContaining(["agent_assigned", "agent.lifecycle", "agent.command"]));
    const assigned = sse.events.find((e) => e.event === "agent_assigned")!;
    expect(assigned.data.payload).toMatchObject({ agent_id: id, intent_id: intent.id, role: "writer" });
    const drain = sse.events.find((e) => e.event === "agent.lifecycle")!;
    expect(drain.data.payload).toMatchObject({ previous_status: "active", new_status: "draining", reason: "drain_initiated" });
    const frame = sse.frames.find((f) => f.event === "agent.command")!;
    const log = (await agentKey().ops.agentsListEvents({ agent_id: id })).events;
    const logged = log.find((e) => e.event_type === "agent.command")!;
    expect(frame.id).toBe(logged.id);
    expect(JSON.parse(frame.data!)).toEqual(logged);
  });

  it("resumes after Last-Event-ID with everything since, in order, once", async () => {
    const id = uniqueTag("resume");
    await agentKey().ops.agentsRegister({ body: { agent_id: id, heartbeat_config: { interval_seconds: 5, unhealthy_after_seconds: 10, dead_after_seconds: 20 } } });
    const first = (await agentKey().ops.agentsListEvents({ agent_id: id })).events[0]!;
    (cluster.clock as ManualClock).advance(21_000);
    await cluster.registry.sweeper.sweep();
    const sse = await subscribe(id, "agent", { "Last-Event-ID": first.id });
    await sse.waitFor((c) => c.events.length >= 2, 5000);
    expect(sse.events.map((e) => e.data.payload.new_status)).toEqual(["unhealthy", "dead"]);
    expect(sse.events.map((e) => e.data.sequence)).toEqual([2, 3]);
  });

  it("reads the agent's log after a cursor; a cursor number larger than any sequence is 400", async () => {
    const id = uniqueTag("cursor");
    await agentKey().ops.agentsRegister({ body: { agent_id: id } });
    await agentKey().ops.agentsChangeStatus({ agent_id: id, ifMatch: 1, body: { status: "draining" } });
    const after1 = await agentKey().ops.agentsListEvents({ agent_id: id, query: { after: 1 } });
    expect(after1.events.map((e) => e.sequence)).toEqual([2]);
    await expectRejected(agentKey().send("agentsListEvents", { agent_id: id, query: { after: "99999999999999999999" } }), 400, "VALIDATION_FAILED");
  });

  it("is refused to other agents' keys (403) and answers 404 for an unknown agent", async () => {
    const id = uniqueTag("private");
    await agentKey().ops.agentsRegister({ body: { agent_id: id } });
    const other = await fetch(`${cluster.baseUrl}/api/v1/subscribe/agents/${id}`, { headers: { "X-API-Key": TEST_KEYS.other } });
    expectError({ status: other.status, headers: other.headers, body: await other.json() }, 403, "FORBIDDEN");
    const unknown = await fetch(`${cluster.baseUrl}/api/v1/subscribe/agents/${uniqueTag("nobody")}`, { headers: { "X-API-Key": TEST_KEYS.admin } });
    expectError({ status: unknown.status, headers: unknown.headers, body: await unknown.json() }, 404, "AGENT_NOT_FOUND");
  });
});

describe("the paths and frames of the official clients (issue 10)", () => {
  it("serves the agent stream at /agents/{id}/subscribe; an assignment is its agent_assigned frame, then an AGENT_ASSIGNED frame with data.intent_id and no id", async () => {
    const id = uniqueTag("base-agent");
    expect((await agentKey().send("agentsRegisterAlias", { body: { agent_id: id, capabilities: ["write"] } })).status).toBe(201);
    const headers = { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": id, Accept: "text/event-stream", "Content-Type": "application/json" };
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/agents/${id}/subscribe`, headers);
    open.push(sse);
    expect(sse.status).toBe(200);
    const intent = await createIntent(cluster);
    expect((await cluster.sdk().send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: id } })).status).toBe(201);
    await sse.waitFor((c) => c.frames.some((f) => f.event === "AGENT_ASSIGNED"), 5000);
    const at = sse.frames.findIndex((f) => f.event === "agent_assigned");
    const spec = sse.frames[at]!;
    const client = sse.frames[at + 1]!;
    expect(client.event).toBe("AGENT_ASSIGNED");
    expect(client.id).toBeUndefined();
    expect(JSON.parse(client.data!)).toEqual({ intent_id: intent.id, agent_id: id, role: null, event_id: spec.id });
    expect(JSON.parse(spec.data!)).toMatchObject({ event_type: "agent_assigned", payload: { intent_id: intent.id, agent_id: id } });

    // Resuming before the assignment replays both frames of it.
    const first = (await agentKey().ops.agentsListEvents({ agent_id: id })).events[0]!;
    const resumed = await SseClient.open(`${cluster.baseUrl}/api/v1/agents/${id}/subscribe`, { ...headers, "Last-Event-ID": first.id });
    open.push(resumed);
    await resumed.waitFor((c) => c.frames.some((f) => f.event === "AGENT_ASSIGNED"), 5000);
    expect(resumed.frames.filter((f) => f.event).map((f) => f.event)).toEqual(["agent_assigned", "AGENT_ASSIGNED"]);
  });

  it("serves the intent and portfolio streams at /intents/{id}/subscribe and /portfolios/{id}/subscribe", async () => {
    const intent = await createIntent(cluster);
    const intentSse = await SseClient.open(`${cluster.baseUrl}/api/v1/intents/${intent.id}/subscribe`, { "X-API-Key": TEST_KEYS.admin });
    open.push(intentSse);
    expect(intentSse.status).toBe(200);
    const portfolio = await cluster.sdk().ops.portfoliosCreate({ body: { name: uniqueTag("pf") } });
    const portfolioSse = await SseClient.open(`${cluster.baseUrl}/api/v1/portfolios/${portfolio.id}/subscribe`, { "X-API-Key": TEST_KEYS.admin });
    open.push(portfolioSse);
    expect(portfolioSse.status).toBe(200);
    await cluster.sdk().ops.intentsPatchState({ intent_id: intent.id, ifMatch: 1, body: [{ op: "set", path: "progress", value: 1 }] });
    await cluster.sdk().ops.portfoliosAddMember({ portfolio_id: portfolio.id, body: { intent_id: intent.id } });
    await intentSse.waitFor((c) => c.events.length >= 1, 5000);
    await portfolioSse.waitFor((c) => c.events.some((e) => e.event === "added_to_portfolio"), 5000);
    expect(intentSse.events[0]).toMatchObject({ event: "state_patched", data: { intent_id: intent.id } });
    const missing = await fetch(`${cluster.baseUrl}/api/v1/intents/not-a-uuid/subscribe`, { headers: { "X-API-Key": TEST_KEYS.admin } });
    expect(missing.status).toBe(404);
    await missing.body?.cancel();
  });
});
