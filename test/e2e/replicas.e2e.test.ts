import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import type { Server } from "node:http";
import { connectBus, type Bus } from "@intentmesh/bus";
import { createLogger } from "@intentmesh/telemetry";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";
import { allEvents } from "../support/e2e-helpers";
import { createGateway, type Gateway } from "../../services/gateway/src/app";
import { ApiKeys } from "../../services/gateway/src/api-keys";
import { startIntentsService, type IntentsService } from "../../services/intents/src/service";

// Services scale by replicas: a second gateway and a second intents service, each with its own
// NATS connection as a separate process would have, share the work of the first ones.
let cluster: TestCluster;
let secondBus: Bus;
let secondGateway: Gateway;
let secondIntents: IntentsService;
let secondUrl: string;

beforeAll(async () => {
  cluster = await startTestCluster();
  const logger = createLogger("replica", "silent");
  secondBus = await connectBus(inject("natsUrl"), "replica", cluster.namespace);
  secondBus.checks = cluster.bus.checks; // the replica is held to the catalogue like the cluster
  secondIntents = await startIntentsService({ bus: secondBus, database: cluster.database, logger, clock: cluster.clock, leaseSweepIntervalMs: 3_600_000 });
  secondGateway = await createGateway({ bus: secondBus, keys: new ApiKeys([{ key: TEST_KEYS.admin, principal: "admin", roles: ["admin"] }]), logger });
  const server: Server = await secondGateway.listen(0, "127.0.0.1");
  const address = server.address();
  secondUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});
afterAll(async () => {
  await secondGateway?.stop();
  await secondIntents?.stop();
  await secondBus?.close();
  await cluster?.stop();
});

describe("two replicas of the gateway and of the intents service", () => {
  it("stream to a subscriber of one gateway the writes made through the other, in order, once", async () => {
    const created = await cluster.api("/intents", { body: { title: "replicated", status: "active" } });
    const id = created.body.id as string;
    const sse = await SseClient.open(`${secondUrl}/api/v1/subscribe/intents/${id}`, { "X-API-Key": TEST_KEYS.admin });
    expect(sse.status).toBe(200);

    // Forty appends through the first gateway; the two intents replicas answer them between them.
    await Promise.all(Array.from({ length: 40 }, (_, i) => cluster.api(`/intents/${id}/events`, { body: { event_type: "step", payload: { i } } })));
    await sse.waitFor((c) => c.events.length >= 40, 10_000);
    expect(sse.events.map((e) => e.data.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => i + 2));
    await sse.close();

    const backlog = async () => (await cluster.intents.relay.backlog()) + (await secondIntents.relay.backlog());
    for (let i = 0; i < 40 && (await backlog()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await backlog()).toBe(0);
  });

  it("serve reads through either gateway", async () => {
    const created = await cluster.api("/intents", { body: { title: "either", status: "active" } });
    const res = await fetch(`${secondUrl}/api/v1/intents/${created.body.id}`, { headers: { "X-API-Key": TEST_KEYS.admin } });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"1"');
  });

  it("a plan follows its tasks exactly when they complete at once through both gateways and both intents replicas (RFC 0012)", async () => {
    const intent = (await cluster.api("/intents", { body: { title: "planned", status: "active" } })).body;
    const secondApi = (path: string, body: unknown) =>
      fetch(`${secondUrl}/api/v1${path}`, { method: "POST", headers: { "X-API-Key": TEST_KEYS.admin, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await cluster.api("/tasks", { body: { intent_id: intent.id, name: `t${i}` } })).body.id);
    const plan = (await cluster.api("/plans", { body: { intent_id: intent.id, tasks: ids, state: "active" } })).body;
    for (const id of ids) for (const action of ["claim", "start"]) expect((await cluster.api(`/tasks/${id}/${action}`, { body: {} })).status).toBe(200);
    // Half through each gateway, all at once: the two intents replicas serve them between them.
    const answers = await Promise.all(ids.map((id, i) => (i % 2 ? secondApi(`/tasks/${id}/complete`, { output: {} }).then((r) => r.status) : cluster.api(`/tasks/${id}/complete`, { body: { output: {} } }).then((r) => r.status))));
    expect(answers).toEqual(ids.map(() => 200));
    const read = (await cluster.api(`/plans/${plan.id}`)).body;
    expect(read).toMatchObject({ state: "completed", version: 2, progress: { total: 12, done: 12, percent_complete: 100 } });
    const log = await allEvents(cluster, intent.id);
    const completed = log.filter((e) => e.event_type === "plan.completed");
    expect(completed).toHaveLength(1);
    expect(completed[0].payload).toMatchObject({ tasks_completed: 12 });
    // It is written with the last task's completion: after every task.completed.
    const lastTask = Math.max(...log.flatMap((e, n) => (e.event_type === "task.completed" ? [n] : [])));
    expect(log.indexOf(completed[0])).toBe(lastTask + 1);
  });

  it("intent graphs: concurrent dependency additions through both replicas that would close cycles: exactly one of each pair wins", async () => {
    const api = (path: string, init: { body?: unknown; headers?: Record<string, string> } = {}, second = false) =>
      second
        ? fetch(`${secondUrl}/api/v1${path}`, { method: "POST", headers: { "X-API-Key": TEST_KEYS.admin, "Content-Type": "application/json", ...init.headers }, body: JSON.stringify(init.body) }).then(async (r) => ({ status: r.status, body: await r.json() }))
        : cluster.api(path, init);
    for (let round = 0; round < 6; round++) {
      const x = (await cluster.api("/intents", { body: { title: "x" } })).body;
      const y = (await cluster.api("/intents", { body: { title: "y" } })).body;
      const results = await Promise.all([
        api(`/intents/${x.id}/dependencies`, { headers: { "If-Match": "1" }, body: { dependency_id: y.id } }),
        api(`/intents/${y.id}/dependencies`, { headers: { "If-Match": "1" }, body: { dependency_id: x.id } }, true),
      ]);
      expect(results.map((r) => r.status).sort(), JSON.stringify(results.map((r) => r.body))).toEqual([200, 409]);
    }
  });

  it("coordinators: agents dying together fail their leases over exactly once each, with two intents replicas consuming the deaths", async () => {
    const intents: string[] = [];
    const holders: string[] = [];
    for (let i = 0; i < 4; i++) {
      const holder = `replica-coord-${i}-${cluster.namespace}`;
      expect((await cluster.api("/agents", { body: { agent_id: holder, heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 } }, key: "agent" })).status).toBe(201);
      const intent = (await cluster.api("/intents", { body: { title: `coordinated ${i}`, status: "active" } })).body;
      const lease = await cluster.api("/coordinators", { key: null, headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": holder }, body: { agent_id: holder, intent_id: intent.id, heartbeat_interval_seconds: 3600, failover_candidates: [`standby-${i}`] } });
      expect(lease.status, JSON.stringify(lease.body)).toBe(201);
      intents.push(intent.id);
      holders.push(holder);
    }
    (cluster.clock as ManualClock).advance(61_000);
    await cluster.registry.sweeper.sweep();
    for (const [i, intentId] of intents.entries()) {
      await vi.waitFor(
        async () => {
          const leases = (await cluster.api(`/intents/${intentId}/coordinators`)).body;
          expect(leases.map((l: any) => [l.agent_id, l.status])).toEqual([
            [`standby-${i}`, "active"],
            [holders[i], "failed_over"],
          ]);
        },
        { timeout: 10_000, interval: 50 },
      );
      const events = (await cluster.api(`/intents/${intentId}/events?limit=100`)).body.events.filter((e: any) => e.event_type === "coordinator.failed_over");
      expect(events).toHaveLength(1);
    }
  });
});

