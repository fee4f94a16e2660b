import { and, asc, eq, gt, inArray, or, sql, type SQL } from "drizzle-orm";
import {
  appError,
  AppError,
  channelMessageSubject,
  channelsCommands,
  errors,
  type AskBody,
  type AskResult,
  Uuid,
  type Caller,
  type ChannelStreamView,
  type ListMessagesQuery,
  type Message,
  type MessageType,
  type ReplyBody,
  type SendMessageBody,
} from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import type { Subscription } from "@nats-io/transport-node";
import { SERVICE_CALLER, type ChannelsContext } from "../context";
import { channels, messages } from "../db/schema";
import { assertChannelAccess, checkWrite, findChannel, notAMember, roleOf } from "../access";
import type { WriteVerdict } from "@intentmesh/service";
import { addressedTo, refuseCredentials, resolveRecipient, senderOf, viewerOf, type Viewer } from "../domain/rules";
import { toMessage, type ChannelRow, type MessageRow } from "../mapping";
import { checkNewChannel, insertChannel, newChannelRow } from "./channels";
import { writeMessage, writeMessageInTx, type OutgoingMessage } from "../db/message-statement";

/** What a send carries once the route's shape is known. */
interface Outgoing {
  sender: string;
  to: string | null;
  type: MessageType;
  correlationId: string | null;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
  expiresAt: Date | null;
}

/** A send on a remembered row that did not write: the row changed (revision, status) or is gone. */
class ChangedChannel extends Error {}

/**
 * POST /channels/{id}/messages. To a channel this process has sent to, the send runs on the row
 * it remembers (RememberedChannels) and writes only while the row is still at that revision: one
 * statement. A write the row's change stopped, or any refusal reached on the remembered row (which
 * a change may have made the wrong one, or not the first), is decided again from the start on the
 * row read afresh: what a send answers is always what it answers on the current row. An outage
 * (5xx) is answered as it comes rather than asked twice.
 */
export async function sendMessage(ctx: ChannelsContext, channelId: string, body: SendMessageBody, caller: Caller): Promise<Message> {
  const remembered = ctx.remembered.get(channelId);
  if (remembered) {
    try {
      const verdict = await checkWrite(ctx, caller, channelsCommands.send, remembered.intentId, "channel");
      return await send(ctx, remembered, body, caller, verdict, remembered.revision);
    } catch (error) {
      if (!(error instanceof ChangedChannel || (error instanceof AppError && error.status < 500))) throw error;
      ctx.remembered.forget(channelId);
    }
  }
  const channel = await findChannel(ctx, channelId);
  ctx.remembered.remember(channel);
  const verdict = await checkWrite(ctx, caller, channelsCommands.send, channel.intentId, "channel");
  return send(ctx, channel, body, caller, verdict);
}

/**
 * POST /intents/{intent_id}/channels/{name}/messages (rule 10): to the channel of that name,
 * created with policy `intent` by this first message when the intent has none.
 */
export async function sendByName(ctx: ChannelsContext, intentId: string, name: string, body: SendMessageBody, caller: Caller): Promise<Message> {
  const verdict = await checkWrite(ctx, caller, channelsCommands.sendByName, intentId, "intent_id");
  let [channel] = await ctx.db.select().from(channels).where(and(eq(channels.intentId, intentId), eq(channels.name, name)));
  if (!channel) {
    await checkNewChannel(ctx, caller, intentId, null);
    const viewer = viewerOf(caller);
    const row = newChannelRow(intentId, { name }, senderOf(caller, body.sender), viewer.agentId !== null, ctx.clock.now());
    try {
      await insertChannel(ctx.db, row);
      channel = row;
    } catch (error) {
      // Two first messages at once: the other created it; send to that one.
      if (!(error instanceof AppError && error.code === "CHANNEL_NAME_TAKEN")) throw error;
      [channel] = await ctx.db.select().from(channels).where(and(eq(channels.intentId, intentId), eq(channels.name, name)));
      if (!channel) throw error;
    }
  }
  return send(ctx, channel, body, caller, verdict);
}

/** POST /channels/{id}/messages/{mid}/reply: a response to that request; correlation_id and `to` set by the server. */
export async function replyTo(ctx: ChannelsContext, channelId: string, messageId: string, body: ReplyBody, caller: Caller): Promise<Message> {
  const found = await findChannel(ctx, channelId);
  const verdict = await checkWrite(ctx, caller, channelsCommands.reply, found.intentId, "channel");
  // The message named in the path must be one the caller can read, as for GET and mark-read: 404 otherwise (spec 7).
  const { channel } = await visibleMessageOf(ctx, found, messageId, caller);
  return send(ctx, channel, { sender: body.sender, payload: body.payload, metadata: body.metadata, message_type: "response", correlation_id: messageId }, caller, verdict);
}

/**
 * POST /channels/{id}/ask (RFC 0021 ask()): a request to `to` that expires at the timeout (3.1),
 * then the wait for its first response. The wait follows the channel's published messages (a
 * subscription opened before the request is written, so no response can slip past) and ends at
 * the first response to this request or after `timeout` seconds; the answer is then read from
 * the table, the first response by sequence, so a response the relay had not yet published by
 * the deadline still counts. None: 504 RESPONSE_TIMEOUT naming the request, which stays readable
 * (a response that comes later is refused once the request has expired).
 */
export async function ask(ctx: ChannelsContext, channelId: string, body: AskBody, caller: Caller): Promise<AskResult> {
  const channel = await findChannel(ctx, channelId);
  const verdict = await checkWrite(ctx, caller, channelsCommands.ask, channel.intentId, "channel");
  const timeoutMs = body.timeout * 1000;
  const expiresAt = new Date(ctx.clock.now().getTime() + timeoutMs).toISOString();
  const published = ctx.bus.nc.subscribe(ctx.bus.subject(channelMessageSubject(channel.id)));
  try {
    const request = await send(
      ctx,
      channel,
      { sender: body.sender, to: body.to, message_type: "request", payload: body.payload, metadata: body.metadata, intent_id: body.intent_id, expires_at: expiresAt },
      caller,
      verdict,
    );
    await firstPublishedResponse(published, request.id, timeoutMs);
    const response = await firstResponse(ctx, request.id);
    if (!response) {
      throw appError("RESPONSE_TIMEOUT", `no response to request ${request.id} from ${request.to} within ${body.timeout} s; a later one is refused once the request has expired`, {
        request_id: request.id,
        timeout_seconds: body.timeout,
      });
    }
    return { request, response };
  } finally {
    published.unsubscribe();
  }
}

/** Resolves at the first published response to `requestId` on the subscription, or after `timeoutMs`. */
async function firstPublishedResponse(published: Subscription, requestId: string, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  const arrived = (async () => {
    for await (const msg of published) {
      let message: { message_type?: unknown; correlation_id?: unknown } | null;
      try {
        message = JSON.parse(new TextDecoder().decode(msg.data)) as { message_type?: unknown; correlation_id?: unknown } | null;
      } catch {
        continue;
      }
      if (message?.message_type === "response" && message.correlation_id === requestId) return;
    }
  })();
  try {
    await Promise.race([timeUp, arrived]);
  } finally {
    clearTimeout(timer);
  }
}

async function firstResponse(ctx: ChannelsContext, requestId: string): Promise<Message | null> {
  const [row] = await ctx.db
    .select()
    .from(messages)
    .where(and(eq(messages.correlationId, requestId), eq(messages.messageType, "response")))
    .orderBy(asc(messages.sequence))
    .limit(1);
  return row ? toMessage(row) : null;
}

/**
 * A message after its access check (`verdict`: checkWrite, asked by each way of sending before
 * anything else). `revision`: the row is a remembered one, written only while still at it.
 */
async function send(ctx: ChannelsContext, channel: ChannelRow, body: SendMessageBody, caller: Caller, verdict: WriteVerdict, revision: number | null = null): Promise<Message> {
  const viewer = await assertChannelAccess(ctx, caller, channel);
  if (body.intent_id && body.intent_id !== channel.intentId) {
    throw appError("CROSS_INTENT_MESSAGE", `channel ${channel.name} belongs to intent ${channel.intentId}; a message may not cross to another intent (rule 8)`, {
      channel_intent_id: channel.intentId,
      intent_id: body.intent_id,
    });
  }
  const type = (body.message_type ?? "notify") as MessageType;
  const correlationId = body.correlation_id ?? null;
  const request = correlationId ? await loadRequest(ctx, correlationId) : null;
  const to = resolveRecipient(type, { to: body.to ?? null, correlationId }, channel.id, request);
  const sender = senderOf(caller, body.sender);
  if (channel.memberPolicy === "explicit") {
    if (!viewer.admin && !channel.members.includes(sender)) throw notAMember(sender, channel, "only members send");
    // Rule 3: direct addressing on an explicit channel reaches members only.
    if (to && to !== "*" && !to.startsWith("role:") && !channel.members.includes(to)) throw notAMember(to, channel, "a direct message goes to members only");
  }
  refuseCredentials({ payload: body.payload, metadata: body.metadata ?? {} });
  const now = ctx.clock.now();
  const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= now.getTime()) throw errors.validation("expires_at is already past: such a message would never be delivered");
  // Governance (2.11) binds writes scoped to the intent: allowed_agents and write_scope (read with the access check).
  verdict.assertGovernance();
  const written = await writeMessage(ctx.query, outgoing(channel, { sender, to, type, correlationId, payload: body.payload, metadata: body.metadata ?? {}, expiresAt }), now, revision);
  if (!written) throw revision === null ? await refusal(ctx, ctx.db, channel.id) : new ChangedChannel();
  ctx.published();
  return written;
}

async function loadRequest(ctx: ChannelsContext, id: string) {
  const [row] = await ctx.db
    .select({ id: messages.id, channelId: messages.channelId, messageType: messages.messageType, sender: messages.sender, status: messages.status })
    .from(messages)
    .where(eq(messages.id, id));
  if (row?.status === "expired" && row.messageType === "request") {
    throw appError("REQUEST_EXPIRED", `request ${id} has expired; it takes no more responses`, { correlation_id: id });
  }
  return row ?? null;
}

/** Why a message was not written: the channel is gone (404) or not open (409). */
async function refusal(ctx: ChannelsContext, db: Pick<Tx, "select">, channelId: string): Promise<AppError> {
  const [channel] = await db.select({ name: channels.name }).from(channels).where(eq(channels.id, channelId));
  if (!channel) return errors.notFound("channel", channelId);
  return appError("CHANNEL_CLOSED", `channel ${channel.name} is closed: it takes no new messages (it stays readable until deleted)`, { channel_id: channelId });
}

/** A message inside a caller's transaction (the departure notice beside the member list change). */
export async function insertMessage(ctx: ChannelsContext, tx: Tx, channel: Pick<ChannelRow, "id" | "name" | "intentId">, out: Outgoing, now: Date): Promise<Message> {
  const written = await writeMessageInTx(tx, outgoing(channel, out), now);
  if (!written) throw await refusal(ctx, tx, channel.id);
  return written;
}

const outgoing = (channel: Pick<ChannelRow, "id" | "name" | "intentId">, out: Outgoing): OutgoingMessage => ({
  channelId: channel.id,
  channelName: channel.name,
  intentId: channel.intentId,
  sender: out.sender,
  to: out.to,
  type: out.type,
  correlationId: out.correlationId,
  payload: out.payload,
  metadata: out.metadata,
  expiresAt: out.expiresAt,
});

/** The `to` values an agent sees besides null (all members) and its own messages: itself, `*` and its role (rules 3-5). */
async function recipientsOf(ctx: ChannelsContext, agentId: string): Promise<string[]> {
  const role = await roleOf(ctx, SERVICE_CALLER, agentId);
  return [agentId, "*", ...(role ? [`role:${role}`] : [])];
}

/** What an agent may see of a channel: its own messages, messages to all, and what is addressed to it or its role. */
async function visibility(ctx: ChannelsContext, viewer: Viewer): Promise<SQL | undefined> {
  if (!viewer.agentId) return undefined;
  return or(eq(messages.sender, viewer.agentId), sql`${messages.to} is null`, inArray(messages.to, await recipientsOf(ctx, viewer.agentId)));
}

/** GET /subscribe/channels/{id}: the access check and the caller's view, for the gateway to apply to live messages. */
export async function streamView(ctx: ChannelsContext, channelId: string, caller: Caller, known?: ChannelRow): Promise<ChannelStreamView> {
  const channel = await findChannel(ctx, channelId, known);
  const viewer = await assertChannelAccess(ctx, caller, channel);
  if (!viewer.agentId) return { channel_id: channelId, intent_id: channel.intentId, sees_all: true, agent_id: null, to_values: [] };
  return { channel_id: channelId, intent_id: channel.intentId, sees_all: false, agent_id: viewer.agentId, to_values: await recipientsOf(ctx, viewer.agentId) };
}

/** `since`: a message id, a sequence number or an ISO timestamp; the condition "after it". */
async function afterCursor(ctx: ChannelsContext, channelId: string, since: string | undefined): Promise<SQL | undefined> {
  if (!since) return undefined;
  if (/^\d{1,15}$/.test(since)) return gt(messages.sequence, Number(since));
  const id = Uuid.safeParse(since);
  if (id.success) {
    const [row] = await ctx.db.select({ sequence: messages.sequence }).from(messages).where(and(eq(messages.id, id.data), eq(messages.channelId, channelId)));
    if (!row) throw errors.validation(`since names no message of this channel (an evicted message's id no longer resolves: use its sequence or a timestamp)`);
    return gt(messages.sequence, row.sequence);
  }
  const at = new Date(since);
  if (Number.isNaN(at.getTime()) || !/^\d{4}-\d\d-\d\d/.test(since)) throw errors.validation("since must be a message id, a sequence number or an ISO 8601 timestamp");
  return gt(messages.createdAt, at);
}

/**
 * GET /channels/{id}/messages: oldest first after `since`, only what the caller may see (rules
 * 3-6), expired messages left out (rule 13: never delivered), `to` an exact filter. A bare list,
 * as the official Python client iterates it (docs/channels.md).
 */
export async function listMessages(ctx: ChannelsContext, channelId: string, query: ListMessagesQuery, caller: Caller, known?: ChannelRow): Promise<Message[]> {
  const channel = await findChannel(ctx, channelId, known);
  const viewer = await assertChannelAccess(ctx, caller, channel);
  const conditions = [eq(messages.channelId, channelId), sql`${messages.status} <> 'expired'`, await afterCursor(ctx, channelId, query.since), await visibility(ctx, viewer)];
  if (query.to) conditions.push(eq(messages.to, query.to));
  const rows = await ctx.db.select().from(messages).where(and(...conditions)).orderBy(asc(messages.sequence)).limit(query.limit);
  return rows.map(toMessage);
}

async function visibleMessage(ctx: ChannelsContext, channelId: string, messageId: string, caller: Caller, known?: ChannelRow) {
  return visibleMessageOf(ctx, await findChannel(ctx, channelId, known), messageId, caller);
}

async function visibleMessageOf(ctx: ChannelsContext, channel: ChannelRow, messageId: string, caller: Caller): Promise<{ channel: ChannelRow; row: MessageRow; viewer: Viewer; role: string | null }> {
  const channelId = channel.id;
  const viewer = await assertChannelAccess(ctx, caller, channel);
  const [row] = await ctx.db.select().from(messages).where(and(eq(messages.id, messageId), eq(messages.channelId, channelId)));
  if (!row) throw errors.notFound("message", messageId);
  const role = viewer.agentId ? await roleOf(ctx, SERVICE_CALLER, viewer.agentId) : null;
  if (viewer.agentId && !addressedTo(row, viewer.agentId, role)) throw errors.notFound("message", messageId);
  return { channel, row, viewer, role };
}

/** GET /channels/{id}/messages/{mid}. */
export async function getMessage(ctx: ChannelsContext, channelId: string, messageId: string, caller: Caller, known?: ChannelRow): Promise<Message> {
  return toMessage((await visibleMessage(ctx, channelId, messageId, caller, known)).row);
}

/** PATCH /channels/{id}/messages/{mid} {"status":"read"}: the target acknowledges (3.2). */
export async function markRead(ctx: ChannelsContext, channelId: string, messageId: string, caller: Caller, known?: ChannelRow): Promise<Message> {
  const { row, viewer } = await visibleMessage(ctx, channelId, messageId, caller, known);
  if (viewer.agentId === row.sender) throw errors.forbidden("the sender of a message does not acknowledge it; its target does", { message_id: messageId });
  if (row.status === "expired") throw appError("MESSAGE_EXPIRED", `message ${messageId} has expired and was not delivered`, { message_id: messageId });
  if (row.status === "read") return toMessage(row);
  const [updated] = await ctx.db
    .update(messages)
    .set({ status: "read", readAt: ctx.clock.now() })
    .where(and(eq(messages.id, messageId), inArray(messages.status, ["pending", "delivered"])))
    .returning();
  return toMessage(updated ?? row);
}
