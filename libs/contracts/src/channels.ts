import { z } from "./zod";
import { AgentId, LIMITS, Timestamp, Uuid, boundedJsonObject, pageLimit } from "./common";
import { IntentRef, command } from "./command";

/**
 * Channels and messages (spec 2.12, 2.13, 3.2, 3.3, 4.7), served by the channels service on
 * `im.channels.<verb>`. Decisions where the spec is silent: docs/channels.md.
 */

export const ChannelStatus = z.enum(["open", "closed"]);
export const MemberPolicy = z.enum(["intent", "explicit"]);
export const MessageStatus = z.enum(["pending", "delivered", "read", "expired"]);
/** The official MCP server sends `message`: read as `notify` (CLIENTS.md), and documented as accepted. */
export const MessageType = z
  .enum(["request", "response", "notify", "broadcast", "message"])
  .transform((value): "request" | "response" | "notify" | "broadcast" => (value === "message" ? "notify" : value));
export type MessageType = "request" | "response" | "notify" | "broadcast";

/** The default of options.max_messages (spec 8) and its ceiling here. */
export const DEFAULT_MAX_MESSAGES = 1000;
export const MAX_MAX_MESSAGES = 100_000;
/** Members of one channel: bounded so a channel always fits in a reply. */
export const MAX_CHANNEL_MEMBERS = 1000;

const ChannelName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s\p{Cc}/]+$/u, "must not contain whitespace, control characters or '/'");

/** `to`: an agent id, `role:<role_id>` or `*`. */
const Recipient = z
  .string()
  .min(1)
  .max(300)
  .regex(/^[^\s\p{Cc}]+$/u, "must be an agent id, role:<role_id> or *")
  .refine((to) => to !== "role:", "role: needs a role id");

export const ChannelOptions = z
  .object({
    audit: z.boolean().optional(),
    ttl_seconds: z.number().int().min(1).max(31_536_000).nullable().optional(),
    max_messages: z.number().int().min(1).max(MAX_MAX_MESSAGES).optional(),
  })
  .strict();

export const Channel = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    task_id: Uuid.nullable(),
    name: z.string(),
    created_by: z.string(),
    members: z.array(z.string()),
    member_policy: MemberPolicy,
    options: z.object({ audit: z.boolean(), ttl_seconds: z.number().int().nullable(), max_messages: z.number().int() }),
    status: ChannelStatus,
    created_at: Timestamp,
    closed_at: Timestamp.nullable(),
    message_count: z.number().int(),
    last_message_at: Timestamp.nullable(),
  })
  .openapi("Channel");
export type Channel = z.infer<typeof Channel>;

export const CreateChannelBody = z
  .object({
    name: ChannelName,
    members: z.array(AgentId).max(MAX_CHANNEL_MEMBERS).optional(),
    member_policy: MemberPolicy.optional(),
    task_id: Uuid.nullable().optional(),
    options: ChannelOptions.optional(),
  })
  .strict()
  .openapi("CreateChannelBody");
export type CreateChannelBody = z.infer<typeof CreateChannelBody>;

export const PatchChannelBody = z
  .object({
    members: z.array(AgentId).max(MAX_CHANNEL_MEMBERS).optional(),
    member_policy: MemberPolicy.optional(),
    options: ChannelOptions.optional(),
    status: ChannelStatus.optional(),
  })
  .strict()
  .openapi("PatchChannelBody");
export type PatchChannelBody = z.infer<typeof PatchChannelBody>;

export const Message = z
  .object({
    id: Uuid,
    channel_id: Uuid,
    intent_id: Uuid,
    sequence: z.number().int().openapi({ description: "position in the channel, from 1" }),
    sender: z.string(),
    to: z.string().nullable(),
    message_type: z.enum(["request", "response", "notify", "broadcast"]),
    correlation_id: Uuid.nullable(),
    payload: z.record(z.string(), z.unknown()),
    metadata: z.record(z.string(), z.unknown()),
    status: MessageStatus,
    created_at: Timestamp,
    expires_at: Timestamp.nullable(),
    read_at: Timestamp.nullable(),
  })
  .openapi("Message");
export type Message = z.infer<typeof Message>;

export const SendMessageBody = z
  .object({
    sender: AgentId.optional().openapi({ description: "default the acting agent (X-Agent-ID or the key's principal)" }),
    to: Recipient.nullable().optional(),
    message_type: MessageType.optional().openapi({ description: "default notify" }),
    correlation_id: Uuid.nullable().optional(),
    payload: boundedJsonObject(LIMITS.jsonFieldBytes),
    metadata: boundedJsonObject(16 * 1024).optional(),
    expires_at: z.string().datetime({ offset: true }).nullable().optional(),
    /** A client may name the intent it means; another intent than the channel's is refused (rule 8). */
    intent_id: Uuid.optional(),
  })
  .strict()
  .openapi("SendMessageBody");
export type SendMessageBody = z.infer<typeof SendMessageBody>;

/** POST /channels/{id}/ask waits at most this long for the response (seconds). */
export const ASK_MAX_TIMEOUT_SECONDS = 60;

/**
 * POST /channels/{id}/ask (RFC 0021's ask(), served; the official MCP server's `openintent_ask`):
 * a request to `to`, then the wait for its first response, `timeout` seconds at most (default 30).
 * The request expires at the timeout (3.1): a later response is refused (409 REQUEST_EXPIRED).
 */
export const AskBody = z
  .object({
    sender: AgentId.optional().openapi({ description: "default the acting agent (X-Agent-ID or the key's principal)" }),
    to: Recipient.openapi({ description: "the agent id or role:<role_id> asked" }),
    payload: boundedJsonObject(LIMITS.jsonFieldBytes),
    metadata: boundedJsonObject(16 * 1024).optional(),
    timeout: z.number().min(1).max(ASK_MAX_TIMEOUT_SECONDS).default(30).openapi({ description: `seconds to wait for the response, 1 to ${ASK_MAX_TIMEOUT_SECONDS} (default 30)` }),
    intent_id: Uuid.optional(),
  })
  .strict()
  .openapi("AskBody");
export type AskBody = z.infer<typeof AskBody>;

export const ReplyBody = z
  .object({ sender: AgentId.optional(), payload: boundedJsonObject(LIMITS.jsonFieldBytes), metadata: boundedJsonObject(16 * 1024).optional() })
  .strict()
  .openapi("ReplyBody");
export type ReplyBody = z.infer<typeof ReplyBody>;

/** PATCH …/messages/{mid}: the target acknowledges (3.2 delivered -> read). */
export const MarkMessageBody = z.object({ status: z.literal("read") }).strict().openapi("MarkMessageBody");

export const ListMessagesQuery = z.object({
  since: z.string().max(100).optional().openapi({ description: "a message id, a sequence number or an ISO timestamp: messages after it" }),
  to: z.string().max(300).optional().openapi({ description: "only messages whose `to` is exactly this" }),
  limit: pageLimit(100, 1000),
});
export type ListMessagesQuery = z.infer<typeof ListMessagesQuery>;

export const ListChannelsQuery = z.object({
  after: z.string().regex(/^\d{1,9}$/, "after must be a cursor from next_cursor").optional(),
  limit: pageLimit(100, 1000),
});

const ChannelRef = z.object({ channel_id: Uuid });
const MessageRef = ChannelRef.extend({ message_id: Uuid });

// What the commands answer (each command carries its output schema).
export const ChannelPage = z.object({ channels: z.array(Channel), next_cursor: z.string().nullable(), has_more: z.boolean() }).passthrough().openapi("ChannelPage");

/** The answer of an ask: the request sent and the first response to it. */
export const AskResult = z.object({ request: Message, response: Message }).openapi("AskResult");
export type AskResult = z.infer<typeof AskResult>;

export const ChannelDeleted = z.object({ status: z.string(), channel_id: Uuid }).passthrough().openapi("ChannelDeleted");

export const ChannelStreamViewSchema = z.object({
  channel_id: Uuid,
  /** The channel's intent: its stream checks its subscriber again when that intent's ACL changes (RFC-0011). */
  intent_id: Uuid,
  sees_all: z.boolean(),
  agent_id: z.string().nullable(),
  to_values: z.array(z.string()),
});

/** What every way of sending (to a channel by id, by name, a reply) may answer: the rules of 2.13 and 2.11. */
const SEND_ERRORS = [
  "CHANNEL_CLOSED",
  "CREDENTIALS_IN_MESSAGE",
  "CROSS_INTENT_MESSAGE",
  "GOVERNANCE_VIOLATION",
  "MESSAGE_RULE_VIOLATED",
  "NOT_A_MEMBER",
  "REQUEST_EXPIRED",
] as const;

export const channelsCommands = {
  create: command("channels", "create", IntentRef.extend({ body: CreateChannelBody }), Channel, ["CHANNEL_NAME_TAKEN", "INTENT_ENDED", "INTENT_NOT_FOUND"]),
  list: command("channels", "list", IntentRef.extend({ query: ListChannelsQuery }), ChannelPage, ["INTENT_NOT_FOUND"]),
  get: command("channels", "get", ChannelRef, Channel, ["CHANNEL_NOT_FOUND"]),
  patch: command("channels", "patch", ChannelRef.extend({ body: PatchChannelBody }), Channel, ["CHANNEL_CLOSED", "CHANNEL_NOT_FOUND"]),
  delete: command("channels", "delete", ChannelRef, ChannelDeleted, ["CHANNEL_NOT_FOUND"]),
  send: command("channels", "messages.send", ChannelRef.extend({ body: SendMessageBody }), Message, [...SEND_ERRORS, "CHANNEL_NOT_FOUND"]),
  /** Rule 10: a message to a channel name of the intent, creating the channel when it does not exist. */
  sendByName: command("channels", "messages.send_by_name", IntentRef.extend({ name: ChannelName, body: SendMessageBody }), Message, [...SEND_ERRORS, "INTENT_ENDED", "INTENT_NOT_FOUND"]),
  listMessages: command("channels", "messages.list", ChannelRef.extend({ query: ListMessagesQuery }), z.array(Message), ["CHANNEL_NOT_FOUND", "NOT_A_MEMBER"]),
  getMessage: command("channels", "messages.get", MessageRef, Message, ["CHANNEL_NOT_FOUND", "MESSAGE_NOT_FOUND"]),
  ask: command("channels", "messages.ask", ChannelRef.extend({ body: AskBody }), AskResult, [...SEND_ERRORS, "CHANNEL_NOT_FOUND", "RESPONSE_TIMEOUT"]),
  reply: command("channels", "messages.reply", MessageRef.extend({ body: ReplyBody }), Message, [...SEND_ERRORS, "CHANNEL_NOT_FOUND", "MESSAGE_NOT_FOUND"]),
  markRead: command("channels", "messages.mark", MessageRef.extend({ body: MarkMessageBody }), Message, ["CHANNEL_NOT_FOUND", "MESSAGE_NOT_FOUND"]),
  /**
   * For GET /subscribe/channels/{id}: checks the caller may read the channel and says which
   * messages it sees: all (`sees_all`), or its own (`agent_id` as sender) and those whose `to`
   * is null or one of `to_values`. The rule stays in the channels service; the gateway only
   * applies this answer to each live message.
   */
  streamView: command("channels", "stream_view", ChannelRef, ChannelStreamViewSchema, ["CHANNEL_NOT_FOUND", "NOT_A_MEMBER"]),
} as const;

/** Every message of a channel, for its SSE stream: im.evt.channel.<channel_id>.channel_message. */
export interface ChannelStreamView {
  channel_id: string;
  intent_id: string;
  sees_all: boolean;
  agent_id: string | null;
  to_values: string[];
}

export const channelStream = { name: "IM_CHANNELS", subjects: ["im.evt.channel.>"] } as const;
export const channelMessageSubject = (channelId: string) => `im.evt.channel.${channelId}.channel_message`;
