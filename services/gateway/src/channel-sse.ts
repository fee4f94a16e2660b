import type { Request, Response } from "express";
import { ACCESS_NARROWING_EVENTS, appError, channelsCommands, systemEvents, type Message } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { Logger } from "@intentmesh/telemetry";
import type { EventFeed } from "./event-feed";
import { startSseResponse } from "./sse-response";

export interface ChannelSseOptions {
  bus: BusClient;
  feed: EventFeed;
  /** The intents' live events: a change of the channel's intent's ACL has the subscriber asked about again (RFC-0011). */
  intentFeed?: EventFeed;
  pingMs: number;
  logger: Logger;
}

/** A channel_message frame: the full message (4.7 rule 11); the SSE id is its sequence in the channel. */
const CHANNEL_MESSAGE = systemEvents.channelMessage.name;
export const channelFrame = (message: Message) => `event: ${CHANNEL_MESSAGE}\nid: ${message.sequence}\ndata: ${JSON.stringify({ ...message, event_type: CHANNEL_MESSAGE })}\n\n`;

/**
 * GET /subscribe/channels/{id}: the channel's messages as `channel_message` frames, to those who
 * may read the channel, and of those only what the subscriber may see: both decided by the
 * channels service (channels.stream_view, rules 3-6), applied here to each live message. With Last-Event-ID (a
 * sequence) it first replays what came after, through the same pull the API offers.
 *
 * Unlike an event log, a subscriber's view of a channel has gaps by design (other agents' direct
 * messages), so order is kept by sequence alone: live messages that arrive while the replay runs
 * wait, and nothing at or below the last sequence sent is sent again.
 */
export async function streamChannel(req: Request, res: Response, options: ChannelSseOptions): Promise<void> {
  const channelId = String(req.params.channelId);
  const caller = req.caller!;
  // The channels service checks access and says what this caller sees (rules 3-6); here it is only applied.
  const view = await options.bus.request(channelsCommands.streamView, caller, { channel_id: channelId });
  const visible = (m: Message) => view.sees_all || m.sender === view.agent_id || m.to === null || view.to_values.includes(m.to);
  const lastEventId = req.get("last-event-id") || (typeof req.query.last_event_id === "string" ? req.query.last_event_id : undefined);
  if (lastEventId !== undefined && !/^\d{1,15}$/.test(lastEventId)) {
    throw appError("VALIDATION_FAILED", "Last-Event-ID of a channel stream is the sequence of the last message received", { last_event_id: lastEventId });
  }

  let closed = false;
  let lastSent = lastEventId ? Number(lastEventId) : Number.POSITIVE_INFINITY;
  let replaying = lastEventId !== undefined;
  const waiting: { message: Message; frame: string }[] = [];
  const send = (message: Message, frame = channelFrame(message)) => {
    if (closed || message.sequence <= lastSent) return;
    res.write(frame);
    lastSent = message.sequence;
  };
  const unsubscribe = options.feed.subscribe(channelId, (live) => {
    const message = live.event as unknown as Message;
    if (!visible(message)) return;
    if (lastSent === Number.POSITIVE_INFINITY) lastSent = message.sequence - 1;
    if (replaying) waiting.push({ message, frame: live.frame });
    else send(message, live.frame);
  });

  // Intent access gates channel access (5.6): when the intent's ACL changes, the channels service
  // is asked again with the subscriber's caller, and a refusal ends the stream.
  const unwatch = options.intentFeed?.subscribe(view.intent_id, (live) => {
    if (!ACCESS_NARROWING_EVENTS.has(live.event.event_type)) return;
    options.bus.request(channelsCommands.streamView, caller, { channel_id: channelId }).catch((err: unknown) => {
      options.logger.info({ err, channelId }, "channel subscriber no longer allowed to read; closing its stream");
      close();
    });
  });

  const stopResponse = startSseResponse(res, "channels", options.pingMs, () => closed);
  const close = () => {
    if (closed) return;
    closed = true;
    stopResponse();
    unsubscribe();
    unwatch?.();
    res.end();
  };
  req.on("close", close);

  if (!replaying) return;
  try {
    for (;;) {
      const page = await options.bus.request(channelsCommands.listMessages, caller, { channel_id: channelId, query: { since: String(lastSent), limit: 1000 } });
      for (const message of page) send(message);
      if (page.length < 1000 || closed) break;
    }
  } catch (err) {
    options.logger.warn({ err, channelId }, "channel stream replay failed; closing it so the client resumes with Last-Event-ID");
    close();
    return;
  }
  replaying = false;
  for (const { message, frame } of waiting.splice(0)) send(message, frame);
}
