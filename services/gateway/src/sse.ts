import type { Request, Response } from "express";
import { intentsCommands, type Caller, type EventPage, type IntentEvent } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { Logger } from "@intentmesh/telemetry";
import { sseFrame, type EventFeed } from "./event-feed";

export interface SseOptions {
  bus: BusClient;
  feed: EventFeed;
  pingMs: number;
  logger: Logger;
}

const PAGE = 1000;

/**
 * GET /subscribe/intents/{id}: the intent's events as SSE frames
 *   event: <event_type>\nid: <event id>\ndata: <event JSON>\n\n
 * and a `: ping` comment every pingMs. Without Last-Event-ID the stream starts at the present;
 * with it (header, or ?last_event_id) it first replays the log after that event.
 *
 * No loss, no repetition: the subscriber listens before it reads the log, and every event goes
 * through `deliver`, which sends an event only when its sequence is the next one and fills any
 * jump from the log. So events that arrive during the replay, twice, or out of order are harmless.
 */
export async function streamIntentEvents(req: Request, res: Response, options: SseOptions): Promise<void> {
  const caller = req.caller!;
  const intentId = String(req.params.id);
  const lastEventId = req.get("last-event-id") || (typeof req.query.last_event_id === "string" ? req.query.last_event_id : undefined);

  let closed = false;
  let lastSent = 0;
  let release!: () => void;
  let chain: Promise<void> = new Promise<void>((resolve) => (release = resolve));
  /** Work queued on the chain and not finished yet; while zero, an in-order live event is written at once. */
  let pending = 1;
  const enqueue = (work: () => Promise<void>) => {
    pending += 1;
    chain = chain
      .then(work)
      .catch((err) => {
        options.logger.warn({ err, intentId }, "SSE stream failed; closing it so the client resumes with Last-Event-ID");
        close();
      })
      .finally(() => (pending -= 1));
  };

  // Frames written in the same tick leave in one socket write: a burst of events costs one
  // syscall per subscriber, not one per event.
  let corked = false;
  const write = (event: IntentEvent, frame = sseFrame(event)) => {
    if (!corked) {
      corked = true;
      res.cork();
      process.nextTick(() => {
        corked = false;
        res.uncork();
      });
    }
    res.write(frame);
    lastSent = event.sequence;
  };

  /** Sends the log after lastSent, up to and including `upTo`. */
  const backfill = async (upTo: number) => {
    while (!closed && lastSent < upTo) {
      const page = await listEvents(options.bus, caller, intentId, String(lastSent));
      for (const event of page.events) if (event.sequence === lastSent + 1 && event.sequence <= upTo) write(event);
      if (!page.has_more || !page.events.length) return;
    }
  };

  const deliver = async (event: IntentEvent, frame?: string) => {
    if (closed || event.sequence <= lastSent) return;
    if (event.sequence > lastSent + 1) await backfill(event.sequence - 1);
    if (!closed && event.sequence === lastSent + 1) write(event, frame);
  };

  // Listen first, so nothing published while the log is read can fall between the two.
  const unsubscribe = options.feed.subscribe(intentId, (live) => {
    // The common case, the next event with nothing queued before it, skips the promise chain.
    if (pending === 0 && !closed && live.event.sequence === lastSent + 1) write(live.event, live.frame);
    else enqueue(() => deliver(live.event, live.frame));
  });
  let first: { lastSequence: number; replay: EventPage | undefined };
  try {
    first = lastEventId ? await readAfter(options.bus, caller, intentId, lastEventId) : await readTail(options.bus, caller, intentId);
  } catch (error) {
    unsubscribe();
    throw error; // 404 for an unknown intent, 400 for an unknown Last-Event-ID: still plain HTTP
  }
  lastSent = first.lastSequence;

  res.status(200).set({
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache, no-transform",
    Connection: "keep-alive",
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();
  res.write("retry: 2000\n\n");

  const ping = setInterval(() => {
    if (!closed) res.write(": ping\n\n");
  }, options.pingMs);

  function close() {
    if (closed) return;
    closed = true;
    clearInterval(ping);
    unsubscribe();
    res.end();
  }
  req.on("close", close);

  const replay = first.replay;
  if (replay) {
    enqueue(async () => {
      for (const event of replay.events) await deliver(event);
      if (replay.has_more) await backfill(Number.POSITIVE_INFINITY);
    });
  }
  release();
  chain = chain.finally(() => (pending -= 1));
}

function listEvents(bus: BusClient, caller: Caller, intentId: string, after: string | undefined, extra: Record<string, string> = {}) {
  return bus.request<EventPage>(intentsCommands.listEvents, caller, {
    intent_id: intentId,
    query: { after, limit: PAGE, ...extra },
  });
}

/** A fresh subscriber starts after the last event in the log now (reading it also proves the intent exists). */
async function readTail(bus: BusClient, caller: Caller, intentId: string) {
  const tail = await bus.request<EventPage>(intentsCommands.listEvents, caller, {
    intent_id: intentId,
    query: { limit: 1, tail: "true" },
  });
  return { lastSequence: tail.events[0]?.sequence ?? 0, replay: undefined };
}

/** A resuming subscriber starts after the event it names; the first page of the replay comes along. */
async function readAfter(bus: BusClient, caller: Caller, intentId: string, lastEventId: string) {
  const page = await listEvents(bus, caller, intentId, lastEventId);
  const lastSequence = page.events.length ? page.events[0]!.sequence - 1 : Number(page.next_cursor ?? 0);
  return { lastSequence, replay: page };
}
