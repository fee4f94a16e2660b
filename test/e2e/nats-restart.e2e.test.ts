import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { intentsCommands, type Caller } from "@intentmesh/contracts";
import { BusClient } from "@intentmesh/bus";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { PrivateNats } from "../support/private-nats";
import { SseClient } from "../support/sse";
import { patchState } from "../../services/intents/src/intents/patch-state";

// Fault test: NATS goes away while the service keeps committing (a write already in flight, a
// sweeper tick). Nothing is lost: the outbox holds the events until NATS is back, the relay
// publishes them, and an SSE subscriber that resumes with Last-Event-ID sees every one once.
let nats: PrivateNats;
let cluster: TestCluster;
const caller: Caller = { principal: "admin", roles: ["admin"], actor: "admin", agent_id: null };

beforeAll(async () => {
  nats = await PrivateNats.start();
  cluster = await startTestCluster({ natsUrl: nats.url });
});
afterAll(async () => {
  // Running again (if a test left it stopped) so the cluster can stop cleanly; a no-op otherwise.
  await nats?.startServer().catch(() => undefined);
  await cluster?.stop();
  await nats?.destroy();
});

async function until(check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a NATS restart", () => {
  it("loses no event committed while NATS was down", async () => {
    const client = new BusClient(cluster.bus, 5000);
    const intent = await client.request(intentsCommands.create, caller, { body: { title: "survives", status: "active" } });
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, { "X-API-Key": TEST_KEYS.admin });
    await patchState(cluster.intents.ctx, intent.id, 1, [{ op: "set", path: "before", value: true }], caller);
    await sse.waitFor((c) => c.events.length === 1);

    await nats.stopServer();
    // Commits go on without NATS: their events wait in the outbox.
    for (let version = 2; version <= 6; version++) {
      await patchState(cluster.intents.ctx, intent.id, version, [{ op: "set", path: `down${version}`, value: version }], caller);
    }
    expect(await cluster.intents.relay.backlog()).toBe(5);

    await nats.startServer();
    await until(async () => (await cluster.intents.relay.backlog()) === 0);

    // The subscriber that stayed connected gets every missed event once, in order: the gateway's
    // JetStream consumer resumes after the restart and gaps are filled from the log.
    await sse.waitFor((c) => c.events.length >= 6, 10_000);
    expect(sse.events.map((e) => e.data.sequence)).toEqual([2, 3, 4, 5, 6, 7]);

    // A client that lost its connection resumes with Last-Event-ID and gets the same events.
    const lastBeforeOutage = sse.events[0]!.id;
    await sse.close();
    const resumed = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, { "X-API-Key": TEST_KEYS.admin, "Last-Event-ID": lastBeforeOutage });
    await resumed.waitFor((c) => c.events.length >= 5, 10_000);
    expect(resumed.events.map((e) => e.data.sequence)).toEqual([3, 4, 5, 6, 7]);

    // And the live feed works again after the restart.
    await patchState(cluster.intents.ctx, intent.id, 7, [{ op: "set", path: "after", value: true }], caller);
    await resumed.waitFor((c) => c.events.length === 6, 10_000);
    expect(resumed.events[5]!.data.sequence).toBe(8);
    await resumed.close();
  });
});
