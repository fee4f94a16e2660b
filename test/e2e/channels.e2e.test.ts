import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliverPolicy } from "@nats-io/jetstream";
import { SystemEvent, systemEventStream } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import type { BodyOf, Intentmesh } from "@intentmesh/sdk";
import { allEvents, createIntent, expectRejected, uniqueTag } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";

/**
 * Channels across services (spec 3.1, 3.2, 3.3, 4.10, part 6) through the gateway: intent and agent
 * lifecycles, audit into the intent's log, SSE. The channels service's own rules are tested in its
 * lane: services/channels/test/channels.service.test.ts.
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

/** A registered agent: the typed client acting as it, and its headers for the SSE streams. */
interface Agent {
  id: string;
  client: Intentmesh;
  headers: Record<string, string>;
}

/** Registers an agent (with a role) on the agent key. */
async function agent(role: string | null = null): Promise<Agent> {
  const id = uniqueTag("ag");
  const res = await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: id, ...(role ? { role_id: role } : {}) } });
  expect(res.status).toBe(201);
  return { id, client: cluster.sdk("agent", id), headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": id } };
}
const admin = () => cluster.sdk();

async function activeIntent() {
  return createIntent(cluster, { status: "active" });
}
async function channel(intentId: string, body: BodyOf<"channelsCreate">, who?: Agent) {
  const res = await (who?.client ?? admin()).send("channelsCreate", { intent_id: intentId, body });
  expect(res.status).toBe(201);
  return res.data;
}
const post = (channelId: string, who: Agent, body: BodyOf<"channelsSend">) => who.client.send("channelsSend", { channel_id: channelId, body });
const pull = (channelId: string, who: Agent) => who.client.send("channelsListMessages", { channel_id: channelId });
const message = (channelId: string, messageId: string) => admin().ops.channelsGetMessage({ channel_id: channelId, message_id: messageId });

async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("lifecycle across services (3.1, 3.2, 3.3)", () => {
  it("an intent completed closes its channels and expires their unread messages", async () => {
    const intent = await activeIntent();
    const [a, b] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "work" });
    const pending = await post(ch.id, a, { message_type: "request", to: b.id, payload: {} });
    expect((await admin().send("intentsTransition", { intent_id: intent.id, ifMatch: intent.version, body: { status: "completed" } })).status).toBe(200);
    await until(async () => ((await admin().ops.channelsGet({ channel_id: ch.id })).status === "closed" ? true : undefined), "closure");
    expect((await message(ch.id, pending.data.id)).status).toBe("expired");
    await expectRejected(post(ch.id, a, { payload: {} }), 409, "CHANNEL_CLOSED");
    await expectRejected(admin().send("channelsCreate", { intent_id: intent.id, body: { name: "late" } }), 409, "INTENT_ENDED");
  });

  it("a deregistered agent leaves every member list with a departure notice, and the requests addressed to it expire", async () => {
    const intent = await activeIntent();
    const [a, leaving] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "team", member_policy: "explicit", members: [leaving.id] }, a);
    const ask = await post(ch.id, a, { message_type: "request", to: leaving.id, payload: {} });
    expect(ask.status).toBe(201);
    const gone = await leaving.client.send("agentsDeregister", { agent_id: leaving.id });
    expect(gone.status).toBe(200);
    const notice = await until(async () => (await pull(ch.id, a)).data.find((m) => m.payload.event === "member_departed"), "departure notice");
    expect(notice).toMatchObject({ message_type: "notify", sender: "system:channels", payload: { agent_id: leaving.id, reason: "deregistered" } });
    expect((await admin().ops.channelsGet({ channel_id: ch.id })).members).toEqual([a.id]);
    expect((await message(ch.id, ask.data.id)).status).toBe("expired");
  });
});

describe("audit (rule 12, part 6)", () => {
  it("an audit channel's messages become channel_message events in the intent's log, with the trace id; others put nothing there", async () => {
    const intent = await activeIntent();
    const a = await agent();
    const audited = await channel(intent.id, { name: "audited", options: { audit: true } });
    const quiet = await channel(intent.id, { name: "quiet" });
    await post(quiet.id, a, { payload: { n: 0 } });
    const sent = await post(audited.id, a, { message_type: "broadcast", payload: { n: 1 }, metadata: { trace_id: "trace-42" } });
    const logged = await until(async () => (await allEvents(cluster, intent.id)).find((e) => e.event_type === "channel_message"), "channel_message");
    expect(logged).toMatchObject({
      id: sent.data.id,
      actor: a.id,
      trace_id: "trace-42",
      payload: { channel_id: audited.id, channel_name: "audited", message_id: sent.data.id, message_type: "broadcast", to: "*", payload: { n: 1 } },
    });
    expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "channel_message")).toHaveLength(1);
    // On the wire of the system-event path.
    const stream = cluster.bus.streamName(systemEventStream.name);
    const consumer = await cluster.bus.js.consumers.get(stream, { filter_subjects: cluster.bus.subject(`im.sys.intent.${intent.id}.>`), deliver_policy: DeliverPolicy.All });
    const batch = await consumer.fetch({ max_messages: 10, expires: 1000 });
    const seen: SystemEvent[] = [];
    for await (const msg of batch) {
      seen.push(SystemEvent.parse(msg.json()));
      if (msg.info.pending === 0) break;
    }
    expect(seen.map((e) => [e.source, e.event_type, e.id])).toEqual([["channels", "channel_message", sent.data.id]]);
  });
});

describe("GET /subscribe/channels/{id} (4.10, rule 11)", () => {
  it("streams channel_message frames with the full message to those who may read it, each agent only what it may see; Last-Event-ID resumes", async () => {
    const intent = await activeIntent();
    const [a, b, c, outsider] = [await agent(), await agent(), await agent(), await agent()];
    const ch = await channel(intent.id, { name: "live", member_policy: "explicit", members: [b.id, c.id] }, a);
    const url = (query = "") => `${cluster.baseUrl}/api/v1/subscribe/channels/${ch.id}${query}`;
    const denied = await SseClient.open(url(), outsider.headers);
    expect(denied.status).toBe(403);
    const sse = await SseClient.open(url(), b.headers);
    expect(sse.status).toBe(200);
    try {
      const toC = await post(ch.id, a, { message_type: "request", to: c.id, payload: { only: "c" } });
      const all = await post(ch.id, a, { message_type: "broadcast", payload: { to: "all" } });
      const toB = await post(ch.id, a, { message_type: "request", to: b.id, payload: { only: "b" } });
      await sse.waitFor((client) => client.events.some((e) => e.data.id === toB.data.id));
      expect(sse.events.map((e) => [e.event, e.id, e.data.id])).toEqual([
        ["channel_message", String(all.data.sequence), all.data.id],
        ["channel_message", String(toB.data.sequence), toB.data.id],
      ]);
      expect(sse.events[0]!.data).toMatchObject({ channel_id: ch.id, sender: a.id, to: "*", payload: { to: "all" }, status: "delivered" });
      expect(sse.events.some((e) => e.data.id === toC.data.id)).toBe(false);
    } finally {
      await sse.close();
    }
    // Resuming after the first message replays what came after it that this agent may see.
    const resumed = await SseClient.open(url(), { ...c.headers, "Last-Event-ID": "1" });
    try {
      await resumed.waitFor((client) => client.events.length >= 1);
      expect(resumed.events.map((e) => e.data.payload)).toEqual([{ to: "all" }]);
    } finally {
      await resumed.close();
    }
  });
});
