import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { SYSTEM_EVENT_SCHEMA, systemEventMsgId, systemEventSubject, type ManualClock, type SystemEvent } from "@intentmesh/contracts";
import { createLogger } from "@intentmesh/telemetry";
import { startIntentsService } from "../../services/intents/src/service";
import { mayAppendSystemEvent } from "../../services/intents/src/events/system-event-consumer";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectRejected, keyHeader, UNKNOWN_ID } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";

/**
 * The system-event path (libs/contracts/src/system-events.ts): facts of other services reach an
 * intent's log through stream IM_SYSTEM_EVENTS and the intents service's durable consumer.
 * Here the test plays the source service and publishes as its outbox relay would.
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

function systemEvent(intentId: string, overrides: Partial<SystemEvent> = {}): SystemEvent {
  return {
    id: randomUUID(),
    source: "channels",
    intent_id: intentId,
    event_type: "channel_message",
    actor: "agent-sender",
    payload: { channel_id: randomUUID(), channel_name: "general", message_id: randomUUID(), message_type: "notify", to: null, payload: { text: "hi" } },
    trace_id: null,
    occurred_at: new Date().toISOString(),
    ...overrides,
  };
}

/** Publishes like a source service's relay: subject, message id and schema header of the contract. */
async function publish(event: SystemEvent, msgId = systemEventMsgId(event.source, event.id)) {
  const headers = natsHeaders();
  headers.set("Im-Schema", SYSTEM_EVENT_SCHEMA);
  await cluster.bus.js.publish(cluster.bus.subject(systemEventSubject(event.intent_id, event.event_type)), JSON.stringify(event), { msgID: msgId, headers });
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 8000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const systemEventsOf = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type !== "intent_created");

describe("system events from other services", () => {
  it("land in the intent's log with the source's id, actor, payload and trace id, and reach SSE subscribers", async () => {
    const intent = await createIntent(cluster);
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader());
    try {
      const event = systemEvent(intent.id, { trace_id: "trace-abc" });
      await publish(event);
      const logged = await eventually(() => systemEventsOf(intent.id), (list) => list.length === 1);
      expect(logged).toEqual([
        expect.objectContaining({
          id: event.id,
          intent_id: intent.id,
          sequence: 2,
          event_type: "channel_message",
          actor: "agent-sender",
          payload: event.payload,
          trace_id: "trace-abc",
        }),
      ]);
      expect(Date.parse(logged[0]!.created_at)).toBe((cluster.clock as ManualClock).now().getTime());
      await sse.waitFor((client) => client.events.some((e) => e.data?.id === event.id));
    } finally {
      await sse.close();
    }
  });

  it("appends each event once: a redelivery or a second message carrying the same event id adds nothing", async () => {
    const intent = await createIntent(cluster);
    const event = systemEvent(intent.id, { source: "memory", event_type: "memory.created", payload: {
        agent_id: "a",
        intent_id: intent.id,
        task_id: null,
        data: { entry_id: randomUUID(), namespace: "notes", key: "k", memory_type: "working", version: 1, previous_version: null, tags: [] },
      },
    });
    await publish(event);
    // Same event under another message id (JetStream's duplicate window would drop the same one).
    await publish(event, `sys:memory:${event.id}:again`);
    const marker = systemEvent(intent.id);
    await publish(marker);
    const logged = await eventually(() => systemEventsOf(intent.id), (list) => list.some((e) => e.id === marker.id));
    expect(logged.map((e) => e.id)).toEqual([event.id, marker.id]);
  });

  it("keeps the order in which one source published events for an intent", async () => {
    const intent = await createIntent(cluster);
    const batch = Array.from({ length: 12 }, (_, i) => systemEvent(intent.id, { payload: { channel_id: randomUUID(), channel_name: "c", message_id: randomUUID(), message_type: "notify", to: null, payload: { n: i } } }));
    for (const event of batch) await publish(event);
    const logged = await eventually(() => systemEventsOf(intent.id), (list) => list.length === batch.length);
    expect(logged.map((e) => e.id)).toEqual(batch.map((e) => e.id));
    expect(logged.map((e) => e.sequence)).toEqual(batch.map((_, i) => i + 2));
  });

  it("drops an event for an unknown intent and refuses a type its source may not write, without holding back the next events", async () => {
    const intent = await createIntent(cluster);
    await publish(systemEvent(UNKNOWN_ID));
    // memory may not speak for governance, nor anyone for the intents service's own events.
    await publish(systemEvent(intent.id, { source: "memory", event_type: "governance.approval_granted", payload: {} }));
    await publish(systemEvent(intent.id, { source: "channels", event_type: "status_changed", payload: { from: "active", to: "completed" } }));
    const good = systemEvent(intent.id);
    await publish(good);
    const logged = await eventually(() => systemEventsOf(intent.id), (list) => list.some((e) => e.id === good.id));
    expect(logged.map((e) => e.id)).toEqual([good.id]);
    await expectRejected(cluster.sdk().send("intentsListEvents", { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
  });

  it("refuses a payload that is not the event catalogue's shape for its type (part 6), without holding back the next events", async () => {
    const intent = await createIntent(cluster);
    // channel_message without its message_id, and memory.created without the entry's coordinates.
    await publish(systemEvent(intent.id, { payload: { channel_id: randomUUID(), channel_name: "general", message_type: "notify", to: null, payload: {} } }));
    await publish(systemEvent(intent.id, { source: "memory", event_type: "memory.created", payload: { agent_id: "a", data: { key: "k" } } }));
    const good = systemEvent(intent.id);
    await publish(good);
    const logged = await eventually(() => systemEventsOf(intent.id), (list) => list.some((e) => e.id === good.id));
    expect(logged.map((e) => e.id)).toEqual([good.id]);
  });

  it("loses nothing published while the intents service is stopped: the durable consumer resumes", async () => {
    const intent = await createIntent(cluster);
    await cluster.intents.stop();
    const whileDown = [systemEvent(intent.id), systemEvent(intent.id), systemEvent(intent.id)];
    for (const event of whileDown) await publish(event);
    cluster.intents = await startIntentsService({
      bus: cluster.bus,
      database: cluster.database,
      logger: createLogger("test", "silent"),
      clock: cluster.clock,
      leaseSweepIntervalMs: 3_600_000,
    });
    const logged = await eventually(() => systemEventsOf(intent.id), (list) => list.length === whileDown.length);
    expect(logged.map((e) => e.id)).toEqual(whileDown.map((e) => e.id));
  });

  it("knows which source may write which type", () => {
    expect(mayAppendSystemEvent("channels", "channel_message")).toBe(true);
    expect(mayAppendSystemEvent("memory", "memory.archived")).toBe(true);
    expect(mayAppendSystemEvent("governance", "governance.policy_set")).toBe(true);
    expect(mayAppendSystemEvent("governance", "intent.suspension_escalated")).toBe(true);
    expect(mayAppendSystemEvent("federation", "federation.completed")).toBe(true);
    expect(mayAppendSystemEvent("channels", "memory.created")).toBe(false);
    expect(mayAppendSystemEvent("memory", "memory.vanished")).toBe(false);
    expect(mayAppendSystemEvent("registry", "agent.lifecycle")).toBe(false);
    expect(mayAppendSystemEvent("governance", "status_changed")).toBe(false);
    expect(mayAppendSystemEvent("vault", "tool.invoked")).toBe(true);
    expect(mayAppendSystemEvent("vault", "memory.created")).toBe(false);
    expect(mayAppendSystemEvent("memory", "tool.invoked")).toBe(false);
  });
});
