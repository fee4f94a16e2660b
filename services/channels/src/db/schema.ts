import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, jsonb, pgSchema, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { inboxTable } from "@intentmesh/db";
import { outboxTable } from "@intentmesh/bus";

/** The channels service owns this schema; no other service reads it. */
export const channelsSchema = pgSchema("channels");

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const channels = channelsSchema.table(
  "channels",
  {
    id: uuid("id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    taskId: uuid("task_id"),
    name: text("name").notNull(),
    createdBy: text("created_by").notNull(),
    members: text("members").array().notNull().default(sql`'{}'::text[]`),
    memberPolicy: text("member_policy").notNull(),
    audit: boolean("audit").notNull(),
    ttlSeconds: integer("ttl_seconds"),
    maxMessages: integer("max_messages").notNull(),
    status: text("status").notNull(),
    createdAt: ts("created_at").notNull(),
    closedAt: ts("closed_at"),
    /** Messages ever sent (2.12 message_count), also the sequence of the newest. */
    messageCount: integer("message_count").notNull().default(0),
    lastMessageAt: ts("last_message_at"),
    /** When an open channel with ttl_seconds closes: last message (or creation) + ttl. */
    closesAt: ts("closes_at"),
    /**
     * Bumped by every change of who may send (members, member_policy, any PATCH), never by a
     * message: a send checked against a remembered row writes only while the row is still at its
     * revision (handlers/send-cache.ts).
     */
    revision: integer("revision").notNull().default(0),
  },
  (t) => [
    uniqueIndex("channels_intent_name_idx").on(t.intentId, t.name),
    index("channels_task_idx").on(t.taskId).where(sql`${t.taskId} is not null`),
    index("channels_closes_at_idx").on(t.closesAt).where(sql`${t.status} = 'open' and ${t.closesAt} is not null`),
    index("channels_members_idx").using("gin", t.members),
  ],
);

export const messages = channelsSchema.table(
  "messages",
  {
    id: uuid("id").primaryKey(),
    channelId: uuid("channel_id").notNull(),
    intentId: uuid("intent_id").notNull(),
    /** Position in the channel, from 1 without gaps: the pull cursor and the SSE id. */
    sequence: bigint("sequence", { mode: "number" }).notNull(),
    sender: text("sender").notNull(),
    to: text("to"),
    messageType: text("message_type").notNull(),
    correlationId: uuid("correlation_id"),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    status: text("status").notNull(),
    createdAt: ts("created_at").notNull(),
    expiresAt: ts("expires_at"),
    readAt: ts("read_at"),
  },
  (t) => [
    uniqueIndex("messages_channel_seq_idx").on(t.channelId, t.sequence),
    index("messages_correlation_idx").on(t.correlationId).where(sql`${t.correlationId} is not null`),
    index("messages_expiry_idx").on(t.expiresAt).where(sql`${t.status} in ('pending', 'delivered') and ${t.expiresAt} is not null`),
    index("messages_to_idx").on(t.to).where(sql`${t.status} in ('pending', 'delivered')`),
  ],
);

export const outbox = outboxTable(channelsSchema);
export const inbox = inboxTable(channelsSchema);
