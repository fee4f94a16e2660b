import { and, eq, inArray, sql } from "drizzle-orm";
import { TASK_END_EVENT_TYPES, agentEvents, intentEvents, taskEvents, type EventLog } from "@intentmesh/contracts";
import { eventFamilyOn, eventOn, subscribe, type Bus, type EventSource } from "@intentmesh/bus";
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
 * apply (another status, a task event that is not an end, a lifecycle event that is not a
 * deregistration) is acknowledged before its schema runs, and a task's end with no open channel
 * to close (most tasks have none) after one indexed read (`skip`): no transaction, no inbox row
 * (libs/bus consumer.ts). What the read finds is what the transaction's UPDATE would have found
 * at that moment: a channel that commits later was not closed by it either.
 * - an intent completed or abandoned closes its channels and expires their unread messages;
 * - a task that ends (completed, failed, cancelled) closes the channels scoped to it;
 * - a deregistered agent leaves every channel's member list, a notify announces its departure,
 *   and the unread requests addressed to it expire.
 */
export async function startLifecycleConsumers(bus: Bus, ctx: ChannelsContext) {
  const common = { db: ctx.db, inbox, logger: ctx.logger, afterCommit: () => ctx.published() };
  // An end is applied in a transaction, channels or not: an intent ends once in its life.
  const intentEnds = await subscribe(bus, whereValue(eventOn(intentEvents.statusChanged, "intent"), "to", ENDED), {
    ...common,
    durable: "channels-intent-status",
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
  const departures = await subscribe(bus, whereValue(eventOn(agentEvents.lifecycle, "agent"), "new_status", ["deregistered"]), {
    ...common,
    durable: "channels-agent-departures",
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

/**
 * The events of `source` whose payload's `field` is one of `values`; the others (most status
 * changes, every lifecycle event but a deregistration) are acknowledged before any schema runs.
 */
function whereValue<Log extends EventLog, Event>(source: EventSource<Log, Event>, field: string, values: readonly string[]): EventSource<Log, Event> {
  return {
    ...source,
    parse: (data) => {
      const value = (data as { payload?: Record<string, unknown> } | null)?.payload?.[field];
      return typeof value === "string" && values.includes(value) ? source.parse(data) : null;
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
