import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
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
    const created = await cluster.api("/intents", { body: { title: "embedded", status: "active" } });
    expect(created.status).toBe(201);
    const patched = await cluster.api(`/intents/${created.body.id}/state`, { body: { patches: [{ op: "append", path: "log", value: 1 }] }, headers: { "If-Match": "1" } });
    expect(patched.status).toBe(200);
    const stale = await cluster.api(`/intents/${created.body.id}/state`, { body: [{ op: "append", path: "log", value: 2 }], headers: { "If-Match": "1" } });
    expect(stale.status).toBe(409);
    const events = await cluster.api(`/intents/${created.body.id}/events`);
    expect(events.body.events.map((e: { event_type: string }) => e.event_type)).toEqual(["intent_created", "state_patched"]);
    const ready = await cluster.api("/readyz", { key: null });
    expect(ready.status).toBe(200);
    expect(ready.body.services.intents.database).toBe("ok");
    // The relay publishes right after each commit; the outbox drains to zero.
    for (let i = 0; i < 40 && (await cluster.intents.relay.backlog()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await cluster.intents.relay.backlog()).toBe(0);
  });

  it("serves intent graphs (uuid[] with its GIN index, recursive walks, the advisory lock) and coordinator leases", async () => {
    const root = (await cluster.api("/intents", { body: { title: "root" } })).body;
    const a = (await cluster.api(`/intents/${root.id}/children`, { body: { title: "a" } })).body;
    const b = (await cluster.api(`/intents/${root.id}/children`, { body: { title: "b", depends_on: [a.id] } })).body;
    const deep = (await cluster.api(`/intents/${a.id}/children`, { body: { title: "deep" } })).body;
    expect((await cluster.api(`/intents/${root.id}/descendants`)).body.descendants.map((i: { id: string }) => i.id).sort()).toEqual([a.id, b.id, deep.id].sort());
    expect((await cluster.api(`/intents/${deep.id}/ancestors`)).body.ancestors.map((i: { id: string }) => i.id)).toEqual([a.id, root.id]);
    expect((await cluster.api(`/intents/${a.id}/dependents`)).body.dependents.map((i: { id: string }) => i.id)).toEqual([b.id]);
    const cycle = await cluster.api(`/intents/${a.id}/dependencies`, { headers: { "If-Match": "1" }, body: { dependency_id: b.id } });
    expect(cycle.status).toBe(409);
    expect(cycle.body.code).toBe("DEPENDENCY_CYCLE");
    const lease = await cluster.api("/coordinators", { body: { agent_id: "embedded-coordinator", intent_id: root.id } });
    expect(lease.status).toBe(201);
    expect((await cluster.api(`/intents/${root.id}/coordinators`)).body.map((l: { id: string }) => l.id)).toEqual([lease.body.id]);
  });

  it("runs the agent lifecycle: registration, silence, death, and the dead agent's leases expired", async () => {
    const agentId = "embedded-agent";
    const registered = await cluster.api("/agents", { body: { agent_id: agentId, heartbeat_config: { interval_seconds: 1, unhealthy_after_seconds: 2, dead_after_seconds: 4 } }, key: "agent" });
    expect(registered.status).toBe(201);
    const intent = (await cluster.api("/intents", { body: { title: "leased", status: "active" } })).body;
    const lease = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "work", ttl_seconds: 600 }, headers: { "X-Agent-ID": agentId }, key: "agent" });
    expect(lease.status).toBe(201);
    (cluster.clock as ManualClock).advance(5000);
    expect(await cluster.registry.sweeper.sweep()).toBe(2);
    expect((await cluster.api(`/agents/${agentId}`, { key: "agent" })).body.status).toBe("dead");
    await vi.waitFor(async () => {
      const events = (await cluster.api(`/intents/${intent.id}/events`)).body.events;
      expect(events.at(-1)).toMatchObject({ event_type: "lease_released", payload: { reason: "agent_dead" } });
    });
  });

  it("keeps working memory of a task and archives it when the task completes", async () => {
    const agent = { "X-Agent-ID": "embedded-memory-agent" };
    expect((await cluster.api("/agents", { body: { agent_id: "embedded-memory-agent" }, key: "agent" })).status).toBe(201);
    const intent = (await cluster.api("/intents", { body: { title: "memory", status: "active" } })).body;
    const task = (await cluster.api(`/intents/${intent.id}/tasks`, { body: { title: "t" }, key: "coordinator" })).body;
    expect((await cluster.api(`/tasks/${task.id}/claim`, { body: {}, headers: agent, key: "agent" })).status).toBe(200);
    const entry = await cluster.api("/memory", { body: { namespace: "w", key: "k", value: { v: 1 }, scope: { task_id: task.id } }, headers: agent, key: "agent" });
    expect(entry.status, JSON.stringify(entry.body)).toBe(201);
    const started = await cluster.api(`/tasks/${task.id}/start`, { body: {}, headers: agent, key: "agent" });
    expect((await cluster.api(`/tasks/${task.id}/complete`, { body: {}, headers: { ...agent, "If-Match": String(started.body.version) }, key: "agent" })).status).toBe(200);
    await vi.waitFor(async () => expect((await cluster.api(`/memory/${entry.body.id}`, { headers: agent, key: "agent" })).status).toBe(404), { timeout: 10_000, interval: 100 });
  });
});
