import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import type { Server } from "node:http";
import { connectBus, type Bus } from "@intentmesh/bus";
import { createLogger } from "@intentmesh/telemetry";
import { createClient, IntentmeshError, type Intentmesh } from "@intentmesh/sdk";
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
/** The typed client (admin key) against the first gateway, and against the second. */
let admin: Intentmesh;
let second: Intentmesh;

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
  admin = cluster.sdk();
  second = createClient({ baseUrl: secondUrl, apiKey: TEST_KEYS.admin, retry: { baseDelayMs: 10 } });
});
afterAll(async () => {
  await secondGateway?.stop();
  await secondIntents?.stop();
  await secondBus?.close();
  await cluster?.stop();
});

describe("two replicas of the gateway and of the intents service", () => {
  it("stream to a subscriber of one gateway the writes made through the other, in order, once", async () => {
    const created = await admin.ops.intentsCreate({ body: { title: "replicated", status: "active" } });
    const id = created.id;
    const sse = await SseClient.open(`${secondUrl}/api/v1/subscribe/intents/${id}`, { "X-API-Key": TEST_KEYS.admin });
    expect(sse.status).toBe(200);

    // Forty appends through the first gateway; the two intents replicas answer them between them.
    await Promise.all(Array.from({ length: 40 }, (_, i) => admin.ops.intentsAppendEvent({ intent_id: id, body: { event_type: "step", payload: { i } } })));
    await sse.waitFor((c) => c.events.length >= 40, 10_000);
    expect(sse.events.map((e) => e.data.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => i + 2));
    await sse.close();

    const backlog = async () => (await cluster.intents.relay.backlog()) + (await secondIntents.relay.backlog());
    for (let i = 0; i < 40 && (await backlog()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await backlog()).toBe(0);
  });

  it("serve reads through either gateway", async () => {
    const created = await admin.ops.intentsCreate({ body: { title: "either", status: "active" } });
    const res = await second.send("intentsGet", { intent_id: created.id });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"1"');
  });

  it("a plan follows its tasks exactly when they complete at once through both gateways and both intents replicas (RFC 0012)", async () => {
    const intent = await admin.ops.intentsCreate({ body: { title: "planned", status: "active" } });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await admin.ops.tasksCreateWithIntentId({ body: { intent_id: intent.id, name: `t${i}` } })).id);
    const plan = await admin.ops.plansCreate({ body: { intent_id: intent.id, tasks: ids, state: "active" } });
    for (const id of ids) {
      expect((await admin.send("tasksClaim", { task_id: id, body: {} })).status).toBe(200);
      expect((await admin.send("tasksStart", { task_id: id, body: {} })).status).toBe(200);
    }
    // Half through each gateway, all at once: the two intents replicas serve them between them.
    const answers = await Promise.all(ids.map((id, i) => (i % 2 ? second : admin).send("tasksComplete", { task_id: id, body: { output: {} } }).then((r) => r.status)));
    expect(answers).toEqual(ids.map(() => 200));
    const read = await admin.ops.plansGet({ plan_id: plan.id });
    expect(read).toMatchObject({ state: "completed", version: 2, progress: { total: 12, done: 12, percent_complete: 100 } });
    const log = await allEvents(cluster, intent.id);
    const completed = log.filter((e) => e.event_type === "plan.completed");
    expect(completed).toHaveLength(1);
    expect(completed[0]!.payload).toMatchObject({ tasks_completed: 12 });
    // It is written with the last task's completion: after every task.completed.
    const lastTask = Math.max(...log.flatMap((e, n) => (e.event_type === "task.completed" ? [n] : [])));
    expect(log.indexOf(completed[0]!)).toBe(lastTask + 1);
  });

  it("intent graphs: concurrent dependency additions through both replicas that would close cycles: exactly one of each pair wins", async () => {
    for (let round = 0; round < 6; round++) {
      const x = await admin.ops.intentsCreate({ body: { title: "x" } });
      const y = await admin.ops.intentsCreate({ body: { title: "y" } });
      const results = await Promise.allSettled([
        admin.send("graphAddDependency", { intent_id: x.id, ifMatch: 1, body: { dependency_id: y.id } }),
        second.send("graphAddDependency", { intent_id: y.id, ifMatch: 1, body: { dependency_id: x.id } }),
      ]);
      const statuses = results.map((r) => (r.status === "fulfilled" ? r.value.status : r.reason instanceof IntentmeshError ? r.reason.status : r.reason));
      expect(statuses.sort(), JSON.stringify(results.map((r) => (r.status === "fulfilled" ? r.value.data : String(r.reason))))).toEqual([200, 409]);
    }
  });

  it("coordinators: agents dying together fail their leases over exactly once each, with two intents replicas consuming the deaths", async () => {
    const intents: string[] = [];
    const holders: string[] = [];
    for (let i = 0; i < 4; i++) {
      const holder = `replica-coord-${i}-${cluster.namespace}`;
      expect((await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: holder, heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 } } })).status).toBe(201);
      const intent = await admin.ops.intentsCreate({ body: { title: `coordinated ${i}`, status: "active" } });
      const lease = await cluster.sdk("agent", holder).send("coordinatorsCreateLease", { body: { agent_id: holder, intent_id: intent.id, heartbeat_interval_seconds: 3600, failover_candidates: [`standby-${i}`] } });
      expect(lease.status).toBe(201);
      intents.push(intent.id);
      holders.push(holder);
    }
    (cluster.clock as ManualClock).advance(61_000);
    await cluster.registry.sweeper.sweep();
    for (const [i, intentId] of intents.entries()) {
      await vi.waitFor(
        async () => {
          const leases = await admin.ops.coordinatorsListForIntent({ intent_id: intentId });
          expect(leases.map((l) => [l.agent_id, l.status])).toEqual([
            [`standby-${i}`, "active"],
            [holders[i], "failed_over"],
          ]);
        },
        { timeout: 10_000, interval: 50 },
      );
      const events = (await admin.ops.intentsListEvents({ intent_id: intentId, query: { limit: 100 } })).events.filter((e) => e.event_type === "coordinator.failed_over");
      expect(events).toHaveLength(1);
    }
  });
});

