import { type ChildProcess } from "node:child_process";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Sweeper } from "@intentmesh/service";
import { BusClient } from "@intentmesh/bus";
import { createLogger } from "@intentmesh/telemetry";
import { deleteNamespaceStreams, startTestCluster, type TestCluster } from "../support/cluster";
import { createIntent, expectRejected, keyHeader } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";
import { createTestDatabase } from "../support/backends";
import { killServiceProcess, startServiceProcess, untilHealthy } from "../support/service-process";

/** Issue 17 point 1: Prometheus metrics of every process. */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const scrape = async (url: string) => {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return res.text();
};
/** The value of one series, or undefined when it is not there. */
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("GET /metrics", () => {
  it("counts HTTP requests by route template and status, times them, and counts bus commands by subject and outcome", async () => {
    const intent = await createIntent(cluster);
    const before = valueOf(await scrape(`${cluster.baseUrl}/metrics`), 'intentmesh_http_requests_total{method="GET",route="/intents/{intent_id}",status="200"}') ?? 0;
    for (let i = 0; i < 3; i++) expect((await cluster.sdk().send("intentsGet", { intent_id: intent.id })).status).toBe(200);
    await expectRejected(cluster.sdk().send("intentsGet", { intent_id: "00000000-0000-4000-8000-000000000000" }), 404, "INTENT_NOT_FOUND");
    const text = await scrape(`${cluster.baseUrl}/metrics`);
    expect(valueOf(text, 'intentmesh_http_requests_total{method="GET",route="/intents/{intent_id}",status="200"}')).toBe(before + 3);
    expect(valueOf(text, 'intentmesh_http_requests_total{method="GET",route="/intents/{intent_id}",status="404"}')).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/intentmesh_http_request_duration_seconds_bucket\{le="[^"]+",method="GET",route="\/intents\/\{intent_id\}"\}/);
    expect(valueOf(text, 'intentmesh_bus_requests_total{subject="im.intents.get",outcome="ok"}')).toBeGreaterThanOrEqual(3);
    expect(valueOf(text, 'intentmesh_bus_requests_total{subject="im.intents.get",outcome="client_error"}')).toBeGreaterThanOrEqual(1);
    // No id ever becomes a label value.
    expect(text).not.toContain(intent.id);
  });

  it("reports the outbox backlog and lag per relay, consumer outcomes, pool use and process metrics", async () => {
    const intent = await createIntent(cluster, { status: "active" });
    await cluster.sdk().ops.intentsTransition({ intent_id: intent.id, ifMatch: intent.version, body: { status: "completed" } });
    await new Promise((r) => setTimeout(r, 300));
    const text = await scrape(`${cluster.baseUrl}/metrics`);
    expect(valueOf(text, 'intentmesh_outbox_backlog{relay="intents"}')).toBeGreaterThanOrEqual(0);
    expect(valueOf(text, 'intentmesh_outbox_lag_seconds{relay="intents"}')).toBeGreaterThanOrEqual(0);
    expect(valueOf(text, 'intentmesh_outbox_published_total{relay="intents"}')).toBeGreaterThan(0);
    expect(valueOf(text, 'intentmesh_consumer_messages_total{durable="channels-intent-status",outcome="applied"}')).toBeGreaterThan(0);
    expect(valueOf(text, 'intentmesh_db_pool_connections{state="total"}')).toBeGreaterThan(0);
    expect(text).toContain("process_cpu_seconds_total");
  });

  it("counts open SSE streams by kind", async () => {
    const intent = await createIntent(cluster);
    const gauge = async () => valueOf(await scrape(`${cluster.baseUrl}/metrics`), 'intentmesh_sse_connections{stream="intents"}') ?? 0;
    const before = await gauge();
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader());
    expect(await gauge()).toBe(before + 1);
    await sse.close();
    for (let i = 0; i < 40 && (await gauge()) !== before; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await gauge()).toBe(before);
  });

  it("times and counts sweeper passes and what they changed", async () => {
    class Counting extends Sweeper {
      passes = 0;
      async sweep() {
        this.passes++;
        return 2;
      }
    }
    const sweeper = new Counting(20, createLogger("test", "silent"), "metrics-test sweep");
    sweeper.start();
    for (let i = 0; i < 100 && sweeper.passes < 3; i++) await new Promise((r) => setTimeout(r, 10));
    await sweeper.stop();
    const text = await scrape(`${cluster.baseUrl}/metrics`);
    expect(valueOf(text, 'intentmesh_sweeper_runs_total{sweeper="metrics-test sweep",outcome="ok"}')).toBe(sweeper.passes);
    expect(valueOf(text, 'intentmesh_sweeper_actions_total{sweeper="metrics-test sweep"}')).toBe(sweeper.passes * 2);
    expect(valueOf(text, 'intentmesh_sweeper_duration_seconds_count{sweeper="metrics-test sweep"}')).toBe(sweeper.passes);
  });
});

describe("a service process's own /metrics (METRICS_PORT)", () => {
  let child: ChildProcess | undefined;
  let testDb: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  afterAll(async () => {
    if (child) await killServiceProcess(child);
    await testDb?.drop();
  });

  it("serves the bus metrics of the commands it answered, and /healthz and /readyz for its probes", async () => {
    testDb = await createTestDatabase(inject("databaseUrl"));
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const address = probe.address() as net.AddressInfo;
        probe.close(() => resolve(address.port));
      });
    });
    child = startServiceProcess("registry", { DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: cluster.namespace + "m", METRICS_PORT: String(port) });
    const { connectBus } = await import("@intentmesh/bus");
    const bus = await connectBus(inject("natsUrl"), "metrics-test", cluster.namespace + "m");
    try {
      const caller = { principal: "admin", roles: ["admin" as const], actor: "admin", agent_id: null };
      await untilHealthy(new BusClient(bus, 1000), "registry", caller);
      const text = await scrape(`http://127.0.0.1:${port}/metrics`);
      expect(valueOf(text, 'intentmesh_bus_requests_total{subject="im.registry.health",outcome="ok"}')).toBeGreaterThanOrEqual(1);
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
      // The probes of the process itself: alive, and ready while its database and NATS answer.
      expect(await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()).toEqual({ status: "ok" });
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ ready: true, nats: "ok", database: "ok" });
      // Its database gone (dropped under it), the process stays alive but is no longer ready.
      await testDb!.drop();
      testDb = undefined;
      const deadline = Date.now() + 10_000;
      let notReady = await fetch(`http://127.0.0.1:${port}/readyz`);
      while (notReady.status === 200 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        notReady = await fetch(`http://127.0.0.1:${port}/readyz`);
      }
      expect(notReady.status).toBe(503);
      expect(await notReady.json()).toMatchObject({ ready: false, database: "unreachable" });
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      if (child) await killServiceProcess(child);
      child = undefined;
      await deleteNamespaceStreams(bus, cluster.namespace + "m");
      await bus.close();
    }
  });
});
