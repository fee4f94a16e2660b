import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg } from "@nats-io/jetstream";
import { context } from "@opentelemetry/api";
import { claimInboxMessages, pruneInbox, type Database, type InboxTable, type Tx } from "@intentmesh/db";
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
  /**
   * Says, before any transaction, that a message has nothing to apply: it is acknowledged at once,
   * with no inbox row (idempotency guards effects, and it has none). For consumers that see every
   * event of a stream but act on few of them.
   */
  skip?: (payload: T) => boolean | Promise<boolean>;
  /**
   * `skip` for a whole batch at once (one lookup for all its messages instead of one each): for
   * each payload, in order, whether it has nothing to apply. A throw applies them all the usual way.
   */
  skipMany?: (payloads: T[]) => Promise<boolean[]>;
  /**
   * Applies, before any transaction, a message whose effect is idempotent on its own (a keyed
   * insert that leaves a row already there, an update conditional on the state it leaves): its
   * own statement commits it, with no inbox row, and a redelivery runs it again and changes
   * nothing. True: applied (acknowledged); false, or a throw: the message goes the usual way, in
   * a transaction with its inbox row, and so do the messages after it in the batch (the log order
   * is kept).
   */
  applyAlone?: (payload: T) => Promise<boolean>;
  logger: Logger;
  deliverPolicy?: DeliverPolicy;
  /** How long JetStream waits for an ack before redelivering; default 30 s. */
  ackWaitMs?: number;
  /** The most messages applied in one transaction (default 64); 1 applies each on its own. */
  batchMax?: number;
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
  // Messages queue here as they arrive and are applied in batches: under load, one transaction
  // (one commit, one fsync) carries up to BATCH_MAX of them instead of one each. JetStream's
  // max_ack_pending bounds how many can wait unacknowledged.
  const queue: JsMsg[] = [];
  let wake: (() => void) | null = null;
  let closed = false;
  const messages: ConsumerMessages = await consumer.consume({
    max_messages: 256,
    callback: (msg) => {
      queue.push(msg);
      wake?.();
    },
  });
  const done = (async () => {
    while (!closed) {
      if (queue.length === 0) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        continue;
      }
      await processBatch(queue.splice(0, options.batchMax ?? BATCH_MAX), options);
    }
  })();
  return {
    stop: async () => {
      clearInterval(pruning);
      closed = true;
      await messages.close();
      wake?.();
      await done;
      // What arrived but was not applied goes back at once to another replica (or this one, later).
      for (const msg of queue.splice(0)) msg.nak();
    },
  };
}

/** The most messages one transaction applies. */
const BATCH_MAX = 64;

/** The message id the inbox records: the publisher's Nats-Msg-Id, else the stream position. */
export function inboxMessageId(msg: JsMsg): string {
  return msg.headers?.get("Nats-Msg-Id") || `${msg.info.stream}:${msg.seq}`;
}

interface Parsed<T> {
  msg: JsMsg;
  payload: T;
}

/**
 * Applies a batch in order, in one transaction. When it fails, each message is applied on its
 * own, so one that cannot be applied now (redelivered) does not hold back the others.
 */
async function processBatch<T>(batch: JsMsg[], options: DurableConsumerOptions<T>): Promise<void> {
  const parsed: Parsed<T>[] = [];
  let alone = options.applyAlone !== undefined;
  const valid = parseAll(batch, options);
  const skippedInBatch = await skippedMany(valid, options);
  for (const [i, { msg, payload }] of valid.entries()) {
    if (skippedInBatch[i]) {
      acknowledgeSkipped(msg, options);
      continue;
    }
    if (await isSkipped(payload, msg, options)) continue;
    if (alone) {
      if (await appliedAlone(payload, msg, options)) continue;
      alone = false;
    }
    parsed.push({ msg, payload });
  }
  if (parsed.length === 1) return processOne(parsed[0]!, options);
  if (parsed.length === 0) return;
  let applied: boolean[];
  try {
    // The batch runs under the trace of its first message.
    applied = await context.with(extractTrace(parsed[0]!.msg.headers), () =>
      options.db.transaction((tx) => applyInTx(tx, parsed, options)),
    );
  } catch (error) {
    options.logger.debug({ err: error, size: parsed.length }, "a batch failed; applying its messages one by one");
    for (const one of parsed) await processOne(one, options);
    return;
  }
  for (const [i, { msg }] of parsed.entries()) await acknowledge(msg, applied[i]!, options);
}

/** The batch's messages that parse; the others are poison, logged and terminated. */
function parseAll<T>(batch: JsMsg[], options: DurableConsumerOptions<T>): Parsed<T>[] {
  const valid: Parsed<T>[] = [];
  for (const msg of batch) {
    try {
      valid.push({ msg, payload: options.parse(msg.json()) });
    } catch (error) {
      options.logger.error({ err: error, subject: msg.subject, seq: msg.seq }, "poison message terminated");
      metrics.consumerMessages.inc({ durable: options.durable, outcome: "terminated" });
      msg.term();
    }
  }
  return valid;
}

/** The consumer's `skipMany` over the batch; none skipped when it has none or it fails. */
async function skippedMany<T>(valid: Parsed<T>[], options: DurableConsumerOptions<T>): Promise<boolean[]> {
  if (!options.skipMany || valid.length === 0) return [];
  try {
    return await options.skipMany(valid.map(({ payload }) => payload));
  } catch (error) {
    // Unsure whether they matter: apply them the usual way.
    options.logger.warn({ err: error, size: valid.length }, "skip check failed; applying the messages");
    return [];
  }
}

function acknowledgeSkipped<T>(msg: JsMsg, options: DurableConsumerOptions<T>): void {
  metrics.consumerMessages.inc({ durable: options.durable, outcome: "skipped" });
  msg.ack();
}

/** A message the consumer's `skip` says has nothing to apply is acknowledged without a transaction. */
async function isSkipped<T>(payload: T, msg: JsMsg, options: DurableConsumerOptions<T>): Promise<boolean> {
  if (!options.skip) return false;
  let skipped: boolean;
  try {
    skipped = await options.skip(payload);
  } catch (error) {
    // Unsure whether it matters: apply it the usual way.
    options.logger.warn({ err: error, subject: msg.subject, seq: msg.seq }, "skip check failed; applying the message");
    return false;
  }
  if (!skipped) return false;
  acknowledgeSkipped(msg, options);
  return true;
}

/** A message applied by the consumer's `applyAlone`, then acknowledged; false when it declined or failed. */
async function appliedAlone<T>(payload: T, msg: JsMsg, options: DurableConsumerOptions<T>): Promise<boolean> {
  let applied: boolean;
  try {
    applied = await context.with(extractTrace(msg.headers), () => options.applyAlone!(payload));
  } catch (error) {
    options.logger.warn({ err: error, subject: msg.subject, seq: msg.seq }, "applying alone failed; applying the message in a transaction");
    return false;
  }
  if (applied) await acknowledge(msg, true, options);
  return applied;
}

async function processOne<T>(one: Parsed<T>, options: DurableConsumerOptions<T>): Promise<void> {
  const { msg } = one;
  let applied: boolean;
  try {
    [applied] = (await context.with(extractTrace(msg.headers), () => options.db.transaction((tx) => applyInTx(tx, [one], options)))) as [boolean];
  } catch (error) {
    options.logger.warn({ err: error, subject: msg.subject, seq: msg.seq }, "message handling failed; redelivering");
    metrics.consumerMessages.inc({ durable: options.durable, outcome: "redelivered" });
    msg.nak(1000);
    return;
  }
  await acknowledge(msg, applied, options);
}

/**
 * Records the messages in the inbox with one statement and applies, in order, those it had not
 * seen yet; whether each was applied. A message delivered twice within one batch applies once.
 */
async function applyInTx<T>(tx: Tx, messages: Parsed<T>[], options: DurableConsumerOptions<T>): Promise<boolean[]> {
  const unseen = await claimInboxMessages(tx, options.inbox, options.durable, messages.map(({ msg }) => inboxMessageId(msg)));
  const applied: boolean[] = [];
  for (const { msg, payload } of messages) {
    const fresh = unseen.delete(inboxMessageId(msg));
    if (fresh) await options.handle(tx, payload, msg);
    applied.push(fresh);
  }
  return applied;
}

/** After the commit: the test seam, then the ack (a throw in the seam leaves it unacked, as a crash would). */
async function acknowledge<T>(msg: JsMsg, applied: boolean, options: DurableConsumerOptions<T>): Promise<void> {
  metrics.consumerMessages.inc({ durable: options.durable, outcome: applied ? "applied" : "duplicate" });
  try {
    await options.afterCommit?.(msg);
    msg.ack();
  } catch (error) {
    options.logger.warn({ err: error, subject: msg.subject, seq: msg.seq }, "after-commit step failed; redelivering");
    metrics.consumerMessages.inc({ durable: options.durable, outcome: "redelivered" });
    msg.nak(1000);
  }
}
