import { DeliverPolicy, type ConsumerMessages } from "@nats-io/jetstream";
import type { Bus } from "@intentmesh/bus";
import type { Logger } from "@intentmesh/telemetry";

/**
 * What the SSE layer needs of an event of any aggregate with a per-aggregate event log (intent,
 * portfolio, agent, ...): its id (the SSE `id:`), its type (the SSE `event:`) and its `sequence`,
 * counting that aggregate's events from 1 without gaps. The rest of the event passes through.
 */
export interface StreamEvent {
  id: string;
  sequence: number;
  event_type: string;
}

/** A live event and its SSE frame, encoded once however many subscribers it goes to. */
export interface LiveEvent {
  event: StreamEvent;
  frame: string;
}

type Listener = (live: LiveEvent) => void;

/**
 * Live events of one stream for this gateway replica: one JetStream ordered consumer, starting
 * at new messages, dispatched to the SSE subscribers of each aggregate id. Every replica has its
 * own, so any replica can serve any subscriber. Gaps (a missed or reordered message) are
 * repaired by the subscriber from the event log, keyed by the per-aggregate sequence.
 */
export class EventFeed {
  private readonly listeners = new Map<string, Set<Listener>>();
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly stream: string,
    private readonly filter: string,
    /** Which subject token holds the aggregate id: im.evt.<aggregate>.<id>.<type> -> 3. */
    private readonly idToken: number,
    private readonly logger: Logger,
    /** How an event becomes SSE text (the agent stream adds a frame for the official clients). */
    readonly encode: FrameEncoder = sseFrame,
  ) {}

  async start(): Promise<void> {
    const consumer = await this.bus.js.consumers.get(this.bus.streamName(this.stream), {
      filter_subjects: this.bus.subject(this.filter),
      deliver_policy: DeliverPolicy.New,
    });
    this.messages = await consumer.consume();
    const messages = this.messages;
    this.loop = (async () => {
      for await (const msg of messages) {
        const id = msg.subject.split(".")[this.idToken];
        const set = id ? this.listeners.get(id) : undefined;
        if (!set?.size) continue;
        let live: LiveEvent;
        try {
          const data = msg.string();
          const event = JSON.parse(data) as StreamEvent;
          live = { event, frame: this.encode(event, data) };
        } catch (err) {
          this.logger.warn({ err, subject: msg.subject }, "unreadable event skipped");
          continue;
        }
        for (const listener of set) listener(live);
      }
    })();
  }

  subscribe(id: string, listener: Listener): () => void {
    let set = this.listeners.get(id);
    if (!set) this.listeners.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (!set.size) this.listeners.delete(id);
    };
  }

  get subscriberCount(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  async stop(): Promise<void> {
    await this.messages?.close();
    await this.loop;
  }
}

/** Turns an event (and its JSON, when already encoded) into the SSE text sent for it. */
export type FrameEncoder = (event: StreamEvent, json?: string) => string;

/** One SSE frame: `event: <event_type>`, `id: <event id>`, `data: <event JSON>`. */
export function sseFrame(event: StreamEvent, json: string = JSON.stringify(event)): string {
  return `event: ${event.event_type}\nid: ${event.id}\ndata: ${json}\n\n`;
}
