import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { isoTimestamp, type ManualClock } from "@intentmesh/contracts";
import { rowsOf } from "@intentmesh/db";
import type { BodyOf } from "@intentmesh/sdk";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, expectRejected, isLeaseExpiry, uniqueTag } from "../support/e2e-helpers";
import { knownAgentStatus } from "../../services/intents/src/agents/agent-status";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const advance = (seconds: number) => clock().advance(seconds * 1000);
const sweep = () => cluster.registry.sweeper.sweep();
/** The typed client acting as an agent registered with the agent key. */
const as = (agentId: string) => cluster.sdk("agent", agentId);
/** The typed client with the agent key (the key agents register with). */
const agentKey = () => cluster.sdk("agent");

async function registerAgent(config = { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 }) {
  const id = uniqueTag("life");
  const res = await agentKey().send("agentsRegister", { body: { agent_id: id, heartbeat_config: config } });
  expect(res.status).toBe(201);
  return id;
}
const status = async (id: string): Promise<string> => (await agentKey().ops.agentsGet({ agent_id: id })).status;
const heartbeat = (id: string, body: Partial<BodyOf<"agentsHeartbeat">> = {}) =>
  agentKey().send("agentsHeartbeat", { agent_id: id, body: { status: "active", client_timestamp: clock().now().toISOString(), ...body } });
const lifecycle = async (id: string) =>
  (await agentKey().ops.agentsListEvents({ agent_id: id, query: { limit: 1000 } })).events
    .filter((e) => e.event_type === "agent.lifecycle")
    .map((e) => `${String(e.payload.previous_status)}>${String(e.payload.new_status)}:${String(e.payload.reason)}`);
const acquire = (intentId: string, agentId: string, scope: string, ttl = 600) =>
  as(agentId).send("intentsAcquireLease", { intent_id: intentId, body: { scope, ttl_seconds: ttl } });

describe("the health lifecycle on the server clock (3.4)", () => {
  it("active -> unhealthy after unhealthy_after_seconds of silence, not a second earlier", async () => {
    const id = await registerAgent();
    advance(29.999);
    await sweep();
    expect(await status(id)).toBe("active");
    advance(0.001);
    await sweep();
    expect(await status(id)).toBe("unhealthy");
  });

  it("unhealthy -> dead after dead_after_seconds, each transition once with version +1 and an agent.lifecycle event", async () => {
    const id = await registerAgent();
    advance(30);
    await sweep();
    advance(30);
    await sweep();
    await sweep();
    const record = (await agentKey().ops.agentsGet({ agent_id: id }));
    expect(record).toMatchObject({ status: "dead", version: 3 });
    expect(await lifecycle(id)).toEqual(["registering>active:registered", "active>unhealthy:heartbeat_timeout", "unhealthy>dead:heartbeat_timeout"]);
    const events = (await agentKey().ops.agentsListEvents({ agent_id: id })).events;
    expect(events[2]!.payload).toMatchObject({ type: "agent.lifecycle", agent_id: id, previous_status: "unhealthy", new_status: "dead", reason: "heartbeat_timeout", version: 3 });
    expect(typeof events[2]!.payload.timestamp).toBe("string");
  });

  it("a sweeper that was away past both deadlines records both steps", async () => {
    const id = await registerAgent();
    advance(3600);
    expect(await sweep()).toBeGreaterThanOrEqual(2);
    expect(await lifecycle(id)).toEqual(["registering>active:registered", "active>unhealthy:heartbeat_timeout", "unhealthy>dead:heartbeat_timeout"]);
  });

  it("a heartbeat resets the silence timer", async () => {
    const id = await registerAgent();
    advance(25);
    expect((await heartbeat(id)).status).toBe(200);
    advance(25);
    await sweep();
    expect(await status(id)).toBe("active");
    advance(5);
    await sweep();
    expect(await status(id)).toBe("unhealthy");
  });

  it("unhealthy -> active on a heartbeat, reason heartbeat_resumed", async () => {
    const id = await registerAgent();
    advance(31);
    await sweep();
    const res = await heartbeat(id, { current_load: 2 });
    expect(res.status).toBe(200);
    expect(res.data.agent_status).toBe("active");
    expect(await lifecycle(id)).toEqual(["registering>active:registered", "active>unhealthy:heartbeat_timeout", "unhealthy>active:heartbeat_resumed"]);
    expect((await agentKey().ops.agentsGet({ agent_id: id })).capacity.current_load).toBe(2);
  });

  it("answers 410 to a heartbeat from a dead or deregistered agent", async () => {
    const dead = await registerAgent();
    advance(61);
    await sweep();
    await expectRejected(heartbeat(dead), 410, "AGENT_GONE");
    const gone = await registerAgent();
    await agentKey().send("agentsDeregister", { agent_id: gone });
    await expectRejected(heartbeat(gone), 410, "AGENT_GONE");
  });
});

describe("heartbeats (4.9)", () => {
  it("answers acknowledged, server_timestamp, agent_status and pending_commands", async () => {
    const id = await registerAgent();
    const res = await heartbeat(id, { current_load: 1, tasks_in_progress: ["t1"] });
    expect(res.status).toBe(200);
    // "t1" is no task the agent holds: reported, not refused (docs/tasks.md).
    expect(res.data).toEqual({ acknowledged: true, server_timestamp: expect.any(String), agent_status: "active", pending_commands: [], unknown_tasks: ["t1"] });
    expect(Date.parse(res.data.server_timestamp)).toBe(clock().now().getTime());
    expect((await agentKey().ops.agentsGet({ agent_id: id })).tasks_in_progress).toEqual(["t1"]);
  });

  it("requires status and client_timestamp", async () => {
    const id = await registerAgent();
    // Raw: the types require both fields.
    expectError(await cluster.api(`/agents/${id}/heartbeat`, { body: { status: "active" }, key: "agent" }), 400, "VALIDATION_FAILED");
    expectError(await cluster.api(`/agents/${id}/heartbeat`, { body: { client_timestamp: clock().now().toISOString() }, key: "agent" }), 400, "VALIDATION_FAILED");
  });

  it("accepts heartbeats only with the registering key (403), even from an admin", async () => {
    const id = await registerAgent();
    for (const key of ["other", "admin"] as const) {
      await expectRejected(cluster.sdk(key).send("agentsHeartbeat", { agent_id: id, body: { status: "active", client_timestamp: clock().now().toISOString() } }), 403, "AGENT_KEY_MISMATCH");
    }
  });

  it("logs a drift warning when client_timestamp is more than 2 x interval away", async () => {
    const lines: string[] = [];
    const logged = await startTestCluster({ logDestination: { write: (line: string) => void lines.push(line) } });
    try {
      const id = uniqueTag("drift");
      const agent = logged.sdk("agent");
      await agent.ops.agentsRegister({ body: { agent_id: id, heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 } } });
      const now = logged.clock.now().getTime();
      await agent.ops.agentsHeartbeat({ agent_id: id, body: { status: "active", client_timestamp: new Date(now - 20_000).toISOString() } });
      expect(lines.filter((l) => l.includes("clock drift"))).toHaveLength(0);
      await agent.ops.agentsHeartbeat({ agent_id: id, body: { status: "active", client_timestamp: new Date(now - 20_001).toISOString() } });
      const warnings = lines.filter((l) => l.includes("clock drift")).map((l) => JSON.parse(l));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, agent_id: id });
    } finally {
      await logged.stop();
    }
  });
});

describe("drain", () => {
  it("a server-initiated drain reaches the agent as a pending command, once", async () => {
    const id = await registerAgent();
    const drained = await cluster.sdk("coordinator").send("agentsChangeStatus", { agent_id: id, ifMatch: 1, body: { status: "draining", drain_timeout_seconds: 120, reason: "scale down" } });
    expect(drained.status).toBe(200);
    expect(drained.data).toMatchObject({ status: "draining", version: 2 });
    expect(drained.headers.get("etag")).toBe('"2"');
    const first = await heartbeat(id, { status: "draining" });
    expect(first.data.agent_status).toBe("draining");
    expect(first.data.pending_commands).toEqual([expect.objectContaining({ command: "drain", reason: "scale down", drain_timeout_seconds: 120 })]);
    expect((await heartbeat(id, { status: "draining" })).data.pending_commands).toEqual([]);
  });

  it("refuses a stale If-Match with 409 and a non-owner agent key with 403", async () => {
    const id = await registerAgent();
    const stale = await expectRejected(agentKey().send("agentsChangeStatus", { agent_id: id, ifMatch: 7, body: { status: "draining" } }), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(1);
    await expectRejected(cluster.sdk("other").send("agentsChangeStatus", { agent_id: id, ifMatch: 1, body: { status: "draining" } }), 403, "FORBIDDEN");
    await expectRejected(cluster.sdk("other").send("agentsDeregister", { agent_id: id }), 403, "FORBIDDEN");
    await expectRejected(agentKey().send("agentsChangeStatus", { agent_id: id, ifMatch: 1, body: { status: "dead" } }), 409, "INVALID_AGENT_TRANSITION");
  });

  it("the agent announcing draining in its heartbeat starts a drain (drain_initiated)", async () => {
    const id = await registerAgent();
    expect((await heartbeat(id, { status: "draining" })).data.agent_status).toBe("draining");
    expect(await lifecycle(id)).toContain("active>draining:drain_initiated");
  });

  it("draining -> deregistered once every lease is released", async () => {
    const id = await registerAgent();
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, id, "work");
    expect(lease.status).toBe(201);
    await agentKey().send("agentsChangeStatus", { agent_id: id, ifMatch: 1, body: { status: "draining", drain_timeout_seconds: 300 } });
    // The intents service learns of the drain from the registry's event; then it refuses new leases.
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, id)).toBe("draining"));
    await expectRejected(acquire(intent.id, id, "other"), 409, "AGENT_DRAINING");
    advance(5);
    await sweep();
    expect(await status(id)).toBe("draining"); // still holds work
    expect((await as(id).send("intentsReleaseLease", { intent_id: intent.id, lease_id: lease.data.id })).status).toBe(200);
    advance(5);
    await sweep();
    expect(await status(id)).toBe("deregistered");
    expect(await lifecycle(id)).toEqual(["registering>active:registered", "active>draining:drain_initiated", "draining>deregistered:drain_completed"]);
  });

  it("draining -> dead at the drain timeout with work in progress and no heartbeats; a warning first; leases expire agent_dead", async () => {
    const id = await registerAgent();
    const intent = await createIntent(cluster);
    expect((await acquire(intent.id, id, "work", 3600)).status).toBe(201);
    await agentKey().send("agentsChangeStatus", { agent_id: id, ifMatch: 1, body: { status: "draining", drain_timeout_seconds: 60 } });
    advance(60);
    await sweep();
    expect(await status(id)).toBe("dead");
    const types = (await agentKey().ops.agentsListEvents({ agent_id: id })).events.map((e) => e.event_type);
    expect(types.slice(-2)).toEqual(["agent.warning", "agent.lifecycle"]);
    await vi.waitFor(async () => {
      const expired = (await allEvents(cluster, intent.id)).filter((e) => isLeaseExpiry(e));
      expect(expired.map((e) => e.payload.reason)).toEqual(["agent_dead"]);
    });
  });

  it("draining -> deregistered at the drain timeout while still heartbeating; its leases expire with it", async () => {
    const id = await registerAgent();
    const intent = await createIntent(cluster);
    expect((await acquire(intent.id, id, "work", 3600)).status).toBe(201);
    await agentKey().send("agentsChangeStatus", { agent_id: id, ifMatch: 1, body: { status: "draining", drain_timeout_seconds: 60 } });
    advance(50);
    await heartbeat(id, { status: "draining" });
    advance(10);
    await sweep();
    expect(await status(id)).toBe("deregistered");
    await vi.waitFor(async () => {
      const expired = (await allEvents(cluster, intent.id)).filter((e) => isLeaseExpiry(e));
      expect(expired.map((e) => e.payload.reason)).toEqual(["agent_deregistered"]);
    });
  });
});

describe("an agent's death and its leases (3.4, across services)", () => {
  it("expires every active lease with reason agent_dead and appends a lease expiry event (lease_released, reason agent_dead) to each intent; writes under them are 412", async () => {
    const id = await registerAgent();
    const a = await createIntent(cluster);
    const b = await createIntent(cluster);
    const leaseA = await acquire(a.id, id, "research");
    const leaseB = await acquire(b.id, id, "*");
    expect([leaseA.status, leaseB.status]).toEqual([201, 201]);
    advance(61);
    await sweep();
    expect(await status(id)).toBe("dead");
    for (const intent of [a, b]) {
      await vi.waitFor(async () => {
        const expired = (await allEvents(cluster, intent.id)).filter((e) => isLeaseExpiry(e));
        expect(expired).toHaveLength(1);
        expect(expired[0]!.payload).toMatchObject({ agent_id: id, reason: "agent_dead" });
      });
    }
    const admin = cluster.sdk();
    const lease = await admin.ops.intentsGetLease({ intent_id: a.id, lease_id: leaseA.data.id });
    expect(Date.parse(lease.expires_at)).toBeLessThanOrEqual(clock().now().getTime());
    expect((await admin.ops.intentsListLeases({ intent_id: a.id, query: { active: true } })).leases).toEqual([]);
    // Re-registered, the agent's earlier lease stays expired: writing under it is 412.
    expect((await agentKey().send("agentsRegister", { body: { agent_id: id } })).status).toBe(201);
    const current = await admin.ops.intentsGet({ intent_id: a.id });
    await expectRejected(as(id).send("intentsPatchState", { intent_id: a.id, ifMatch: current.version, body: [{ op: "set", path: "/research/x", value: 1 }] }), 412, "LEASE_EXPIRED");
  });

  it("a lease whose TTL had already run out when its agent died ends as expired, at its own time", async () => {
    const id = await registerAgent();
    const intent = await createIntent(cluster);
    const short = await acquire(intent.id, id, "short", 5);
    const long = await acquire(intent.id, id, "long", 3600);
    advance(61);
    await sweep();
    await vi.waitFor(async () => expect((await allEvents(cluster, intent.id)).filter((e) => isLeaseExpiry(e))).toHaveLength(2));
    const expired = (await allEvents(cluster, intent.id)).filter((e) => isLeaseExpiry(e));
    const byLease = Object.fromEntries(expired.map((e) => [e.payload.lease_id, e.payload]));
    expect(byLease[short.data.id]).toMatchObject({ reason: "expired", expires_at: short.data.expires_at });
    expect(byLease[long.data.id]).toMatchObject({ reason: "agent_dead" });
    expect(Date.parse(byLease[long.data.id].expires_at)).toBe(clock().now().getTime());
  });

  it("a lease expiring by timeout never changes the agent's status; unhealthy agents keep and take leases", async () => {
    const id = await registerAgent({ interval_seconds: 10, unhealthy_after_seconds: 600, dead_after_seconds: 1200 });
    const intent = await createIntent(cluster);
    expect((await acquire(intent.id, id, "short", 5)).status).toBe(201);
    advance(10);
    await cluster.intents.sweeper.sweep();
    expect(await status(id)).toBe("active");
    advance(600);
    await sweep();
    expect(await status(id)).toBe("unhealthy");
    expect((await acquire(intent.id, id, "more")).status).toBe(201);
  });

  it("a death delivered twice expires the leases once", async () => {
    const id = await registerAgent();
    const intent = await createIntent(cluster);
    expect((await acquire(intent.id, id, "x")).status).toBe(201);
    advance(61);
    await sweep();
    await vi.waitFor(async () => expect((await allEvents(cluster, intent.id)).filter((e) => isLeaseExpiry(e))).toHaveLength(1));
    // Publish the same lifecycle event again, as a relay crash after publish would (different msg id: past the dedupe window).
    const death = (await agentKey().ops.agentsListEvents({ agent_id: id })).events.find((e) => e.payload.new_status === "dead")!;
    await cluster.bus.js.publish(cluster.bus.subject(`im.evt.agent.${id}.agent.lifecycle`), JSON.stringify(death));
    await cluster.bus.js.publish(cluster.bus.subject(`im.evt.agent.${id}.agent.lifecycle`), JSON.stringify(death), { msgID: `agent:${id}:e${death.sequence}` });
    const marker = await cluster.sdk().send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "test.marker" } });
    expect(marker.status).toBe(201);
    await new Promise((r) => setTimeout(r, 300));
    expect((await allEvents(cluster, intent.id)).filter((e) => isLeaseExpiry(e))).toHaveLength(1);
  });

  it("a death delivered after the re-registration that followed it still expires the leases of the ended incarnation, and only those", async () => {
    // Redelivery (a failed first attempt) or a second intents replica can hand the projection an
    // agent's death after a newer lifecycle event. Modelled with events published straight to the
    // stream: the re-registration (sequence 3) first, then the death (sequence 2) it followed.
    const id = await registerAgent();
    const [before, after] = [await createIntent(cluster), await createIntent(cluster)];
    const t0 = clock().now().getTime();
    expect((await acquire(before.id, id, "work")).status).toBe(201);
    const publish = (sequence: number, previous: string, next: string, reason: string, at: number) =>
      cluster.bus.js.publish(
        cluster.bus.subject(`im.evt.agent.${id}.agent.lifecycle`),
        JSON.stringify({
          id: randomUUID(),
          agent_id: id,
          sequence,
          event_type: "agent.lifecycle",
          actor: "system",
          payload: { type: "agent.lifecycle", agent_id: id, previous_status: previous, new_status: next, reason, timestamp: isoTimestamp(new Date(at)), version: sequence },
          created_at: isoTimestamp(new Date(at)),
        }),
      );
    const projected = async () =>
      rowsOf<{ event_sequence: number }>(await cluster.database.db.execute(sql`select event_sequence from intents.agent_status where agent_id = ${id}`))[0]?.event_sequence;
    await publish(3, "dead", "active", "re_registered", t0 + 600);
    await vi.waitFor(async () => expect(Number(await projected())).toBe(3));
    advance(1);
    const fresh = await acquire(after.id, id, "work");
    expect(fresh.status).toBe(201);
    await publish(2, "unhealthy", "dead", "heartbeat_timeout", t0 + 500);
    await vi.waitFor(async () => {
      const expired = (await allEvents(cluster, before.id)).filter((e) => isLeaseExpiry(e));
      expect(expired.map((e) => e.payload.reason)).toEqual(["agent_dead"]);
    });
    expect(await knownAgentStatus(cluster.database.db, id)).toBe("active");
    expect((await allEvents(cluster, after.id)).filter((e) => isLeaseExpiry(e))).toEqual([]);
    expect((await cluster.sdk().ops.intentsListLeases({ intent_id: after.id, query: { active: true } })).leases.map((l) => l.id)).toEqual([fresh.data.id]);
  });
});
