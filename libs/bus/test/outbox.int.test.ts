import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { openDatabase, rowsOf, type DatabaseHandle, type Tx } from "@intentmesh/db";
import { createLogger } from "@intentmesh/telemetry";
import { connectBus, type Bus } from "../src/connection";
import { enqueue, OutboxRelay } from "../src/outbox";
import { ensureStream } from "../src/streams";
import { startDurableConsumer } from "../src/consumer";
import { createTestDatabase, testNamespace } from "../../../test/support/backends";
import { createRelayTestTables, TEST_STREAM, testInbox, testOutbox } from "./fixtures/relay-schema";

const here = path.dirname(fileURLToPath(import.meta.url));
const logger = createLogger("bus-test", "silent");
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let database: DatabaseHandle;
let bus: Bus;
let namespace: string;

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  database = await openDatabase({ url: testDb.url });
  await createRelayTestTables(database.db);
  namespace = testNamespace();
  bus = await connectBus(inject("natsUrl"), "bus-test", namespace);
  await ensureStream(bus, TEST_STREAM);
});

afterAll(async () => {
  await bus?.jsm.streams.delete(bus.streamName(TEST_STREAM.name)).catch(() => undefined);
  await bus?.close();
  await database?.close();
  await testDb?.drop();
});

/** Every message in the stream on a subject, read from the start by a throwaway consumer. */
async function readStream(subjectFilter: string): Promise<{ msgId: string; data: unknown }[]> {
  const stream = bus.streamName(TEST_STREAM.name);
  const info = await bus.jsm.streams.info(stream);
  const consumer = await bus.js.consumers.get(stream, { filter_subjects: bus.subject(subjectFilter), deliver_policy: DeliverPolicy.All });
  const out: { msgId: string; data: unknown }[] = [];
  if (info.state.messages === 0) return out;
  const batch = await consumer.fetch({ max_messages: 1000, expires: 1000 });
  for await (const msg of batch) {
    out.push({ msgId: msg.headers?.get("Nats-Msg-Id") ?? "", data: msg.json() });
    if (msg.info.pending === 0) break;
  }
  return out;
}

describe("transactional outbox relay", () => {
  it("publishes in commit order and deletes the rows it published", async () => {
    await database.db.transaction((tx) =>
      enqueue(tx, testOutbox, [1, 2, 3].map((n) => ({ subject: `im.evt.bustest.order.e${n}`, msgId: `order:${n}`, payload: { n } }))),
    );
    const relay = new OutboxRelay(database.db, testOutbox, bus, logger, { name: "bus-test" });
    expect(await relay.drainOnce()).toBe(3);
    expect(await relay.backlog()).toBe(0);
    // Claimed rows are deleted, not kept marked: nothing of them is left for a janitor.
    const left = rowsOf<{ n: number }>(await database.db.execute(sql`select count(*)::int as n from ${testOutbox} where msg_id like 'order:%'`));
    expect(left[0]!.n).toBe(0);
    const seen = await readStream("im.evt.bustest.order.>");
    expect(seen.map((m) => m.msgId)).toEqual(["order:1", "order:2", "order:3"]);
  });

  it("delivers exactly once when the relay process is killed between publish and mark", async () => {
    await database.db.transaction((tx) =>
      enqueue(tx, testOutbox, [1, 2, 3, 4, 5].map((n) => ({ subject: `im.evt.bustest.crash.e${n}`, msgId: `crash:${n}`, payload: { n } }))),
    );
    const child = spawnSync(process.execPath, ["--import", "tsx", path.join(here, "fixtures/crashing-relay.ts")], {
      env: { ...process.env, DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(child.stdout).toContain("published");
    expect(child.signal).toBe("SIGKILL");

    // The crash rolled the marking back: all five rows still wait, and JetStream already holds them.
    const relay = new OutboxRelay(database.db, testOutbox, bus, logger, { name: "bus-test" });
    expect(await relay.backlog()).toBe(5);
    expect((await readStream("im.evt.bustest.crash.>")).length).toBe(5);

    // The next relay republishes the same message ids; JetStream drops them as duplicates.
    expect(await relay.drainOnce()).toBe(5);
    expect(await relay.backlog()).toBe(0);
    const seen = await readStream("im.evt.bustest.crash.>");
    expect(seen.map((m) => m.msgId)).toEqual(["crash:1", "crash:2", "crash:3", "crash:4", "crash:5"]);
  });

  it("skips a message larger than the bus carries and publishes the ones after it, instead of failing every pass", async () => {
    const huge = "z".repeat((bus.nc.info?.max_payload ?? 1024 * 1024) + 1);
    await database.db.transaction((tx) =>
      enqueue(tx, testOutbox, [
        { subject: "im.evt.bustest.big.e1", msgId: "big:1", payload: { n: 1 } },
        { subject: "im.evt.bustest.big.e2", msgId: "big:2", payload: { huge } },
        { subject: "im.evt.bustest.big.e3", msgId: "big:3", payload: { n: 3 } },
      ]),
    );
    const relay = new OutboxRelay(database.db, testOutbox, bus, logger, { name: "bus-test" });
    expect(await relay.drainOnce()).toBe(3);
    expect(await relay.backlog()).toBe(0);
    expect((await readStream("im.evt.bustest.big.>")).map((m) => m.msgId)).toEqual(["big:1", "big:3"]);
  });

  it("vacuums its outbox once it has claimed enough rows, so claims do not scan the index entries of deleted rows", async () => {
    const vacuums = async () =>
      rowsOf<{ n: number }>(await database.db.execute(sql`select vacuum_count::int as n from pg_stat_user_tables where relid = 'bus_test.outbox'::regclass`))[0]!.n;
    const before = await vacuums();
    await database.db.transaction((tx) =>
      enqueue(tx, testOutbox, [1, 2, 3, 4, 5, 6].map((n) => ({ subject: `im.evt.bustest.vacuum.e${n}`, msgId: `vacuum:${n}`, payload: { n } }))),
    );
    const relay = new OutboxRelay(database.db, testOutbox, bus, logger, { name: "bus-test", vacuumAfterRows: 5 });
    relay.start();
    try {
      await vi.waitFor(async () => expect(await vacuums()).toBeGreaterThan(before), { timeout: 10_000 });
      expect(await relay.backlog()).toBe(0);
    } finally {
      await relay.stop();
    }
  });

  it("lets only one relay of a service publish at a time", async () => {
    await database.db.transaction((tx) => enqueue(tx, testOutbox, [{ subject: "im.evt.bustest.lock.e1", msgId: "lock:1", payload: {} }]));
    const holder = new OutboxRelay(database.db, testOutbox, bus, logger, { name: "bus-test" });
    const contender = new OutboxRelay(database.db, testOutbox, bus, logger, { name: "bus-test" });
    let contenderResult: number | "locked" | undefined;
    const held = new OutboxRelay(database.db, testOutbox, bus, logger, {
      name: "bus-test",
      afterPublish: async () => {
        contenderResult = await contender.drainOnce();
      },
    });
    expect(await held.drainOnce()).toBe(1);
    expect(contenderResult).toBe("locked");
    expect(await holder.backlog()).toBe(0);
  });
});

/**
 * `count` messages `<topic>:000`, `<topic>:001`, ... on im.evt.bustest.<topic>.e<i>, each carrying
 * its name, enqueued in one transaction (with `alsoInTransaction`) and published; answers the names.
 */
async function publishNamed(topic: string, count: number, alsoInTransaction?: (tx: Tx, names: string[]) => Promise<void>): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${topic}:${String(i).padStart(3, "0")}`);
  await database.db.transaction(async (tx) => {
    await enqueue(tx, testOutbox, names.map((message, i) => ({ subject: `im.evt.bustest.${topic}.e${i}`, msgId: message, payload: { message } })));
    await alsoInTransaction?.(tx, names);
  });
  await new OutboxRelay(database.db, testOutbox, bus, logger, { name: "bus-test" }).drainOnce();
  return names;
}

/** Waits until `check` holds, or `timeoutMs` has passed (the test's assertions then tell what did not happen). */
async function until(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** What every test consumer here shares: durable `<topic>-test` on im.evt.bustest.<topic>.>, this suite's inbox, payloads `{message}`. */
function consumerOf(topic: string) {
  return {
    stream: TEST_STREAM.name,
    durable: `${topic}-test`,
    filterSubject: `im.evt.bustest.${topic}.>`,
    db: database.db,
    inbox: testInbox,
    logger,
    parse: (data: unknown) => data as { message: string },
  };
}

/**
 * A durable consumer of im.evt.bustest.<topic>.> (consumerOf) whose effect is a row in batch_effects (with the
 * transaction that wrote it), run until `count` messages are acked (or 15 s); how many were.
 * `beforeApply` may throw to fail a message.
 */
async function recordEffectsUntilAcked(topic: string, count: number, beforeApply: (message: string) => void = () => {}): Promise<number> {
  let acked = 0;
  const consumer = await startDurableConsumer(bus, {
    ...consumerOf(topic),
    handle: async (tx, payload) => {
      beforeApply(payload.message);
      await tx.execute(sql`insert into bus_test.batch_effects (message, txid) values (${payload.message}, txid_current())`);
    },
    afterCommit: () => {
      acked += 1;
    },
  });
  await until(() => acked >= count);
  await consumer.stop();
  return acked;
}

describe("idempotent durable consumer", () => {
  it("applies a message once when the consumer crashes after its commit and before its ack", async () => {
    const subject = "im.evt.bustest.idem.e1";
    await database.db.transaction((tx) => enqueue(tx, testOutbox, [{ subject, msgId: "idem:1", payload: { message: "idem:1" } }]));
    await new OutboxRelay(database.db, testOutbox, bus, logger, { name: "bus-test" }).drainOnce();

    let deliveries = 0;
    const consumer = await startDurableConsumer(bus, {
      ...consumerOf("idem"),
      ackWaitMs: 500,
      handle: async (tx, payload) => {
        await tx.execute(
          sql`insert into bus_test.effects (message, applied) values (${payload.message}, 1)
              on conflict (message) do update set applied = bus_test.effects.applied + 1`,
        );
      },
      afterCommit: () => {
        deliveries += 1;
        if (deliveries === 1) throw new Error("simulated crash after commit, before ack");
      },
    });
    await until(() => deliveries >= 2, 10_000);
    await consumer.stop();

    expect(deliveries).toBe(2);
    const [effect] = rowsOf<{ applied: number }>(await database.db.execute(sql`select applied from bus_test.effects where message = 'idem:1'`));
    expect(effect?.applied).toBe(1);
    const inbox = rowsOf<{ n: number }>(await database.db.execute(sql`select count(*)::int as n from bus_test.inbox where consumer = 'idem-test'`));
    expect(inbox[0]?.n).toBe(1);
    const info = await bus.jsm.consumers.info(bus.streamName(TEST_STREAM.name), "idem-test");
    expect(info.config.ack_policy).toBe(AckPolicy.Explicit);
  });

  it("applies a backlog in batches, in order, once each; a message that fails sends its batch one by one and does not hold back the rest", async () => {
    const count = 150;
    const names = await publishNamed("batch", count);

    const failing = names[70]!;
    let failures = 0;
    const acked = await recordEffectsUntilAcked("batch", count, (message) => {
      if (message === failing && failures === 0) {
        failures += 1;
        throw new Error("a transient failure of one message");
      }
    });

    const rows = rowsOf<{ message: string; txid: string }>(await database.db.execute(sql`select message, txid::text from bus_test.batch_effects order by position`));
    // Every message once (a duplicate would violate the primary key and never be acked).
    expect(rows.map((r) => r.message).sort()).toEqual(names);
    expect(acked).toBe(count);
    expect(failures).toBe(1);
    // In order, except the one that failed, which came back later (after its redelivery delay).
    const withoutFailing = rows.map((r) => r.message).filter((m) => m !== failing);
    expect(withoutFailing).toEqual(names.filter((m) => m !== failing));
    // Batched: a backlog goes in transactions of many messages (the batch of the failing one went one by one).
    const perTransaction = new Map<string, number>();
    for (const r of rows) perTransaction.set(r.txid, (perTransaction.get(r.txid) ?? 0) + 1);
    expect(Math.max(...perTransaction.values())).toBeGreaterThanOrEqual(32);
    expect(perTransaction.size).toBeLessThan(count / 2);
  });

  it("acknowledges the messages its skip check rejects with no transaction and no inbox row, and applies the others once", async () => {
    const count = 40;
    const names = await publishNamed("skip", count);
    const wanted = new Set(names.filter((_, i) => i % 4 === 0));

    let applied = 0;
    let skippedChecks = 0;
    const consumer = await startDurableConsumer(bus, {
      ...consumerOf("skip"),
      skip: async (payload) => {
        skippedChecks += 1;
        return !wanted.has(payload.message);
      },
      handle: async (tx, payload) => {
        await tx.execute(sql`insert into bus_test.batch_effects (message, txid) values (${payload.message}, txid_current())`);
      },
      afterCommit: () => {
        applied += 1;
      },
    });
    await until(() => applied >= wanted.size && skippedChecks >= count);
    await consumer.stop();

    const rows = rowsOf<{ message: string }>(await database.db.execute(sql`select message from bus_test.batch_effects where message like 'skip:%' order by position`));
    expect(rows.map((r) => r.message)).toEqual([...wanted]);
    const inbox = rowsOf<{ message_id: string }>(await database.db.execute(sql`select message_id from bus_test.inbox where consumer = 'skip-test' order by message_id`));
    expect(inbox.map((r) => r.message_id)).toEqual([...wanted].sort());
    // Every message was acknowledged: nothing is left pending or redelivered.
    const info = await bus.jsm.consumers.info(bus.streamName(TEST_STREAM.name), "skip-test");
    expect(info.num_ack_pending + info.num_pending).toBe(0);
  });

  it("skipMany checks a batch with one call: it acknowledges what it rejects with no inbox row, applies the others once, and a failing check applies its batch the usual way", async () => {
    const count = 40;
    const names = await publishNamed("many", count);
    const wanted = new Set(names.filter((_, i) => i % 4 === 0));

    const calls: number[] = [];
    const handled: string[] = [];
    let acknowledged = 0;
    const consumer = await startDurableConsumer(bus, {
      ...consumerOf("many"),
      batchMax: 10,
      skipMany: async (payloads) => {
        calls.push(payloads.length);
        // The first batch's check fails: its messages all go through the transaction.
        if (calls.length === 1) throw new Error("lookup failed");
        return payloads.map((payload) => !wanted.has(payload.message));
      },
      handle: async (tx, payload) => {
        handled.push(payload.message);
        await tx.execute(sql`insert into bus_test.batch_effects (message, txid) values (${payload.message}, txid_current())`);
      },
      afterCommit: () => {
        acknowledged += 1;
      },
    });
    await until(async () => {
      const info = await bus.jsm.consumers.info(bus.streamName(TEST_STREAM.name), "many-test");
      return info.num_ack_pending + info.num_pending === 0 && info.delivered.consumer_seq >= count;
    });
    await consumer.stop();

    // One call per batch, never one per message.
    expect(calls.reduce((a, b) => a + b, 0)).toBe(count);
    expect(calls.length).toBeLessThan(count);
    const first = new Set(names.slice(0, calls[0]));
    const applied = names.filter((m) => wanted.has(m) || first.has(m));
    const rows = rowsOf<{ message: string }>(await database.db.execute(sql`select message from bus_test.batch_effects where message like 'many:%' order by position`));
    expect(rows.map((r) => r.message)).toEqual(applied);
    expect(handled).toEqual(applied);
    expect(acknowledged).toBe(applied.length);
    const inbox = rowsOf<{ message_id: string }>(await database.db.execute(sql`select message_id from bus_test.inbox where consumer = 'many-test' order by message_id`));
    expect(inbox.map((r) => r.message_id)).toEqual(applied);
  });

  it("applies alone, with no transaction or inbox row, what applyAlone takes; from the first it declines or fails on, the rest of the batch goes through the transaction, in order", async () => {
    const count = 30;
    const names = await publishNamed("alone", count);
    // Declined once (then taken), and failing once: each sends its batch's rest the usual way.
    const declined = names[7]!;
    const failing = names[19]!;
    const refusedOnce = new Set([declined, failing]);

    let acknowledged = 0;
    const consumer = await startDurableConsumer(bus, {
      ...consumerOf("alone"),
      batchMax: 10,
      applyAlone: async (payload) => {
        if (refusedOnce.delete(payload.message)) {
          if (payload.message === failing) throw new Error("not now");
          return false;
        }
        await database.db.execute(sql`insert into bus_test.batch_effects (message, txid) values (${payload.message}, txid_current())`);
        return true;
      },
      handle: async (tx, payload) => {
        await tx.execute(sql`insert into bus_test.batch_effects (message, txid) values (${payload.message}, txid_current())`);
      },
      afterCommit: () => {
        acknowledged += 1;
      },
    });
    await until(() => acknowledged >= count);
    await consumer.stop();

    // Every message applied once, in the log's order.
    const rows = rowsOf<{ message: string }>(await database.db.execute(sql`select message from bus_test.batch_effects where message like 'alone:%' order by position`));
    expect(rows.map((r) => r.message)).toEqual(names);
    // Inbox rows only for those applied in a transaction: the declined and the failing one, and none before them in their batches.
    const inbox = rowsOf<{ message_id: string }>(await database.db.execute(sql`select message_id from bus_test.inbox where consumer = 'alone-test' order by message_id`));
    expect(inbox.map((r) => r.message_id)).toContain(declined);
    expect(inbox.map((r) => r.message_id)).toContain(failing);
    expect(inbox.map((r) => r.message_id)).not.toContain(names[0]);
    expect(inbox.length).toBeLessThan(count / 2);
    const info = await bus.jsm.consumers.info(bus.streamName(TEST_STREAM.name), "alone-test");
    expect(info.num_ack_pending + info.num_pending).toBe(0);
  });

  it("skips, within a batch, the messages its inbox already holds (applied before a crash) and applies the others once", async () => {
    const count = 60;
    const alreadyApplied = new Set<string>();
    const names = await publishNamed("seen", count, async (tx, named) => {
      // As if an earlier run committed these and crashed before acking them.
      for (const id of named.filter((_, i) => i % 3 === 0)) {
        alreadyApplied.add(id);
        await tx.insert(testInbox).values({ consumer: "seen-test", messageId: id });
      }
    });

    const acked = await recordEffectsUntilAcked("seen", count);

    const rows = rowsOf<{ message: string; txid: string }>(
      await database.db.execute(sql`select message, txid::text from bus_test.batch_effects where message like 'seen:%' order by position`),
    );
    expect(acked).toBe(count);
    expect(rows.map((r) => r.message)).toEqual(names.filter((m) => !alreadyApplied.has(m)));
    expect(new Set(rows.map((r) => r.txid)).size).toBeLessThan(rows.length / 2);
    const inbox = rowsOf<{ n: number }>(await database.db.execute(sql`select count(*)::int as n from bus_test.inbox where consumer = 'seen-test'`));
    expect(inbox[0]?.n).toBe(count);
  });
});
