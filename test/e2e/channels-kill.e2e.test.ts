import { type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { channelsCommands, channelStream, intentsCommands, streams, systemEventStream, type Caller, type Message } from "@intentmesh/contracts";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { createLogger } from "@intentmesh/telemetry";
import { startIntentsService, type IntentsService } from "../../services/intents/src/service";
import { createTestDatabase, testNamespace } from "../support/backends";
import { agentCaller } from "../support/cluster";
import { killServiceProcess, readStream, startServiceProcess, untilHealthy, untilOutboxDrained } from "../support/service-process";

// Fault test: the channels process is killed (SIGKILL) while 12 senders post to an audit channel,
// then started again. Every acknowledged message is stored once, the channel's sequence has no
// gap, the channel stream carries each message exactly once, and the intent's log gets exactly
// one channel_message event per stored message.
const sender = agentCaller("kill-sender");
const admin: Caller = { principal: "admin", roles: ["admin"], actor: "admin", agent_id: null };
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let namespace: string;
let bus: Bus;
let database: DatabaseHandle;
let intents: IntentsService;
let service: ChildProcess | undefined;

const startChannels = () => startServiceProcess("channels", { DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace });

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  namespace = testNamespace();
  bus = await connectBus(inject("natsUrl"), "channels-kill-test", namespace);
  bus.checks = { outputs: true, errors: true }; // services started here are held to their catalogue entries
  database = await openDatabase({ url: testDb.url });
  intents = await startIntentsService({ bus, database, logger: createLogger("test", "silent"), leaseSweepIntervalMs: 3_600_000 });
});
afterAll(async () => {
  service?.kill("SIGKILL");
  await intents?.stop();
  for (const name of [channelStream.name, systemEventStream.name, streams.intents.name, streams.registry.name, streams.portfolios.name]) {
    await bus?.jsm.streams.delete(bus.streamName(name)).catch(() => undefined);
  }
  await bus?.close();
  await database?.close();
  await testDb?.drop();
});

describe("killing the channels service mid-flight", () => {
  it("loses no acknowledged message, stores and publishes each exactly once, and audits each once", async () => {
    const client = new BusClient(bus, 1500);
    const intent = await client.request(intentsCommands.create, admin, { body: { title: "kill", status: "active", state: {}, constraints: {} } });
    service = startChannels();
    await untilHealthy(client, "channels", admin);
    const channel = await client.request(channelsCommands.create, admin, { intent_id: intent.id, body: { name: "load", options: { audit: true, max_messages: 100_000 } } });

    const acknowledged: Message[] = [];
    let sending = true;
    const senders = Array.from({ length: 12 }, async (_, w) => {
      for (let n = 0; sending; n++) {
        try {
          acknowledged.push(await client.request(channelsCommands.send, sender, { channel_id: channel.id, body: { message_type: "notify", payload: { w, n } } }));
        } catch {
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    });

    await new Promise((r) => setTimeout(r, 500));
    const beforeKill = acknowledged.length;
    await killServiceProcess(service);
    await new Promise((r) => setTimeout(r, 200));
    service = startChannels();
    await untilHealthy(client, "channels", admin);
    const afterRestart = acknowledged.length;
    for (let i = 0; i < 100 && acknowledged.length < afterRestart + 20; i++) await new Promise((r) => setTimeout(r, 50));
    sending = false;
    await Promise.all(senders);
    expect(beforeKill).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(beforeKill);

    await untilOutboxDrained(client, "channels", admin);
    const stored = rowsOf<{ id: string; sequence: string | number }>(await database.db.execute(sql`select id, sequence from channels.messages where channel_id = ${channel.id} order by sequence`));
    const storedIds = new Set(stored.map((r) => r.id));
    for (const message of acknowledged) expect(storedIds.has(message.id)).toBe(true);
    expect(stored.map((r) => Number(r.sequence))).toEqual(stored.map((_, i) => i + 1));

    const published = await readStream(bus, bus.streamName(channelStream.name), (msg) => msg.json<Message>().id);
    expect(published.length).toBe(new Set(published).size);
    expect(new Set(published)).toEqual(storedIds);

    // The intents service appends each audit event once, under the message's id.
    let audited: string[] = [];
    for (let i = 0; i < 200; i++) {
      audited = rowsOf<{ id: string }>(await database.db.execute(sql`select id from intents.events where intent_id = ${intent.id} and event_type = 'channel_message'`)).map((r) => r.id);
      if (audited.length >= storedIds.size) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(audited.length).toBe(new Set(audited).size);
    expect(new Set(audited)).toEqual(storedIds);
  });
});
