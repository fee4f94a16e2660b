import type { AgentEvent, InboxHint, IntentEvent, Message, PortfolioEvent } from "@intentmesh/contracts";
import { IntentmeshError, abortError, type ErrorBody } from "./errors";
import type { Intentmesh } from "./client";

/**
 * The four SSE streams of spec 4.10 (GET /subscribe/<kind>/{id}). They are not operations of the
 * route catalogue (the gateway serves them itself, services/gateway/src/sse.ts), so their paths
 * are named here; their event payloads are the contracts' own types.
 */
export type StreamKind = "intents" | "portfolios" | "agents" | "channels";

/** The frame the gateway adds after each `agent_assigned` on an agent stream, for the official clients (no id). */
export interface AgentAssignedFrame {
  intent_id: string;
  agent_id: string;
  role: string | null;
  event_id: string;
}

export type StreamData<K extends StreamKind> = K extends "intents"
  ? IntentEvent
  : K extends "portfolios"
    ? PortfolioEvent
    : K extends "agents"
      ? AgentEvent | AgentAssignedFrame
      : Message & { event_type: "channel_message" };

/** One event of a stream: its SSE `event` name, its `id` (what Last-Event-ID resumes after) and its JSON. */
export interface StreamMessage<K extends StreamKind> {
  event: string;
  /** Absent on frames that cannot be resumed from (the agent stream's AGENT_ASSIGNED copies). */
  id: string | undefined;
  data: StreamData<K>;
}

export interface StreamOptions {
  /**
   * Where to begin: `"now"` (default: events after the current end of the log, read before
   * connecting so that nothing falls between), `"start"` (the whole log), or `{ lastEventId }`,
   * the id of the last event already handled (an event id, or a sequence number).
   */
  from?: "now" | "start" | { lastEventId: string };
  /** Ends the stream: the iterator finishes (no error) once it aborts. */
  signal?: AbortSignal;
  /** X-Agent-ID of the subscription, instead of the client's. */
  agentId?: string;
  /** Reconnection: first delay (default: the server's `retry:`, else 1000 ms), doubling up to maxDelayMs (30000); maxAttempts in a row (default: no limit). */
  reconnect?: { minDelayMs?: number; maxDelayMs?: number; maxAttempts?: number };
  /** Called on every (re)connection, with the Last-Event-ID it resumed from. */
  onConnect?: (lastEventId: string | undefined) => void;
  /** Called when the connection is lost, before waiting to reconnect. */
  onDisconnect?: (error: unknown) => void;
}

interface InternalOptions extends StreamOptions {
  client: Intentmesh;
  url: string;
  headers: () => Record<string, string>;
  fetch: typeof fetch;
}

/** Statuses after which reconnecting cannot help: the request itself is refused. */
const FATAL = new Set([400, 401, 403, 404, 410]);

/**
 * A stream as an async iterator that reconnects by itself: after a dropped connection or a server
 * restart it waits, connects again with Last-Event-ID set to the last event it yielded, and the
 * gateway replays what was missed, so the consumer sees every event once, in order.
 */
export async function* openStream<K extends StreamKind>(kind: K, id: string, options: InternalOptions): AsyncIterableIterator<StreamMessage<K>> {
  let lastEventId: string | undefined;
  try {
    lastEventId = await startingPoint(kind, id, options);
  } catch (error) {
    if (options.signal?.aborted) return;
    throw error;
  }
  for await (const frame of followFrames(`/subscribe/${kind}/${encodeURIComponent(id)}`, `the ${kind} stream of ${id}`, lastEventId, options)) {
    yield { event: frame.event ?? "message", id: frame.id, data: JSON.parse(frame.data) as StreamData<K> };
  }
}

/**
 * The operators' inbox stream (GET /subscribe/inbox): a hint each time an intent's waiting items
 * (suspensions awaiting input, pending approvals) may have changed. Hints carry no id and are not
 * replayed: read the inbox again in `onConnect`, which runs on every (re)connection.
 */
export async function* openInboxStream(options: InternalOptions): AsyncIterableIterator<InboxHint> {
  for await (const frame of followFrames("/subscribe/inbox", "the inbox stream", undefined, options)) {
    if (frame.event === "inbox") yield JSON.parse(frame.data) as InboxHint;
  }
}

/**
 * The data frames of one SSE path, reconnecting by itself: after a dropped connection or a server
 * restart it waits, connects again with Last-Event-ID set to the last id it yielded (when the
 * frames carry ids), so the gateway replays what was missed.
 */
async function* followFrames(path: string, label: string, resumeFrom: string | undefined, options: InternalOptions): AsyncGenerator<SseFrame & { data: string }> {
  const signal = options.signal;
  let lastEventId = resumeFrom;
  let serverRetryMs: number | undefined;
  let failures = 0;
  const maxAttempts = options.reconnect?.maxAttempts ?? Number.POSITIVE_INFINITY;

  while (!signal?.aborted) {
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    let lost: unknown = undefined;
    try {
      const headers: Record<string, string> = { ...options.headers(), Accept: "text/event-stream" };
      if (lastEventId !== undefined) headers["Last-Event-ID"] = lastEventId;
      const res = await options.fetch(`${options.url}${path}`, { headers, signal: controller.signal });
      if (res.status !== 200 || !res.body) {
        const failure = await streamError(res, label);
        if (FATAL.has(res.status)) throw failure;
        lost = failure;
      } else {
        options.onConnect?.(lastEventId);
        for await (const frame of readFrames(res.body)) {
          if (frame.retry !== undefined) serverRetryMs = frame.retry;
          if (frame.data === undefined) continue;
          failures = 0;
          if (frame.id !== undefined) lastEventId = frame.id;
          yield frame as SseFrame & { data: string };
        }
        lost = new IntentmeshError("NETWORK_ERROR", `${label} ended`, 0);
      }
    } catch (error) {
      if (signal?.aborted) return;
      if (error instanceof IntentmeshError && FATAL.has(error.status)) throw error;
      lost = error;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      controller.abort();
    }
    failures += 1;
    if (failures > maxAttempts) throw lost instanceof Error ? lost : new IntentmeshError("NETWORK_ERROR", String(lost), 0);
    options.onDisconnect?.(lost);
    const first = options.reconnect?.minDelayMs ?? serverRetryMs ?? 1000;
    const delay = Math.min(options.reconnect?.maxDelayMs ?? 30_000, first * 2 ** Math.min(failures - 1, 10));
    try {
      await wait(delay, signal);
    } catch {
      return;
    }
  }
}

/** "now" is the current end of the log, read before connecting, so a reconnection before the first event still resumes exactly. */
async function startingPoint(kind: StreamKind, id: string, options: InternalOptions): Promise<string | undefined> {
  const from = options.from ?? "now";
  if (typeof from === "object") return from.lastEventId;
  if (from === "start") return "0";
  const { client } = options;
  const call = { signal: options.signal, agentId: options.agentId };
  const tail = { tail: "true", limit: 1 } as const;
  switch (kind) {
    case "intents":
      return String((await client.ops.intentsListEvents({ intent_id: id, query: tail }, call)).events.at(-1)?.sequence ?? 0);
    case "portfolios":
      return String((await client.ops.portfoliosListEvents({ portfolio_id: id, query: tail }, call)).events.at(-1)?.sequence ?? 0);
    case "agents":
      return String((await client.ops.agentsListEvents({ agent_id: id, query: tail }, call)).events.at(-1)?.sequence ?? 0);
    default:
      return String((await client.ops.channelsGet({ channel_id: id }, call)).message_count);
  }
}

async function streamError(res: Response, label: string): Promise<IntentmeshError> {
  let body: ErrorBody | undefined;
  try {
    body = (await res.json()) as ErrorBody;
  } catch {
    /* no JSON */
  }
  return new IntentmeshError((body?.code ?? "INVALID_RESPONSE") as IntentmeshError["code"], body?.message ?? `${label} answered ${res.status}`, res.status, body);
}

export interface SseFrame {
  event?: string;
  id?: string;
  data?: string;
  retry?: number;
}

/** Server-sent event frames from a byte stream (the WHATWG event-stream format: \n, \r\n or \r line ends, multi-line data). */
export async function* readFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let frame: SseFrame = {};
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A \r at the very end may be the first half of \r\n: wait for more.
        if (buffer[end] === "\r" && end === buffer.length - 1) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
        if (line === "") {
          if (data.length) frame.data = data.join("\n");
          if (frame.data !== undefined || frame.retry !== undefined) yield frame;
          frame = {};
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(value);
        else if (field === "event") frame.event = value;
        else if (field === "id" && !value.includes("\0")) frame.id = value;
        else if (field === "retry" && /^\d+$/.test(value)) frame.retry = Number(value);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
