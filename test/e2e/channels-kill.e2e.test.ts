import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { channelsCommands, channelStream, intentsCommands, type Caller, type Message } from "@intentmesh/contracts";
import { agentCaller } from "../support/cluster";
import { expectExactlyOnce, openFaultHarness, rowsWhenCaughtUp, writeThroughFault, type FaultHarness } from "../support/fault-harness";
import { readStream } from "../support/service-process";

// Fault test: the channels process is killed (SIGKILL) while 12 senders post to an audit channel,
// then started again. Every acknowledged message is stored once, the channel's sequence has no
// gap, the channel stream carries each message exactly once, and the intent's log gets exactly
// one channel_message event per stored message.
const sender = agentCaller("kill-sender");
const admin: Caller = { principal: "admin", roles: ["admin"], actor: "admin", agent_id: null };
let harness: FaultHarness;

beforeAll(async () => {
  harness = await openFaultHarness("channels-kill", admin);
});
afterAll(async () => {
  await harness?.close();
});

describe("killing the channels service mid-flight", () => {
  it("loses no acknowledged message, stores and publishes each exactly once, and audits each once", async () => {
    const { client } = harness;
    await Promise.all([harness.start("intents"), harness.start("channels")]);
    const intent = await client.request(intentsCommands.create, admin, { body: { title: "kill", status: "active", state: {}, constraints: {} } });
    const channel = await client.request(channelsCommands.create, admin, { intent_id: intent.id, body: { name: "load", options: { audit: true, max_messages: 100_000 } } });

    const { acknowledged } = await writeThroughFault({
      workers: 12,
      write: (w, n) => client.request(channelsCommands.send, sender, { channel_id: channel.id, body: { message_type: "notify", payload: { w, n } } }),
      fault: () => harness.killAndRestart("channels"),
      until: harness.until,
    });
    await harness.drained("channels");

    const stored = await harness.rows<{ id: string; sequence: string | number }>(sql`select id, sequence from channels.messages where channel_id = ${channel.id} order by sequence`);
    expect(stored.map((r) => Number(r.sequence))).toEqual(stored.map((_, i) => i + 1));
    // The intents service appends each audit event once, under the message's id.
    const audited = await rowsWhenCaughtUp<{ id: string }>(harness, sql`select id from intents.events where intent_id = ${intent.id} and event_type = 'channel_message'`, stored.length);
    expectExactlyOnce({
      acknowledged: acknowledged.map((m: Message) => m.id),
      stored: stored.map((r) => r.id),
      published: {
        [channelStream.name]: await readStream(harness.bus, harness.bus.streamName(channelStream.name), (msg) => msg.json<Message>().id),
        "the intent's log": audited.map((r) => r.id),
      },
    });
  });
});
