import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { BodyOf } from "@intentmesh/sdk";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, keyHeader } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";

/**
 * Intent graphs across the gateway's live stream: a dependent's intent.ready announcement reaches
 * its SSE subscribers. The graph's own rules are tested in the intents service's lane
 * (services/intents/test/graphs.service.test.ts).
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const admin = () => cluster.sdk();
const get = (id: string) => admin().ops.intentsGet({ intent_id: id });

async function setStatus(id: string, status: BodyOf<"intentsTransition">["status"]) {
  const current = await get(id);
  return admin().send("intentsTransition", { intent_id: id, ifMatch: current.version, body: { status } });
}

async function complete(id: string) {
  if ((await get(id)).status === "draft") expect((await setStatus(id, "active")).status).toBe(200);
  const res = await setStatus(id, "completed");
  expect(res.status).toBe(200);
  return res.data;
}

describe("status rules", () => {
  it("completing the last dependency announces each dependent ready once (intent.ready), in its log and over SSE", async () => {
    const a = await createIntent(cluster, { title: "a", status: "active" });
    const b = await createIntent(cluster, { title: "b", status: "active" });
    const both = await createIntent(cluster, { title: "needs a and b", depends_on: [a.id, b.id] });
    const onlyA = await createIntent(cluster, { title: "needs a", depends_on: [a.id] });
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${onlyA.id}`, keyHeader());
    expect(sse.status).toBe(200);

    const readyEvents = async (id: string) => (await allEvents(cluster, id)).filter((e) => e.event_type === "intent.ready");
    await complete(a.id);
    await vi.waitFor(async () => expect(await readyEvents(onlyA.id)).toHaveLength(1), { timeout: 5000, interval: 50 });
    const [announced] = await readyEvents(onlyA.id);
    expect(announced!.payload).toEqual({ dependency_id: a.id, cause: "dependency_completed", depends_on: [a.id], status: "active" });
    await sse.waitFor((c) => c.events.some((e) => e.event === "intent.ready"));
    await sse.close();
    expect(await readyEvents(both.id)).toHaveLength(0);

    await complete(b.id);
    await vi.waitFor(async () => expect(await readyEvents(both.id)).toHaveLength(1), { timeout: 5000, interval: 50 });
    expect((await readyEvents(both.id))[0]!.payload).toMatchObject({ dependency_id: b.id, depends_on: [a.id, b.id] });
    // Now it may complete.
    await complete(both.id);
    expect(await readyEvents(onlyA.id)).toHaveLength(1);
  });

});
