import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DeliverPolicy } from "@nats-io/jetstream";
import { healthCommand, intentsCommands, streams, type Intent, type IntentEvent } from "@intentmesh/contracts";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { sql } from "drizzle-orm";
import { createTestDatabase, testNamespace } from "../support/backends";
import { agentCaller } from "../support/cluster";

// Fault test: the intents service process is killed (SIGKILL) while writes are in flight, then
// started again. Every write it acknowledged is in the log, each intent's log has no gap, and
// every event reaches the stream exactly once.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const caller = agentCaller("writer");
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let namespace: string;
let bus: Bus;
let database: DatabaseHandle;
let service: ChildProcess | undefined;

function startService(): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", path.join(root, "services/intents/src/main.ts")], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace, LOG_LEVEL: "silent" },
    stdio: "ignore",
  });
}

async function untilHealthy(client: BusClient): Promise<{ outbox_backlog: number }> {
  for (let i = 0; i < 200; i++) {
    try {
      return await client.request(healthCommand("intents"), caller, {});
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error("the intents service did not become healthy");
}

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  namespace = testNamespace();
  bus = await connectBus(inject("natsUrl"), "kill-test", namespace);
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
    await untilHealthy(client);
    const intents = await Promise.all(Array.from({ length: 4 }, (_, i) => client.request<Intent>(intentsCommands.create, caller, { body: { title: `kill ${i}` } })));

    const acknowledged: IntentEvent[] = [];
    let writing = true;
    const writers = Array.from({ length: 16 }, async (_, w) => {
      for (let n = 0; writing; n++) {
        const intent = intents[(w + n) % intents.length]!;
        try {
          acknowledged.push(
            await client.request<IntentEvent>(intentsCommands.appendEvent, caller, { intent_id: intent.id, if_match: null, body: { event_type: "work", payload: { w, n } } }),
          );
        } catch {
          await new Promise((r) => setTimeout(r, 20)); // the service is down: the caller retries later
        }
      }
    });

    await new Promise((r) => setTimeout(r, 400));
    const beforeKill = acknowledged.length;
    service.kill("SIGKILL");
    await new Promise((resolve) => service!.once("exit", resolve));
    await new Promise((r) => setTimeout(r, 200));
    service = startService();
    await untilHealthy(client);
    const afterRestart = acknowledged.length;
    for (let i = 0; i < 100 && acknowledged.length < afterRestart + 20; i++) await new Promise((r) => setTimeout(r, 50));
    writing = false;
    await Promise.all(writers);
    expect(beforeKill).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(beforeKill);

    // The restarted relay drains what the killed one left.
    for (let i = 0; i < 100 && (await untilHealthy(client)).outbox_backlog > 0; i++) await new Promise((r) => setTimeout(r, 100));

    const logged = rowsOf<{ id: string; intent_id: string; sequence: string }>(
      await database.db.execute(sql`select id, intent_id, sequence from intents.events order by intent_id, sequence`),
    );
    const loggedIds = new Set(logged.map((e) => e.id));
    for (const event of acknowledged) expect(loggedIds.has(event.id)).toBe(true);
    for (const intent of intents) {
      const sequences = logged.filter((e) => e.intent_id === intent.id).map((e) => Number(e.sequence));
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1));
    }

    const stream = bus.streamName(streams.intents.name);
    const consumer = await bus.js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
    const published: string[] = [];
    const { state } = await bus.jsm.streams.info(stream);
    while (published.length < state.messages) {
      const batch = await consumer.fetch({ max_messages: state.messages - published.length, expires: 2000 });
      let got = 0;
      for await (const msg of batch) {
        published.push(msg.json<IntentEvent>().id);
        got += 1;
        if (msg.info.pending === 0) break;
      }
      if (!got) break;
    }
    expect(new Set(published).size).toBe(published.length);
    expect(published.length).toBe(logged.length);
    expect(new Set(published)).toEqual(loggedIds);
  });
});
