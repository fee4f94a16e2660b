import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";

// The first-run default: no DATABASE_URL, an embedded PGlite database under the data directory.
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ embedded: true });
});
afterAll(async () => {
  await cluster?.stop();
});

describe("the cluster on its embedded database", () => {
  it("migrates, serves writes with their events, and reports ready", async () => {
    expect(cluster.database.kind).toBe("pglite");
    const created = await cluster.api("/intents", { body: { title: "embedded" } });
    expect(created.status).toBe(201);
    const patched = await cluster.api(`/intents/${created.body.id}/state`, { body: { patches: [{ op: "append", path: "log", value: 1 }] }, headers: { "If-Match": "1" } });
    expect(patched.status).toBe(200);
    const stale = await cluster.api(`/intents/${created.body.id}/state`, { body: [{ op: "append", path: "log", value: 2 }], headers: { "If-Match": "1" } });
    expect(stale.status).toBe(409);
    const events = await cluster.api(`/intents/${created.body.id}/events`);
    expect(events.body.events.map((e: { event_type: string }) => e.event_type)).toEqual(["intent.created", "intent.state_patched"]);
    const ready = await cluster.api("/readyz", { key: null });
    expect(ready.status).toBe(200);
    expect(ready.body.services.intents.database).toBe("ok");
    // The relay publishes right after each commit; the outbox drains to zero.
    for (let i = 0; i < 40 && (await cluster.intents.relay.backlog()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await cluster.intents.relay.backlog()).toBe(0);
  });
});
