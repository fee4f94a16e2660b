import { type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { intentsCommands, streams, type IntentEvent } from "@intentmesh/contracts";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { sql } from "drizzle-orm";
import { createTestDatabase, testNamespace } from "../support/backends";
import { agentCaller } from "../support/cluster";
import { killServiceProcess, readStream, startServiceProcess, untilHealthy, untilOutboxDrained } from "../support/service-process";

// Fault test: the intents service process is killed (SIGKILL) while writes are in flight, then
// started again. Every write it acknowledged is in the log, each intent's log has no gap, and
// every event reaches the stream exactly once.
const caller = agentCaller("writer");
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let namespace: string;
let bus: Bus;
let database: DatabaseHandle;
let service: ChildProcess | undefined;

const startService = () => startServiceProcess("intents", { DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace });

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  namespace = testNamespace();
  bus = await connectBus(inject("natsUrl"), "kill-test", namespace);
  bus.checks = { outputs: true, errors: true }; // services started here are held to their catalogue entries
  database = await openDatabase({ url: testDb.url });
});
afterAll(async () => {
  service?.kill("SIGKILL");
  await bus?.jsm.streams.delete(bus.streamName(streams.intents.name)).catch(() => undefined);
  await bus?.close();
  await database?.close();
  await testDb?.drop();
});

describe("killing the intents service mid-flight", () => {
  it("loses no acknowledged write and publishes every event exactly once", async () => {
    const client = new BusClient(bus, 1500);
    service = startService();
    await untilHealthy(client, "intents", caller);
    const intents = await Promise.all(Array.from({ length: 4 }, (_, i) => client.request(intentsCommands.create, caller, { body: { title: `kill ${i}`, status: "active" } })));

    const acknowledged: IntentEvent[] = [];
    let writing = true;
    const writers = Array.from({ length: 16 }, async (_, w) => {
      for (let n = 0; writing; n++) {
        const intent = intents[(w + n) % intents.length]!;
        try {
          acknowledged.push(
            await client.request(intentsCommands.appendEvent, caller, { intent_id: intent.id, if_match: null, body: { event_type: "work", payload: { w, n } } }),
          );
        } catch {
          await new Promise((r) => setTimeout(r, 20)); // the service is down: the caller retries later
        }
      }
    });

    await new Promise((r) => setTimeout(r, 400));
    const beforeKill = acknowledged.length;
    await killServiceProcess(service);
    await new Promise((r) => setTimeout(r, 200));
    service = startService();
    await untilHealthy(client, "intents", caller);
    const afterRestart = acknowledged.length;
    for (let i = 0; i < 100 && acknowledged.length < afterRestart + 20; i++) await new Promise((r) => setTimeout(r, 50));
    writing = false;
    await Promise.all(writers);
    expect(beforeKill).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(beforeKill);

    // The restarted relay drains what the killed one left.
    await untilOutboxDrained(client, "intents", caller);

    const logged = rowsOf<{ id: string; intent_id: string; sequence: string }>(
      await database.db.execute(sql`select id, intent_id, sequence from intents.events order by intent_id, sequence`),
    );
    const loggedIds = new Set(logged.map((e) => e.id));
    for (const event of acknowledged) expect(loggedIds.has(event.id)).toBe(true);
    for (const intent of intents) {
      const sequences = logged.filter((e) => e.intent_id === intent.id).map((e) => Number(e.sequence));
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1));
    }

    const published = await readStream(bus, bus.streamName(streams.intents.name), (msg) => msg.json<IntentEvent>().id);
    expect(new Set(published).size).toBe(published.length);
    expect(published.length).toBe(logged.length);
    expect(new Set(published)).toEqual(loggedIds);
  });
});
