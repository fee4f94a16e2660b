import { isoTimestamp, type Channel, type Message } from "@intentmesh/contracts";
import type { channels, messages } from "./db/schema";

export type ChannelRow = typeof channels.$inferSelect;
export type MessageRow = typeof messages.$inferSelect;

const at = (value: Date | null) => (value ? isoTimestamp(value) : null);

export function toChannel(row: ChannelRow): Channel {
  return {
    id: row.id,
    intent_id: row.intentId,
    task_id: row.taskId,
    name: row.name,
    created_by: row.createdBy,
    members: row.members,
    member_policy: row.memberPolicy as Channel["member_policy"],
    options: { audit: row.audit, ttl_seconds: row.ttlSeconds, max_messages: row.maxMessages },
    status: row.status as Channel["status"],
    created_at: isoTimestamp(row.createdAt),
    closed_at: at(row.closedAt),
    message_count: row.messageCount,
    last_message_at: at(row.lastMessageAt),
  };
}

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    channel_id: row.channelId,
    intent_id: row.intentId,
    sequence: row.sequence,
    sender: row.sender,
    to: row.to,
    message_type: row.messageType as Message["message_type"],
    correlation_id: row.correlationId,
    payload: row.payload,
    metadata: row.metadata,
    status: row.status as Message["status"],
    created_at: isoTimestamp(row.createdAt),
    expires_at: at(row.expiresAt),
    read_at: at(row.readAt),
  };
}
