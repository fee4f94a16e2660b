import { randomUUID } from "node:crypto";
import { and, asc, eq, sql } from "drizzle-orm";
import { appError, type Caller, type Channel, type CreateChannelBody, DEFAULT_MAX_MESSAGES, errors, fitPage, jsonBytes, type PatchChannelBody, taskCommands } from "@intentmesh/contracts";
import { isUniqueViolation, type Tx } from "@intentmesh/db";
import type { ChannelsContext } from "../context";
import { channels, messages } from "../db/schema";
import { assertChannelAccess, assertMayChange, findChannel, readIntent } from "../access";
import { viewerOf } from "../domain/rules";
import { toChannel, type ChannelRow } from "../mapping";

const ENDED_INTENT = ["completed", "abandoned"];

/** A new channel row: defaults of 2.12 (policy intent, max_messages 1000, audit off). */
export function newChannelRow(intentId: string, body: CreateChannelBody, createdBy: string, creatorIsAgent: boolean, now: Date): ChannelRow {
  const policy = body.member_policy ?? "intent";
  const members = [...new Set(body.members ?? [])];
  // An agent that opens an explicit channel is one of its members (it could not use it otherwise).
  if (policy === "explicit" && creatorIsAgent && !members.includes(createdBy)) members.unshift(createdBy);
  const ttl = body.options?.ttl_seconds ?? null;
  return {
    id: randomUUID(),
    intentId,
    taskId: body.task_id ?? null,
    name: body.name,
    createdBy,
    members,
    memberPolicy: policy,
    audit: body.options?.audit ?? false,
    ttlSeconds: ttl,
    maxMessages: body.options?.max_messages ?? DEFAULT_MAX_MESSAGES,
    status: "open",
    createdAt: now,
    closedAt: null,
    messageCount: 0,
    lastMessageAt: null,
    closesAt: ttl ? new Date(now.getTime() + ttl * 1000) : null,
    revision: 0,
  };
}

/** Checks that the intent can take a channel (readable, not ended) and that task_id is one of its tasks. */
export async function checkNewChannel(ctx: ChannelsContext, caller: Caller, intentId: string, taskId: string | null | undefined): Promise<void> {
  const intent = await readIntent(ctx, caller, intentId);
  if (ENDED_INTENT.includes(intent.status)) {
    throw appError("INTENT_ENDED", `intent ${intentId} is ${intent.status}: its channels are closed and it takes no new ones`, { intent_id: intentId, status: intent.status });
  }
  if (taskId) {
    const task = await ctx.client.request(taskCommands.get, caller, { task_id: taskId });
    if (task.intent_id !== intentId) throw errors.validation(`task ${taskId} belongs to intent ${task.intent_id}, not ${intentId}`);
  }
}

export async function insertChannel(db: Tx | ChannelsContext["db"], row: ChannelRow): Promise<void> {
  try {
    await db.insert(channels).values(row);
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw appError("CHANNEL_NAME_TAKEN", `intent ${row.intentId} already has a channel named ${row.name}`, { intent_id: row.intentId, name: row.name });
    }
    throw error;
  }
}

/** POST /intents/{intent_id}/channels. */
export async function createChannel(ctx: ChannelsContext, intentId: string, body: CreateChannelBody, caller: Caller): Promise<Channel> {
  await checkNewChannel(ctx, caller, intentId, body.task_id);
  const viewer = viewerOf(caller);
  const row = newChannelRow(intentId, body, viewer.agentId ?? caller.actor, viewer.agentId !== null, ctx.clock.now());
  await insertChannel(ctx.db, row);
  return toChannel(row);
}

/** GET /intents/{intent_id}/channels: oldest first, paged by count and bytes (docs/channels.md). */
export async function listChannels(ctx: ChannelsContext, intentId: string, query: { after?: string | undefined; limit: number }, caller: Caller) {
  await readIntent(ctx, caller, intentId);
  const after = query.after ? Number(query.after) : 0;
  if (!Number.isSafeInteger(after) || after < 0) throw errors.validation("after must be a cursor from next_cursor");
  const rows = await ctx.db
    .select({ row: channels, position: sql<number>`row_number() over (order by ${channels.createdAt}, ${channels.id})` })
    .from(channels)
    .where(eq(channels.intentId, intentId))
    .orderBy(asc(channels.createdAt), asc(channels.id));
  const rest = rows.filter((r) => Number(r.position) > after);
  const { items, cut } = fitPage(rest.slice(0, query.limit).map((r) => ({ position: Number(r.position), channel: toChannel(r.row) })), (c) => jsonBytes(c.channel));
  const hasMore = cut || rest.length > query.limit;
  return { channels: items.map((c) => c.channel), next_cursor: hasMore ? String(items[items.length - 1]!.position) : null, has_more: hasMore };
}

/** GET /channels/{id}. */
export async function getChannel(ctx: ChannelsContext, channelId: string, caller: Caller, known?: ChannelRow): Promise<Channel> {
  const channel = await findChannel(ctx, channelId, known);
  await assertChannelAccess(ctx, caller, channel);
  return toChannel(channel);
}

/** PATCH /channels/{id}: members, member_policy, options, status (rule 7; a closed channel stays closed). */
export async function patchChannel(ctx: ChannelsContext, channelId: string, body: PatchChannelBody, caller: Caller, known?: ChannelRow): Promise<Channel> {
  const existing = await findChannel(ctx, channelId, known);
  await assertChannelAccess(ctx, caller, existing);
  await assertMayChange(ctx, caller, existing);
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    const [current] = await tx.select().from(channels).where(eq(channels.id, channelId)).for("update");
    if (!current) throw errors.notFound("channel", channelId);
    if (body.status === "open" && current.status === "closed") {
      throw appError("CHANNEL_CLOSED", `channel ${current.name} is closed; a closed channel is not reopened (create another)`, { channel_id: channelId });
    }
    const changes: Partial<ChannelRow> = {};
    if (body.members) changes.members = [...new Set(body.members)];
    if (body.member_policy) changes.memberPolicy = body.member_policy;
    if (body.options?.audit !== undefined) changes.audit = body.options.audit;
    if (body.options?.max_messages !== undefined) changes.maxMessages = body.options.max_messages;
    if (body.options?.ttl_seconds !== undefined) {
      changes.ttlSeconds = body.options.ttl_seconds;
      const from = current.lastMessageAt ?? current.createdAt;
      changes.closesAt = body.options.ttl_seconds ? new Date(from.getTime() + body.options.ttl_seconds * 1000) : null;
    }
    if (body.status === "closed" && current.status === "open") {
      changes.status = "closed";
      changes.closedAt = now;
    }
    if (!Object.keys(changes).length) return current;
    // Any change may change who may send: remembered rows (RememberedChannels) on every replica stop writing.
    const [updated] = await tx
      .update(channels)
      .set({ ...changes, revision: sql`${channels.revision} + 1` })
      .where(eq(channels.id, channelId))
      .returning();
    if (changes.maxMessages !== undefined) await evictBeyond(tx, updated!);
    return updated!;
  });
  ctx.remembered.forget(channelId);
  return toChannel(row);
}

/** DELETE /channels/{id}: closes and deletes the channel and its messages (4.7). */
export async function deleteChannel(ctx: ChannelsContext, channelId: string, caller: Caller, known?: ChannelRow): Promise<{ status: "closed"; channel_id: string }> {
  const existing = await findChannel(ctx, channelId, known);
  await assertChannelAccess(ctx, caller, existing);
  await assertMayChange(ctx, caller, existing);
  await ctx.db.transaction(async (tx) => {
    await tx.delete(messages).where(eq(messages.channelId, channelId));
    await tx.delete(channels).where(eq(channels.id, channelId));
  });
  ctx.remembered.forget(channelId);
  return { status: "closed", channel_id: channelId };
}

/** Spec 8: beyond max_messages the oldest messages are evicted. */
export async function evictBeyond(tx: Tx, channel: ChannelRow): Promise<void> {
  const keepFrom = channel.messageCount - channel.maxMessages;
  if (keepFrom > 0) await tx.delete(messages).where(and(eq(messages.channelId, channel.id), sql`${messages.sequence} <= ${keepFrom}`));
}

