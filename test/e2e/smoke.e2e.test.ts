import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe("an agent's first minute through the gateway", () => {
  it("creates, patches with If-Match, transitions and reads an intent, and sees its events over SSE", async () => {
    // The typed client: requests and answers typed by the route catalogue (packages/sdk).
    const client = cluster.sdk("admin");
    const created = await client.send("intentsCreate", { body: { title: "Write the launch post", status: "active" } });
    expect(created.status).toBe(201);
    expect(created.headers.get("etag")).toBe('"1"');
    const id = created.data.id;

    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${id}`, { "X-API-Key": "test-admin-key-0000000000000000" });
    expect(sse.status).toBe(200);

    const patched = await client.send("intentsPatchState", { intent_id: id, ifMatch: created.version!, body: [{ op: "set", path: "draft", value: "v1" }] });
    expect(patched.status).toBe(200);
    expect(patched.data.state).toEqual({ draft: "v1" });
    expect(patched.headers.get("etag")).toBe('"2"');

    const moved = await client.ops.intentsTransition({ intent_id: id, ifMatch: 2, body: { status: "completed" } });
    expect(moved).toMatchObject({ status: "completed", version: 3 });

    await sse.waitFor((c) => c.events.length >= 2);
    expect(sse.events.map((e) => e.event)).toEqual(["state_patched", "status_changed"]);
    expect(sse.events[1]!.data).toMatchObject({ intent_id: id, sequence: 3, payload: { from: "active", to: "completed" } });
    await sse.close();

    expect(await client.ops.intentsGet({ intent_id: id })).toMatchObject({ status: "completed", state: { draft: "v1" }, version: 3 });
  });
});
