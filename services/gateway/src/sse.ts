import type { Request, Response } from "express";
import { ACCESS_NARROWING_EVENTS, intentsCommands, type Caller, type CommandDef, type CommandInput, type z } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { Logger } from "@intentmesh/telemetry";
import type { EventFeed, StreamEvent } from "./event-feed";
import { startSseResponse } from "./sse-response";

export interface SseOptions {
  bus: BusClient;
  feed: EventFeed;
  pingMs: number;
  logger: Logger;
}

/** One page of an aggregate's event log, oldest first. */
export interface StreamEventPage {
  events: StreamEvent[];
  next_cursor: string | null;
  has_more: boolean;
}

/**
 * Where a stream reads the log of one aggregate. Any aggregate whose events carry a gap-free
 * per-aggregate `sequence` can be streamed through one of these.
 */
export interface EventSource {
  /** The aggregate id: the key its live events are dispatched on by the feed. */
  id: string;
  /** The newest event's sequence (0 for an empty log). Throws (404) when the aggregate does not exist. */
  readTail(): Promise<number>;
  /** The next page of events after a cursor: a sequence number as a string, or an event id (400 when unknown). */
  listAfter(after: string): Promise<StreamEventPage>;
}

export interface StreamOptions {
  /** The stream kind, a label of intentmesh_sse_connections: intents, portfolios, agents. */
  kind?: string;
  feed: EventFeed;
  source: EventSource;
  pingMs: number;
  logger: Logger;
  /**
   * Asked after an event that may narrow what the subscriber holds (`needsRecheck`), before
   * anything that follows it is sent: throws (403) when the subscriber may no longer read, which
   * ends the stream. The intents' ACL (RFC-0011).
   */
  recheck?: { needed(event: StreamEvent): boolean; run(): Promise<unknown> };
}

const PAGE = 1000;

/**
 * An EventSource over a list command of the shape `{...ref, query: {after, limit, tail}}`, as the
 * intent and portfolio event lists are, read with the subscriber's own caller.
 */
export function busEventSource<C extends CommandDef<z.ZodType, z.ZodType<StreamEventPage>>>(bus: BusClient, caller: Caller, command: C, id: string, ref: Record<string, string>): EventSource {
  const list = (query: Record<string, string | number>): Promise<StreamEventPage> => bus.request(command, caller, { ...ref, query } as CommandInput<C>);
  return {
    id,
    readTail: async () => (await list({ limit: 1, tail: "true" })).events[0]?.sequence ?? 0,
    listAfter: (after) => list({ after, limit: PAGE }),
  };
}

/** GET /subscribe/intents/{id}: the intent's events (see streamEvents). */
export function streamIntentEvents(req: Request, res: Response, options: SseOptions): Promise<void> {
  const intentId = String(req.params.id);
  const source = busEventSource(options.bus, req.caller!, intentsCommands.listEvents, intentId, { intent_id: intentId });
  // After a change of the intent's ACL the subscriber is asked about again (GET of the log's tail
  // with its own caller): a revoked reader gets nothing written after the revocation.
  const recheck = { needed: (event: StreamEvent) => ACCESS_NARROWING_EVENTS.has(event.event_type), run: () => source.readTail() };
  return streamEvents(req, res, { kind: "intents", feed: options.feed, source, pingMs: options.pingMs, logger: options.logger, recheck });
}

/**
 * One aggregate's events as SSE frames
 *   event: <event_type>\nid: <event id>\ndata: <event JSON>\n\n
 * and a `: ping` comment every pingMs. Without Last-Event-ID the stream starts at the present;
 * with it (header, or ?last_event_id) it first replays the log after that event.
 *
 * No loss, no repetition: the subscriber listens before it reads the log, and every event goes
 * through `deliver`, which sends an event only when its sequence is the next one and fills any
 * jump from the log. So events that arrive during the replay, twice, or out of order are harmless.
 */
export async function streamEvents(req: Request, res: Response, options: StreamOptions): Promise<void> {
  const { source } = options;
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
        options.logger.warn({ err, aggregateId: source.id }, "SSE stream failed; closing it so the client resumes with Last-Event-ID");
        close();
      })
      .finally(() => (pending -= 1));
  };

  // Frames written in the same tick leave in one socket write: a burst of events costs one
  // syscall per subscriber, not one per event.
  let corked = false;
  const write = (event: StreamEvent, frame = options.feed.encode(event)) => {
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

  /** After an event that may narrow the subscriber's access, nothing more is sent until it is asked again (a refusal closes the stream). */
  const needsRecheck = (event: StreamEvent) => options.recheck?.needed(event) ?? false;
  const recheck = async () => {
    try {
      await options.recheck!.run();
    } catch (error) {
      options.logger.info({ err: error, aggregateId: source.id }, "SSE subscriber no longer allowed to read; closing its stream");
      close();
    }
  };

  /** Sends the log after lastSent, up to and including `upTo`. */
  const backfill = async (upTo: number) => {
    while (!closed && lastSent < upTo) {
      const page = await source.listAfter(String(lastSent));
      for (const event of page.events) {
        if (closed || event.sequence !== lastSent + 1 || event.sequence > upTo) continue;
        write(event);
        if (needsRecheck(event)) await recheck();
      }
      if (!page.has_more || !page.events.length) return;
    }
  };

  const deliver = async (event: StreamEvent, frame?: string) => {
    if (closed || event.sequence <= lastSent) return;
    if (event.sequence > lastSent + 1) await backfill(event.sequence - 1);
    if (!closed && event.sequence === lastSent + 1) {
      write(event, frame);
      if (needsRecheck(event)) await recheck();
    }
  };

  // Listen first, so nothing published while the log is read can fall between the two.
  const unsubscribe = options.feed.subscribe(source.id, (live) => {
    // The common case, the next event with nothing queued before it, skips the promise chain.
    if (pending === 0 && !closed && live.event.sequence === lastSent + 1 && !needsRecheck(live.event)) write(live.event, live.frame);
    else enqueue(() => deliver(live.event, live.frame));
  });
  let first: { lastSequence: number; replay: StreamEventPage | undefined };
  try {
    first = lastEventId ? await readAfter(source, lastEventId) : { lastSequence: await source.readTail(), replay: undefined };
  } catch (error) {
    unsubscribe();
    throw error; // 404 for an unknown aggregate, 400 for an unknown Last-Event-ID: still plain HTTP
  }
  lastSent = first.lastSequence;

  const stopResponse = startSseResponse(res, options.kind ?? "events", options.pingMs, () => closed);

  function close() {
    if (closed) return;
    closed = true;
    stopResponse();
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

/** A resuming subscriber starts after the event it names; the first page of the replay comes along. */
async function readAfter(source: EventSource, lastEventId: string) {
  const page = await source.listAfter(lastEventId);
  const lastSequence = page.events.length ? page.events[0]!.sequence - 1 : Number(page.next_cursor ?? 0);
  return { lastSequence, replay: page };
}
