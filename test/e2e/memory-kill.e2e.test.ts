import { type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { memoryCommands, memoryStream, streams, systemEventStream, type AgentMemoryEvent, type MemoryEntry } from "@intentmesh/contracts";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { sql } from "drizzle-orm";
import { createTestDatabase, testNamespace } from "../support/backends";
import { agentCaller } from "../support/cluster";
import { killServiceProcess, readStream, startServiceProcess, untilHealthy, untilOutboxDrained } from "../support/service-process";

// Fault test: the memory service process is killed (SIGKILL) while entries are being written,
// then started again, with writers of both create paths. Every acknowledged entry is stored, nothing is stored twice, and every
// entry's memory.created event reaches the stream exactly once.
const caller = agentCaller("memory-writer");
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let namespace: string;
let bus: Bus;
let database: DatabaseHandle;
let service: ChildProcess | undefined;

const startService = () =>
  startServiceProcess("memory", { DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace, MEMORY_EPISODIC_CAPACITY: "1000000" });

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  namespace = testNamespace();
  bus = await connectBus(inject("natsUrl"), "memory-kill-test", namespace);
  bus.checks = { outputs: true, errors: true }; // services started here are held to their catalogue entries
  database = await openDatabase({ url: testDb.url });
});
afterAll(async () => {
  service?.kill("SIGKILL");
  for (const name of [memoryStream.name, systemEventStream.name, streams.intents.name]) await bus?.jsm.streams.delete(bus.streamName(name)).catch(() => undefined);
  await bus?.close();
  await database?.close();
  await testDb?.drop();
});

describe("killing the memory service mid-flight", () => {
  it("loses no acknowledged entry, stores none twice, and publishes every event exactly once", async () => {
    const client = new BusClient(bus, 1500);
    service = startService();
    await untilHealthy(client, "memory", caller);

    const acknowledged: MemoryEntry[] = [];
    let writing = true;
    const writers = Array.from({ length: 12 }, async (_, w) => {
      for (let n = 0; writing; n++) {
        try {
          acknowledged.push(
            await client.request(memoryCommands.create, caller, {
              // Both create paths: episodic in a transaction (capacity), working in one statement.
              body: { namespace: `kill.${w}`, key: `k${n}`, value: { w, n }, memory_type: w % 2 === 0 ? "episodic" : "working", tags: ["kill"] },
            }),
          );
        } catch {
          // Down, or the retried key was stored before the kill (409): either way the next key follows.
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    });

    await new Promise((r) => setTimeout(r, 500));
    const beforeKill = acknowledged.length;
    await killServiceProcess(service);
    await new Promise((r) => setTimeout(r, 200));
    service = startService();
    await untilHealthy(client, "memory", caller);
    const afterRestart = acknowledged.length;
    for (let i = 0; i < 100 && acknowledged.length < afterRestart + 20; i++) await new Promise((r) => setTimeout(r, 50));
    writing = false;
    await Promise.all(writers);
    expect(beforeKill).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(beforeKill);
    expect(new Set(acknowledged.map((e) => e.memory_type))).toEqual(new Set(["episodic", "working"]));

    await untilOutboxDrained(client, "memory", caller);

    const stored = rowsOf<{ id: string; namespace: string; key: string }>(await database.db.execute(sql`select id, namespace, key from memory.entries`));
    const storedIds = new Set(stored.map((r) => r.id));
    for (const entry of acknowledged) expect(storedIds.has(entry.id)).toBe(true);
    expect(new Set(stored.map((r) => `${r.namespace}/${r.key}`)).size).toBe(stored.length);

    const published = await readStream(bus, bus.streamName(memoryStream.name), (msg) => msg.json<AgentMemoryEvent>());
    expect(published.every((e) => e.event_type === "memory.created")).toBe(true);
    const publishedEntries = published.map((e) => String(e.payload.data.entry_id));
    expect(new Set(publishedEntries).size).toBe(publishedEntries.length);
    expect(new Set(publishedEntries)).toEqual(storedIds);
  });
});
