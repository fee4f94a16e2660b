import { and, eq, inArray, sql } from "drizzle-orm";
import { AgentEvent, AgentLifecyclePayload, IntentEvent, TASK_END_EVENT_TYPES, agentEventTypes, intentEventTypes, streams } from "@intentmesh/contracts";
import { startDurableConsumer, type Bus } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { SYSTEM_SENDER, type ChannelsContext } from "./context";
import { channels, inbox, messages } from "./db/schema";
import { insertMessage } from "./handlers/messages";

const UNREAD = ["pending", "delivered"];

/**
 * What other services' events mean for channels (3.2, 3.3), each an idempotent durable consumer
 * (inbox row in the transaction of its effects, so a redelivery changes nothing twice):
 * - an intent completed or abandoned closes its channels and expires their unread messages;
 * - a task that ends (completed, failed, cancelled) closes the channels scoped to it;
 * - a deregistered agent leaves every channel's member list, a notify announces its departure,
 *   and the unread requests addressed to it expire.
 */
export async function startLifecycleConsumers(bus: Bus, ctx: ChannelsContext) {
  const common = { db: ctx.db, inbox, logger: ctx.logger, afterCommit: () => ctx.published() };
  const intentEnds = await startDurableConsumer(bus, {
    ...common,
    stream: streams.intents.name,
    durable: "channels-intent-status",
    filterSubject: `im.evt.intent.*.${intentEventTypes.statusChanged}`,
    parse: (data) => IntentEvent.parse(data),
    handle: async (tx, event) => {
      const to = String(event.payload.to ?? "");
      if (to === "completed" || to === "abandoned") await closeChannels(tx, eq(channels.intentId, event.intent_id), ctx.clock.now(), true);
    },
  });
  const taskEnds = await startDurableConsumer(bus, {
    ...common,
    stream: streams.intents.name,
    durable: "channels-task-ends",
    filterSubject: "im.evt.intent.*.task.>",
    parse: (data) => IntentEvent.parse(data),
    handle: async (tx, event) => {
      const taskId = typeof event.payload.task_id === "string" ? event.payload.task_id : null;
      if (taskId && (TASK_END_EVENT_TYPES as readonly string[]).includes(event.event_type)) await closeChannels(tx, eq(channels.taskId, taskId), ctx.clock.now(), false);
    },
  });
  const departures = await startDurableConsumer(bus, {
    ...common,
    stream: streams.registry.name,
    durable: "channels-agent-departures",
    filterSubject: `im.evt.agent.*.${agentEventTypes.lifecycle}`,
    parse: (data) => {
      const event = AgentEvent.parse(data);
      return { agentId: event.agent_id, lifecycle: AgentLifecyclePayload.parse(event.payload) };
    },
    handle: async (tx, { agentId, lifecycle }) => {
      if (lifecycle.new_status === "deregistered") await agentDeparted(ctx, tx, agentId);
    },
  });
  return {
    stop: async () => {
      await intentEnds.stop();
      await taskEnds.stop();
      await departures.stop();
    },
  };
}

/** Closes the open channels matching `which`; with `expireUnread`, their unread messages expire too (3.2). */
export async function closeChannels(tx: Tx, which: ReturnType<typeof eq>, now: Date, expireUnread: boolean): Promise<number> {
  const closed = await tx
    .update(channels)
    .set({ status: "closed", closedAt: now })
    .where(and(which, eq(channels.status, "open")))
    .returning({ id: channels.id });
  if (expireUnread && closed.length) {
    await tx
      .update(messages)
      .set({ status: "expired" })
      .where(and(inArray(messages.channelId, closed.map((c) => c.id)), inArray(messages.status, UNREAD)));
  }
  return closed.length;
}

/** 3.2, 3.3: a deregistered agent leaves every member list with a notice, and requests to it expire. */
async function agentDeparted(ctx: ChannelsContext, tx: Tx, agentId: string): Promise<void> {
  const now = ctx.clock.now();
  const memberOf = await tx
    .update(channels)
    .set({ members: sql`array_remove(${channels.members}, ${agentId})` })
    .where(sql`${channels.members} @> array[${agentId}]::text[]`)
    .returning({ id: channels.id, name: channels.name, intentId: channels.intentId, status: channels.status });
  for (const channel of memberOf) {
    if (channel.status !== "open") continue;
    await insertMessage(ctx, tx, channel, {
      sender: SYSTEM_SENDER,
      to: null,
      type: "notify",
      correlationId: null,
      payload: { event: "member_departed", agent_id: agentId, reason: "deregistered" },
      metadata: {},
      expiresAt: null,
    }, now);
  }
  await tx
    .update(messages)
    .set({ status: "expired" })
    .where(and(eq(messages.to, agentId), eq(messages.messageType, "request"), inArray(messages.status, UNREAD)));
}
