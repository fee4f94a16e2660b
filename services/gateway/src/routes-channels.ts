import type { Request } from "express";
import { channelsCommands as c } from "@intentmesh/contracts";
import type { Route } from "./routes";
import { id } from "./route-params";

const channelId = (req: Request) => String(req.params.channelId);
const messageId = (req: Request) => String(req.params.messageId);

/** Part 4.7, and rule 10's implicit creation at /intents/{id}/channels/{name}/messages (docs/channels.md). */
export const channelRoutes: Route[] = [
  { method: "post", path: "/intents/:id/channels", command: c.create, input: (req) => ({ intent_id: id(req), body: req.body }), status: 201, summary: "Create a channel on the intent" },
  { method: "get", path: "/intents/:id/channels", command: c.list, input: (req) => ({ intent_id: id(req), query: req.query }), summary: "The intent's channels, oldest first: {channels, next_cursor, has_more}" },
  {
    method: "post",
    path: "/intents/:id/channels/:name/messages",
    command: c.sendByName,
    input: (req) => ({ intent_id: id(req), name: String(req.params.name), body: req.body }),
    status: 201,
    actingAgentField: "sender",
    summary: "Send to the intent's channel of that name, creating it (policy intent) when it does not exist (rule 10)",
  },
  { method: "get", path: "/channels/:channelId", command: c.get, input: (req) => ({ channel_id: channelId(req) }), summary: "Read a channel" },
  { method: "patch", path: "/channels/:channelId", command: c.patch, input: (req) => ({ channel_id: channelId(req), body: req.body }), summary: "Change members, member_policy, options or close the channel (creator, coordinator, admin)" },
  { method: "delete", path: "/channels/:channelId", command: c.delete, input: (req) => ({ channel_id: channelId(req) }), summary: "Close and delete the channel and its messages" },
  { method: "post", path: "/channels/:channelId/messages", command: c.send, input: (req) => ({ channel_id: channelId(req), body: req.body }), status: 201, actingAgentField: "sender", summary: "Send a message (type rules of 2.13)" },
  { method: "get", path: "/channels/:channelId/messages", command: c.listMessages, input: (req) => ({ channel_id: channelId(req), query: req.query }), summary: "Messages after `since` that the caller may see, oldest first (a bare list)" },
  { method: "get", path: "/channels/:channelId/messages/:messageId", command: c.getMessage, input: (req) => ({ channel_id: channelId(req), message_id: messageId(req) }), summary: "Read a message" },
  {
    method: "post",
    path: "/channels/:channelId/messages/:messageId/reply",
    command: c.reply,
    input: (req) => ({ channel_id: channelId(req), message_id: messageId(req), body: req.body }),
    status: 201,
    actingAgentField: "sender",
    summary: "Answer a request: a response with correlation_id and to set by the server",
  },
  {
    method: "patch",
    path: "/channels/:channelId/messages/:messageId",
    command: c.markRead,
    input: (req) => ({ channel_id: channelId(req), message_id: messageId(req), body: req.body }),
    summary: "Acknowledge a message: {\"status\":\"read\"}",
  },
];
