import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { memoryCommands, memoryStream, type AgentMemoryEvent } from "@intentmesh/contracts";
import { agentCaller } from "../support/cluster";
import { expectExactlyOnce, openFaultHarness, writeThroughFault, type FaultHarness } from "../support/fault-harness";
import { readStream } from "../support/service-process";

// Fault test: the memory service process is killed (SIGKILL) while entries are being written,
// then started again, with writers of both create paths. Every acknowledged entry is stored,
// nothing is stored twice, and every entry's memory.created event reaches the stream exactly once.
const caller = agentCaller("memory-writer");
let harness: FaultHarness;

beforeAll(async () => {
  harness = await openFaultHarness("memory-kill", caller);
});
afterAll(async () => {
  await harness?.close();
});

describe("killing the memory service mid-flight", () => {
  it("loses no acknowledged entry, stores none twice, and publishes every event exactly once", async () => {
    await harness.start("memory", { MEMORY_EPISODIC_CAPACITY: "1000000" });
    const { acknowledged } = await writeThroughFault({
      workers: 12,
      // Both create paths: episodic in a transaction (capacity), working in one statement. A retried
      // key stored before the kill answers 409: the next key follows.
      write: (w, n) =>
        harness.client.request(memoryCommands.create, caller, {
          body: { namespace: `kill.${w}`, key: `k${n}`, value: { w, n }, memory_type: w % 2 === 0 ? "episodic" : "working", tags: ["kill"] },
        }),
      fault: () => harness.killAndRestart("memory"),
      until: harness.until,
    });
    expect(new Set(acknowledged.map((e) => e.memory_type))).toEqual(new Set(["episodic", "working"]));
    await harness.drained("memory");

    const stored = await harness.rows<{ id: string; namespace: string; key: string }>(sql`select id, namespace, key from memory.entries`);
    expect(new Set(stored.map((r) => `${r.namespace}/${r.key}`)).size).toBe(stored.length);
    const published = await readStream(harness.bus, harness.bus.streamName(memoryStream.name), (msg) => msg.json<AgentMemoryEvent>());
    expect(published.every((e) => e.event_type === "memory.created")).toBe(true);
    expectExactlyOnce({
      acknowledged: acknowledged.map((e) => e.id),
      stored: stored.map((r) => r.id),
      published: { [memoryStream.name]: published.map((e) => String(e.payload.data.entry_id)) },
    });
  });
});
