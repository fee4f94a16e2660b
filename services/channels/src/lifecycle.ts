import { and, eq, inArray, sql } from "drizzle-orm";
import { TASK_END_EVENT_TYPES, agentEvents, intentEvents, taskEvents } from "@intentmesh/contracts";
import { eventFamilyOn, eventOn, subscribe, type Bus } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { SYSTEM_SENDER, type ChannelsContext } from "./context";
import { channels, inbox, messages } from "./db/schema";
import { insertMessage } from "./handlers/messages";

const UNREAD = ["pending", "delivered"];

/** The intent statuses that close an intent's channels. */
const ENDED = ["completed", "abandoned"];
/** The task events that close a task's channels: the definitions of TASK_END_EVENT_TYPES. */
const TASK_ENDS = Object.values(taskEvents).filter((definition) => (TASK_END_EVENT_TYPES as readonly string[]).includes(definition.name));

/**
 * What other services' events mean for channels (3.2, 3.3), each an idempotent durable consumer
 * (inbox row in the transaction of its effects, so a redelivery changes nothing twice). Every
 * task event and status change reaches them and few change anything: an event with nothing to
 * apply (another status, a task event that is not an end, a task's end with no open channel to
 * close: most tasks have none) is acknowledged by `skip` with no transaction and no inbox row
 * (libs/bus consumer.ts). What a skip reads is what the transaction's UPDATE would have found at
 * that moment: a channel that commits later was not closed by it either.
 * - an intent completed or abandoned closes its channels and expires their unread messages;
 * - a task that ends (completed, failed, cancelled) closes the channels scoped to it;
 * - a deregistered agent leaves every channel's member list, a notify announces its departure,
 *   and the unread requests addressed to it expire.
 */
export async function startLifecycleConsumers(bus: Bus, ctx: ChannelsContext) {
  const common = { db: ctx.db, inbox, logger: ctx.logger, afterCommit: () => ctx.published() };
  const intentEnds = await subscribe(bus, eventOn(intentEvents.statusChanged, "intent"), {
    ...common,
    durable: "channels-intent-status",
    // An intent ends once in its life: its end is applied in a transaction whether it has channels or not.
    skip: (event) => !ENDED.includes(event.payload.to),
    handle: async (tx, event) => {
      if (ENDED.includes(event.payload.to)) await closeChannels(tx, eq(channels.intentId, event.intent_id), ctx.clock.now(), true);
    },
  });
  // The whole task family's filter (the durable's since it was created), the ends its only
  // definitions: every other task event is acknowledged before its payload is parsed.
  const taskEnds = await subscribe(bus, eventFamilyOn(TASK_ENDS, "intent", "task."), {
    ...common,
    durable: "channels-task-ends",
    skip: async (event) => !(await taskHasOpenChannels(ctx, event.payload.task_id)),
    handle: async (tx, event) => {
      await closeChannels(tx, eq(channels.taskId, event.payload.task_id), ctx.clock.now(), false);
    },
  });
  const departures = await subscribe(bus, eventOn(agentEvents.lifecycle, "agent"), {
    ...common,
    durable: "channels-agent-departures",
    skip: (event) => event.payload.new_status !== "deregistered",
    handle: async (tx, event) => {
      if (event.payload.new_status === "deregistered") await agentDeparted(ctx, tx, event.agent_id);
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

/** Whether the task has an open channel: one indexed read (channels_task_idx), no transaction. */
async function taskHasOpenChannels(ctx: ChannelsContext, taskId: string): Promise<boolean> {
  const [row] = await ctx.query<{ open: boolean }>("channels_open_of_task", "select exists(select 1 from channels.channels where task_id = $1::uuid and status = 'open') as open", [taskId]);
  return row?.open === true;
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
    // A member fewer: a new revision, so no remembered row (RememberedChannels) sends as the departed agent.
    .set({ members: sql`array_remove(${channels.members}, ${agentId})`, revision: sql`${channels.revision} + 1` })
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
