import type { Request, Response } from "express";
import type { Subscription } from "@nats-io/transport-node";
import { aclCommands, type Caller, INBOX_EVENT_TYPES, INBOX_NOTICE_FILTER, InboxHint } from "@intentmesh/contracts";
import type { Bus, BusClient } from "@intentmesh/bus";
import type { Logger } from "@intentmesh/telemetry";
import { startSseResponse } from "./sse-response";

type Listener = (hint: InboxHint) => void;

/**
 * The hints of this gateway replica's inbox streams (libs/contracts inbox.ts): the intent events
 * that change waiting items, and the governance service's new-approval notices, from core NATS
 * subscriptions (the relay's JetStream publishes reach core subscribers too). No consumer, no
 * state: a hint missed while NATS reconnects is made up by the reader, who reads everything again
 * on every (re)connection of its stream.
 */
export class InboxFeed {
  private readonly listeners = new Set<Listener>();
  private subscriptions: Subscription[] = [];

  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const eventSubjects = INBOX_EVENT_TYPES.map((type) => ({ subject: `im.evt.intent.*.${type}`, cause: type }));
    for (const { subject, cause } of eventSubjects) {
      this.subscriptions.push(
        this.bus.nc.subscribe(this.bus.subject(subject), {
          // im.evt.intent.<id>.<type>: the id is the fourth token whatever the namespace's root.
          callback: (_err, msg) => this.dispatch({ intent_id: msg.subject.split(".")[3]!, cause }),
        }),
      );
    }
    this.subscriptions.push(
      this.bus.nc.subscribe(this.bus.subject(INBOX_NOTICE_FILTER), {
        callback: (_err, msg) => {
          const parsed = InboxHint.safeParse(safeJson(msg.string()));
          if (parsed.success) this.dispatch(parsed.data);
          else this.logger.warn({ subject: msg.subject }, "unreadable inbox notice skipped");
        },
      }),
    );
  }

  stop(): void {
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.subscriptions = [];
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private dispatch(hint: InboxHint): void {
    if (!this.listeners.size) return;
    for (const listener of this.listeners) listener(hint);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface InboxSseOptions {
  bus: BusClient;
  feed: InboxFeed;
  pingMs: number;
  logger: Logger;
}

/** An `inbox` frame: no SSE id, since there is nothing to resume from (the reader reads the inbox again on connecting). */
export const inboxFrame = (hint: InboxHint) => `event: inbox\ndata: ${JSON.stringify(hint)}\n\n`;

/**
 * GET /subscribe/inbox: a hint each time an intent's waiting items (suspensions awaiting input,
 * pending approvals) may have changed, for the operators who answer them (docs/console.md).
 * Only about intents the subscriber may read (RFC-0011): each hint is checked with the
 * subscriber's own caller before it is sent, so an intent it may not see is not even named.
 * Hints about one intent that arrive while its check runs are folded into that check.
 */
export function streamInbox(req: Request, res: Response, options: InboxSseOptions): void {
  const caller: Caller = req.caller!;
  let closed = false;
  const checking = new Set<string>();
  const send = (hint: InboxHint) => {
    if (checking.has(hint.intent_id)) return;
    checking.add(hint.intent_id);
    options.bus
      .request(aclCommands.check, caller, { intent_id: hint.intent_id, permission: "read" })
      .then(
        () => {
          if (!closed) res.write(inboxFrame(hint));
        },
        // Refused, gone, or the check failed: the hint is dropped (the reader reads everything again on reconnecting).
        (error: unknown) => options.logger.debug({ err: error, intentId: hint.intent_id }, "inbox hint not sent"),
      )
      .finally(() => checking.delete(hint.intent_id));
  };
  const unsubscribe = options.feed.subscribe((hint) => {
    if (!closed) send(hint);
  });

  const stopResponse = startSseResponse(res, "inbox", options.pingMs, () => closed);
  req.on("close", () => {
    if (closed) return;
    closed = true;
    stopResponse();
    unsubscribe();
    res.end();
  });
}
