import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg } from "@nats-io/jetstream";
import { context } from "@opentelemetry/api";
import { claimInboxMessage, pruneInbox, type Database, type InboxTable, type Tx } from "@intentmesh/db";
import { metrics, type Logger } from "@intentmesh/telemetry";
import type { Bus } from "./connection";
import { extractTrace } from "./trace";

/** As long as a stream keeps a message (see streams.ts), so a redelivery always finds its inbox row. */
const INBOX_RETENTION_MS = 8 * 24 * 3600 * 1000;

export interface DurableConsumerOptions<T> {
  stream: string;
  /** Durable name shared by every replica of the consuming service: each message goes to one of them. */
  durable: string;
  filterSubject: string;
  db: Database;
  inbox: InboxTable;
  /** Parses and validates the payload; a throw here is a poison message, logged and terminated. */
  parse: (data: unknown) => T;
  /** Applies the effects inside the transaction that also records the message in the inbox. */
  handle: (tx: Tx, payload: T, msg: JsMsg) => Promise<void>;
  logger: Logger;
  deliverPolicy?: DeliverPolicy;
  /** How long JetStream waits for an ack before redelivering; default 30 s. */
  ackWaitMs?: number;
  /** Test seam: runs after the commit and before the ack; a throw leaves the message unacked, as a crash would. */
  afterCommit?: (msg: JsMsg) => Promise<void> | void;
}

/**
 * An idempotent JetStream consumer. Effects and the inbox row commit together, then the message
 * is acked. A crash before the commit redelivers and applies once; a crash after the commit and
 * before the ack redelivers, finds the inbox row and applies nothing.
 */
export async function startDurableConsumer<T>(bus: Bus, options: DurableConsumerOptions<T>): Promise<{ stop(): Promise<void> }> {
  const stream = bus.streamName(options.stream);
  const { durable } = options;
  try {
    await bus.jsm.consumers.info(stream, durable);
  } catch {
    await bus.jsm.consumers.add(stream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: options.deliverPolicy ?? DeliverPolicy.All,
      filter_subject: bus.subject(options.filterSubject),
      ack_wait: (options.ackWaitMs ?? 30_000) * 1_000_000,
      max_deliver: -1,
    });
  }
  const consumer = await bus.js.consumers.get(stream, durable);
  // Inbox rows outlive any redelivery: keep them as long as the stream keeps messages, then prune.
  const pruning = setInterval(() => {
    void pruneInbox(options.db, options.inbox, new Date(Date.now() - INBOX_RETENTION_MS)).catch((err: unknown) =>
      options.logger.warn({ err }, "inbox pruning failed; next hour retries"),
    );
  }, 3_600_000);
  pruning.unref();
  const messages: ConsumerMessages = await consumer.consume({ max_messages: 256 });
  const done = (async () => {
    for await (const msg of messages) {
      await context.with(extractTrace(msg.headers), () => processMessage(msg, options));
    }
  })();
  return {
    stop: async () => {
      clearInterval(pruning);
      await messages.close();
      await done;
    },
  };
}

/** The message id the inbox records: the publisher's Nats-Msg-Id, else the stream position. */
export function inboxMessageId(msg: JsMsg): string {
  return msg.headers?.get("Nats-Msg-Id") || `${msg.info.stream}:${msg.seq}`;
}

async function processMessage<T>(msg: JsMsg, options: DurableConsumerOptions<T>): Promise<void> {
  let payload: T;
  try {
    payload = options.parse(msg.json());
  } catch (error) {
    options.logger.error({ err: error, subject: msg.subject, seq: msg.seq }, "poison message terminated");
    metrics.consumerMessages.inc({ durable: options.durable, outcome: "terminated" });
    msg.term();
    return;
  }
  try {
    const applied = await options.db.transaction(async (tx) => {
      if (!(await claimInboxMessage(tx, options.inbox, options.durable, inboxMessageId(msg)))) return false;
      await options.handle(tx, payload, msg);
      return true;
    });
    metrics.consumerMessages.inc({ durable: options.durable, outcome: applied ? "applied" : "duplicate" });
    await options.afterCommit?.(msg);
    msg.ack();
  } catch (error) {
    options.logger.warn({ err: error, subject: msg.subject, seq: msg.seq }, "message handling failed; redelivering");
    metrics.consumerMessages.inc({ durable: options.durable, outcome: "redelivered" });
    msg.nak(1000);
  }
}
