import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { connectBus, type Bus } from "@intentmesh/bus";
import { createLogger } from "@intentmesh/telemetry";
import { startIntentsService, type IntentsService } from "../../services/intents/src/service";
import { statusOf } from "../support/e2e-helpers";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";

/**
 * Access control (RFC-0011) over time and across replicas: a revocation ends the SSE streams of the
 * revoked reader before anything written after it reaches them, and binds every request that
 * starts after it answered, whichever replica of the intents service serves it (there is no
 * permission cache to go stale).
 */
let cluster: TestCluster;
let secondBus: Bus;
let secondIntents: IntentsService;
const streams: SseClient[] = [];
beforeAll(async () => {
  cluster = await startTestCluster({ ssePingMs: 50 });
  secondBus = await connectBus(inject("natsUrl"), "acl-replica", cluster.namespace);
  secondBus.checks = cluster.bus.checks;
  secondIntents = await startIntentsService({ bus: secondBus, database: cluster.database, logger: createLogger("replica", "silent"), clock: cluster.clock, leaseSweepIntervalMs: 3_600_000 });
});
afterAll(async () => {
  await Promise.all(streams.map((s) => s.close()));
  await secondIntents?.stop();
  await secondBus?.close();
  await cluster?.stop();
});

const owner = { key: "agent" as const, headers: { "X-Agent-ID": "owner" } };
const reader = { key: "other" as const, headers: { "X-Agent-ID": "reader" } };
/** The typed clients of the owner and of the reader. */
const asOwner = () => cluster.sdk(owner.key, "owner");
const asReader = () => cluster.sdk(reader.key, "reader");
async function closedIntentReadBy(principal: string) {
  const created = await asOwner().send("intentsCreate", { body: { title: "watched", status: "active", acl: { default_policy: "closed", entries: [{ principal_id: principal, permission: "read" }] } } });
  expect(created.status).toBe(201);
  const acl = await asOwner().ops.aclGet({ intent_id: created.data.id });
  return { id: created.data.id, entryId: acl.entries[0]!.id };
}

async function open(path: string, who: { key: keyof typeof TEST_KEYS; headers: Record<string, string> }) {
  const client = await SseClient.open(`${cluster.baseUrl}/api/v1${path}`, { "X-API-Key": TEST_KEYS[who.key], ...who.headers });
  streams.push(client);
  return client;
}

describe("revocation and the SSE streams", () => {
  it("ends an intent stream of a revoked reader; nothing written after the revocation reaches it", async () => {
    const { id, entryId } = await closedIntentReadBy("reader");
    expect((await open(`/subscribe/intents/${id}`, { key: "other", headers: { "X-Agent-ID": "stranger" } })).status).toBe(403);
    const stream = await open(`/subscribe/intents/${id}`, reader);
    expect(stream.status).toBe(200);
    await asOwner().ops.intentsAppendEvent({ intent_id: id, body: { event_type: "comment", payload: { n: 1 } } });
    await stream.waitFor((s) => s.events.some((e) => e.event === "comment"));
    expect((await asOwner().send("aclRevoke", { intent_id: id, entry_id: entryId })).status).toBe(204);
    const after = await asOwner().send("intentsAppendEvent", { intent_id: id, body: { event_type: "comment", payload: { n: 2 } } });
    await stream.ended();
    const seen = stream.events.map((e) => e.event);
    expect(seen).toContain("access_revoked");
    expect(stream.events.map((e) => e.id)).not.toContain(after.data.id);
  });

  it("ends a channel stream of a revoked reader", async () => {
    const { id, entryId } = await closedIntentReadBy("reader");
    const channel = await asOwner().send("channelsCreate", { intent_id: id, body: { name: "news" } });
    expect(channel.status).toBe(201);
    const stream = await open(`/subscribe/channels/${channel.data.id}`, reader);
    expect(stream.status).toBe(200);
    await asOwner().ops.channelsSend({ channel_id: channel.data.id, body: { message_type: "broadcast", payload: { n: 1 } } });
    await stream.waitFor((s) => s.events.length === 1);
    await asOwner().ops.aclRevoke({ intent_id: id, entry_id: entryId });
    await stream.ended();
    expect((await open(`/subscribe/channels/${channel.data.id}`, reader)).status).toBe(403);
  });
});

describe("read-your-writes across replicas", () => {
  // The two intents replicas share the queue group, so these 150 requests are spread over both
  // (replicas.e2e.test.ts); each decides from the database when it serves the request.
  it("refuses every request after a revocation has answered, on either intents replica, and allows every one after a grant", async () => {
    const { id } = await closedIntentReadBy("reader");
    for (let round = 0; round < 5; round++) {
      const granted = await asOwner().send("aclGrant", { intent_id: id, body: { principal_id: "reader", permission: "write" } });
      expect(granted.status).toBe(201);
      for (let i = 0; i < 10; i++) {
        const res = await asReader().send("intentsAppendEvent", { intent_id: id, body: { event_type: "comment", payload: { round, i } } });
        expect(res.status).toBe(201);
      }
      expect((await asOwner().send("aclRevoke", { intent_id: id, entry_id: granted.data.id })).status).toBe(204);
      for (let i = 0; i < 10; i++) {
        expect(await statusOf(asReader().send("intentsAppendEvent", { intent_id: id, body: { event_type: "comment", payload: {} } }))).toBe(403);
        expect(await statusOf(asReader().send("intentsGet", { intent_id: id }))).toBe(403);
      }
    }
  });
});
