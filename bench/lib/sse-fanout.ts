import http from "node:http";
import type { NatsConnection } from "@nats-io/transport-node";

export interface FanoutOptions {
  baseUrl: string;
  apiKey: string;
  intentId: string;
  subscribers: number;
  events: number;
  /** Events per second; 0 sends them one after the other, each after the previous answered. */
  rate: number;
  warmupEvents: number;
  /** How long to wait for stragglers after the last append answered. */
  drainMs: number;
  /**
   * A plain NATS subscription on the intent's event subject, which sees each event when the
   * outbox relay publishes it: splits the latency into POST -> bus and bus -> SSE frame.
   */
  probe?: { nc: NatsConnection; subject: string };
  /**
   * A channel instead of an intent: subscribers read /subscribe/channels/{id}, the load posts
   * notify messages, and frames are matched by the message's sequence (a channel frame's SSE id).
   */
  channelId?: string;
}

const subscribePath = (o: FanoutOptions) => (o.channelId ? `/api/v1/subscribe/channels/${o.channelId}` : `/api/v1/subscribe/intents/${o.intentId}`);
const postPath = (o: FanoutOptions) => (o.channelId ? `/api/v1/channels/${o.channelId}/messages` : `/api/v1/intents/${o.intentId}/events`);
const postBody = (o: FanoutOptions, marker: string, n: number) =>
  JSON.stringify(o.channelId ? { message_type: "notify", payload: { marker, n } } : { event_type: "bench.fanout", payload: { marker, n } });
/** The key a frame's `id:` carries for what a POST answered: the event id, or a message's sequence. */
const frameKey = (o: FanoutOptions, answer: { id: string; sequence: number }) => (o.channelId ? String(answer.sequence) : answer.id);

export interface FanoutResult {
  subscribers: number;
  connected: number;
  events: number;
  appended: number;
  appendFailures: number;
  expected: number;
  received: number;
  loss: number;
  duplicates: number;
  outOfOrder: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  /** Latency of the POSTs themselves. */
  appendP50: number;
  appendP99: number;
  /** Deliveries per second over the measured window (first send to last delivery). */
  deliveriesPerSecond: number;
  seconds: number;
  /** From POST sent to the event published on NATS (service, commit, outbox relay), per event. */
  toBusP50: number;
  toBusP99: number;
  /** From the event published on NATS to a subscriber's frame (gateway feed and fan-out), per delivery. */
  busToSseP50: number;
  busToSseP99: number;
}

interface Subscriber {
  req: http.ClientRequest;
  /** event id -> performance.now() at arrival of the chunk that completed the frame. */
  received: Map<string, number>;
  order: string[];
  duplicates: number;
}

/**
 * `subscribers` SSE streams on one intent, then `events` appends paced at `rate`/s. The latency
 * of a delivery is from the moment its POST was sent to the moment a subscriber received the
 * frame, matched by event id (the POST's response gives it; frames carry it in `id:`).
 */
export async function runFanout(options: FanoutOptions): Promise<FanoutResult> {
  const subscribers: Subscriber[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  // Nats-Msg-Id is intent:<id>:e<sequence>: the probe keys arrival times by sequence.
  const onBus = new Map<number, number>();
  const probeSub = options.probe?.nc.subscribe(options.probe.subject, {
    callback: (_err, msg) => {
      const at = performance.now();
      const seq = Number(/:[em](\d+)$/.exec(msg.headers?.get("Nats-Msg-Id") ?? "")?.[1]);
      if (Number.isFinite(seq) && !onBus.has(seq)) onBus.set(seq, at);
    },
  });
  try {
    // A subscriber that cannot connect is the server's failure, not the harness's: it counts as lost deliveries.
    const opened = await Promise.allSettled(Array.from({ length: options.subscribers }, () => subscribe(options)));
    for (const o of opened) if (o.status === "fulfilled") subscribers.push(o.value);
    const refused = opened.find((o): o is PromiseRejectedResult => o.status === "rejected");
    if (refused) console.warn(`  ${options.subscribers - subscribers.length} SSE subscribers could not connect: ${(refused.reason as Error).message}`);

    // Warm-up: a few appends everyone receives, so first-delivery costs are not measured.
    if (options.warmupEvents > 0) {
      const warm = await sendPaced(options, agent, options.warmupEvents, "warmup");
      await waitFor(() => subscribers.every((s) => warm.ids.every((id) => s.received.has(id))), 5000);
    }
    for (const s of subscribers) {
      s.received.clear();
      s.order.length = 0;
      s.duplicates = 0;
    }

    const windowStart = performance.now();
    const sent = await sendPaced(options, agent, options.events, "measure");
    const ids = new Set(sent.ids);
    const expected = options.events * options.subscribers;
    const count = () => subscribers.reduce((n, s) => n + [...s.received.keys()].filter((id) => ids.has(id)).length, 0);
    await waitFor(() => count() >= expected, options.drainMs);

    const latencies: number[] = [];
    const toBus: number[] = [];
    const busToSse: number[] = [];
    for (const [id, sentAt] of sent.sentAt) {
      const busAt = onBus.get(sent.sequence.get(id) ?? -1);
      if (busAt !== undefined) toBus.push(busAt - sentAt);
    }
    let duplicates = 0;
    let outOfOrder = 0;
    let lastDelivery = windowStart;
    for (const s of subscribers) {
      duplicates += s.duplicates;
      let previous = 0;
      for (const id of s.order) {
        const sequence = sent.sequence.get(id);
        if (sequence === undefined) continue;
        if (sequence <= previous) outOfOrder++;
        previous = sequence;
      }
      for (const [id, at] of s.received) {
        const sentAt = sent.sentAt.get(id);
        if (sentAt === undefined) continue;
        latencies.push(at - sentAt);
        if (at > lastDelivery) lastDelivery = at;
        const busAt = onBus.get(sent.sequence.get(id) ?? -1);
        if (busAt !== undefined) busToSse.push(at - busAt);
      }
    }
    latencies.sort((a, b) => a - b);
    toBus.sort((a, b) => a - b);
    busToSse.sort((a, b) => a - b);
    const appendLatencies = [...sent.durations].sort((a, b) => a - b);
    const seconds = (lastDelivery - windowStart) / 1000;
    return {
      subscribers: options.subscribers,
      connected: subscribers.length,
      events: options.events,
      appended: sent.ids.length,
      appendFailures: sent.failures,
      expected,
      received: latencies.length,
      loss: expected - latencies.length,
      duplicates,
      outOfOrder,
      p50: percentile(latencies, 50),
      p90: percentile(latencies, 90),
      p99: percentile(latencies, 99),
      max: latencies.length ? latencies[latencies.length - 1]! : NaN,
      mean: latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : NaN,
      appendP50: percentile(appendLatencies, 50),
      appendP99: percentile(appendLatencies, 99),
      deliveriesPerSecond: seconds > 0 ? latencies.length / seconds : 0,
      seconds,
      toBusP50: percentile(toBus, 50),
      toBusP99: percentile(toBus, 99),
      busToSseP50: percentile(busToSse, 50),
      busToSseP99: percentile(busToSse, 99),
    };
  } finally {
    probeSub?.unsubscribe();
    for (const s of subscribers) s.req.destroy();
    agent.destroy();
  }
}

/** Opens one SSE stream and resolves once the server has sent its first bytes (it is subscribed by then). */
function subscribe(options: FanoutOptions): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const url = new URL(subscribePath(options), options.baseUrl);
    const sub: Subscriber = { req: undefined as unknown as http.ClientRequest, received: new Map(), order: [], duplicates: 0 };
    let buffer = "";
    let ready = false;
    sub.req = http.get(url, { agent: false, headers: { "X-API-Key": options.apiKey, Accept: "text/event-stream" } }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`SSE subscribe answered ${res.statusCode}`));
        res.resume();
        return;
      }
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        const at = performance.now();
        if (!ready) {
          ready = true;
          resolve(sub);
        }
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const idAt = frame.startsWith("id: ") ? 0 : frame.indexOf("\nid: ");
          if (idAt === -1) continue;
          const start = idAt === 0 ? 4 : idAt + 5;
          const stop = frame.indexOf("\n", start);
          const id = frame.slice(start, stop === -1 ? undefined : stop);
          if (sub.received.has(id)) sub.duplicates++;
          else {
            sub.received.set(id, at);
            sub.order.push(id);
          }
        }
      });
    });
    sub.req.on("error", (error) => {
      if (!ready) reject(error);
    });
    sub.req.setTimeout(30_000, () => {
      if (!ready) sub.req.destroy(new Error("SSE subscribe timed out"));
    });
  });
}

interface Sent {
  ids: string[];
  sentAt: Map<string, number>;
  /** event id -> its sequence in the intent's log: frames must arrive in this order. */
  sequence: Map<string, number>;
  durations: number[];
  failures: number;
}

async function sendPaced(options: FanoutOptions, agent: http.Agent, count: number, marker: string): Promise<Sent> {
  const result: Sent = { ids: [], sentAt: new Map(), sequence: new Map(), durations: [], failures: 0 };
  const order: (string | undefined)[] = new Array(count);
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  const interval = options.rate > 0 ? 1000 / options.rate : 0;
  for (let i = 0; i < count; i++) {
    if (interval > 0) {
      const due = start + i * interval;
      const wait = due - performance.now();
      if (wait > 0.5) await sleep(wait);
    }
    const body = postBody(options, marker, i);
    const sentAt = performance.now();
    const one = post(options, agent, body).then(
      (event) => {
        result.durations.push(performance.now() - sentAt);
        const key = frameKey(options, event);
        order[i] = key;
        result.sentAt.set(key, sentAt);
        result.sequence.set(key, event.sequence);
      },
      () => {
        result.failures++;
      },
    );
    if (interval > 0) inflight.push(one);
    else await one;
  }
  await Promise.all(inflight);
  result.ids = order.filter((id): id is string => id !== undefined);
  return result;
}

function post(options: FanoutOptions, agent: http.Agent, body: string): Promise<{ id: string; sequence: number }> {
  return new Promise((resolve, reject) => {
    const url = new URL(postPath(options), options.baseUrl);
    const req = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: { "X-API-Key": options.apiKey, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => {
          if (res.statusCode !== 201) return reject(new Error(`append answered ${res.statusCode}: ${text.slice(0, 200)}`));
          try {
            resolve(JSON.parse(text) as { id: string; sequence: number });
          } catch (error) {
            reject(error as Error);
          }
        });
      },
    );
    req.on("error", reject);
    req.setTimeout(10_000, () => req.destroy(new Error("append timed out")));
    req.end(body);
  });
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await sleep(20);
}
