import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { expectRejected } from "../support/e2e-helpers";

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
    const client = cluster.sdk();
    const created = await client.send("intentsCreate", { body: { title: "embedded", status: "active" } });
    expect(created.status).toBe(201);
    const patched = await client.send("intentsPatchState", { intent_id: created.data.id, ifMatch: 1, body: [{ op: "append", path: "log", value: 1 }] });
    expect(patched.status).toBe(200);
    await expectRejected(client.ops.intentsPatchState({ intent_id: created.data.id, ifMatch: 1, body: [{ op: "append", path: "log", value: 2 }] }), 409, "VERSION_MISMATCH");
    const events = await client.ops.intentsListEvents({ intent_id: created.data.id });
    expect(events.events.map((e) => e.event_type)).toEqual(["intent_created", "state_patched"]);
    // Raw on purpose: /readyz is an operations endpoint outside the route catalogue.
    const ready = await cluster.api("/readyz", { key: null });
    expect(ready.status).toBe(200);
    expect(ready.body.services.intents.database).toBe("ok");
    // The relay publishes right after each commit; the outbox drains to zero.
    for (let i = 0; i < 40 && (await cluster.intents.relay.backlog()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await cluster.intents.relay.backlog()).toBe(0);
  });

  it("serves intent graphs (uuid[] with its GIN index, recursive walks, the advisory lock) and coordinator leases", async () => {
    const client = cluster.sdk();
    const root = await client.ops.intentsCreate({ body: { title: "root" } });
    const a = await client.ops.graphCreateChild({ intent_id: root.id, body: { title: "a" } });
    const b = await client.ops.graphCreateChild({ intent_id: root.id, body: { title: "b", depends_on: [a.id] } });
    const deep = await client.ops.graphCreateChild({ intent_id: a.id, body: { title: "deep" } });
    expect((await client.ops.graphDescendants({ intent_id: root.id })).descendants.map((i) => i.id).sort()).toEqual([a.id, b.id, deep.id].sort());
    expect((await client.ops.graphAncestors({ intent_id: deep.id })).ancestors.map((i) => i.id)).toEqual([a.id, root.id]);
    expect((await client.ops.graphDependents({ intent_id: a.id })).dependents.map((i) => i.id)).toEqual([b.id]);
    await expectRejected(client.ops.graphAddDependency({ intent_id: a.id, ifMatch: 1, body: { dependency_id: b.id } }), 409, "DEPENDENCY_CYCLE");
    const lease = await client.send("coordinatorsCreateLease", { body: { agent_id: "embedded-coordinator", intent_id: root.id } });
    expect(lease.status).toBe(201);
    expect((await client.ops.coordinatorsListForIntent({ intent_id: root.id })).map((l) => l.id)).toEqual([lease.data.id]);
  });

  it("runs the agent lifecycle: registration, silence, death, and the dead agent's leases expired", async () => {
    const agentId = "embedded-agent";
    const agent = cluster.sdk("agent", agentId);
    const registered = await agent.send("agentsRegister", { body: { agent_id: agentId, heartbeat_config: { interval_seconds: 1, unhealthy_after_seconds: 2, dead_after_seconds: 4 } } });
    expect(registered.status).toBe(201);
    const intent = await cluster.sdk().ops.intentsCreate({ body: { title: "leased", status: "active" } });
    const lease = await agent.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "work", ttl_seconds: 600 } });
    expect(lease.status).toBe(201);
    (cluster.clock as ManualClock).advance(5000);
    expect(await cluster.registry.sweeper.sweep()).toBe(2);
    expect((await cluster.sdk("agent").ops.agentsGet({ agent_id: agentId })).status).toBe("dead");
    await vi.waitFor(async () => {
      const events = (await cluster.sdk().ops.intentsListEvents({ intent_id: intent.id })).events;
      expect(events.at(-1)).toMatchObject({ event_type: "lease_released", payload: { reason: "agent_dead" } });
    });
  });

  it("keeps working memory of a task and archives it when the task completes", async () => {
    const agent = cluster.sdk("agent", "embedded-memory-agent");
    expect((await agent.send("agentsRegister", { body: { agent_id: "embedded-memory-agent" } })).status).toBe(201);
    const intent = await cluster.sdk().ops.intentsCreate({ body: { title: "memory", status: "active" } });
    const task = await cluster.sdk("coordinator").ops.tasksCreate({ intent_id: intent.id, body: { title: "t" } });
    expect((await agent.send("tasksClaim", { task_id: task.id, body: {} })).status).toBe(200);
    const entry = await agent.send("memoryCreate", { body: { namespace: "w", key: "k", value: { v: 1 }, scope: { task_id: task.id } } });
    expect(entry.status).toBe(201);
    const started = await agent.ops.tasksStart({ task_id: task.id, body: {} });
    expect((await agent.send("tasksComplete", { task_id: task.id, ifMatch: started.version, body: {} })).status).toBe(200);
    await vi.waitFor(async () => {
      await expect(agent.ops.memoryGet({ entry_id: entry.data.id })).rejects.toMatchObject({ status: 404 });
    }, { timeout: 10_000, interval: 100 });
  });
});
