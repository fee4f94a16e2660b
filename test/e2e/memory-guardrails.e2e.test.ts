import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { createIntent, expectRejected, uniqueTag } from "../support/e2e-helpers";
import { agentHeaders } from "../support/agents";

// The coordinator guardrails of 2.14 that need tasks, configured server-wide (MEMORY_GUARDRAILS); the
// denied semantic namespaces, memory's alone, are tested in services/memory/test/guardrails.service.test.ts.
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({
    memory: {
      guardrails: {
        denied_semantic_namespaces: ["secret.*"],
        max_working_memory_per_task: 1,
        max_episodic_memory_per_agent: 2,
        memory_archive_required: true,
      },
    },
  });
});
afterAll(async () => {
  await cluster?.stop();
});

describe("memory guardrails", () => {
  it("max_working_memory_per_task tightens every task's limit; max_episodic_memory_per_agent caps capacity; archives are required", async () => {
    const agentId = uniqueTag("g");
    await agentHeaders(cluster, agentId);
    const agent = cluster.sdk("agent", agentId);
    const coordinator = cluster.sdk("coordinator");
    const intent = await createIntent(cluster, { status: "active" });
    const task = await coordinator.ops.tasksCreate({ intent_id: intent.id, body: { title: "t", memory_policy: { archive_on_completion: false } } });
    expect((await agent.send("tasksClaim", { task_id: task.id, body: {} })).status).toBe(200);
    expect((await agent.send("memoryCreate", { body: { namespace: "w", key: "1", value: {}, scope: { task_id: task.id } } })).status).toBe(201);
    await expectRejected(agent.send("memoryCreate", { body: { namespace: "w", key: "2", value: {}, scope: { task_id: task.id } } }), 429, "CAPACITY_EXCEEDED");
    const summary = await agent.ops.memorySummary({ agent_id: agentId });
    expect(summary.episodic.capacity).toBe(2);
    const cancelled = await coordinator.send("tasksCancel", { task_id: task.id, ifMatch: (await cluster.sdk().ops.tasksGet({ task_id: task.id })).version, body: {} });
    expect(cancelled.status).toBe(200);
    // memory_archive_required: archived although the task's policy says no
    const { DeliverPolicy } = await import("@nats-io/jetstream");
    await vi.waitFor(async () => {
      const consumer = await cluster.bus.js.consumers.get(cluster.bus.streamName("IM_SYSTEM_EVENTS"), { filter_subjects: cluster.bus.subject(`im.sys.intent.${intent.id}.memory.archived`), deliver_policy: DeliverPolicy.All });
      const msg = await consumer.next({ expires: 1000 });
      expect(msg?.json<any>().payload.data.entries_archived).toBe(1);
    }, { timeout: 8000, interval: 200 });
  });
});
