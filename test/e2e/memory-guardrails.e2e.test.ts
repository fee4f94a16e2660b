import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { createIntent, expectError, uniqueTag } from "../support/e2e-helpers";
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
    const headers = await agentHeaders(cluster, agentId);
    const intent = await createIntent(cluster, { status: "active" });
    const task = (await cluster.api(`/intents/${intent.id}/tasks`, { body: { title: "t", memory_policy: { archive_on_completion: false } }, key: "coordinator" })).body;
    expect((await cluster.api(`/tasks/${task.id}/claim`, { body: {}, headers, key: null })).status).toBe(200);
    expect((await cluster.api("/memory", { body: { namespace: "w", key: "1", value: {}, scope: { task_id: task.id } }, headers, key: null })).status).toBe(201);
    expectError(await cluster.api("/memory", { body: { namespace: "w", key: "2", value: {}, scope: { task_id: task.id } }, headers, key: null }), 429, "CAPACITY_EXCEEDED");
    const summary = await cluster.api(`/agents/${agentId}/memory/summary`, { headers, key: null });
    expect(summary.body.episodic.capacity).toBe(2);
    const cancelled = await cluster.api(`/tasks/${task.id}/cancel`, { body: {}, headers: { "If-Match": String((await cluster.api(`/tasks/${task.id}`)).body.version) }, key: "coordinator" });
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
