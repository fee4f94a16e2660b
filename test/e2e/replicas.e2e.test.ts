import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Server } from "node:http";
import { connectBus, type Bus } from "@intentmesh/bus";
import { createLogger } from "@intentmesh/telemetry";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";
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
});
