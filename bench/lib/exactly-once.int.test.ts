import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import pg from "pg";
import { connectBus, ensureStream, type Bus } from "@intentmesh/bus";
import { channelMessageSubject, channelStream } from "@intentmesh/contracts";
import { createTestDatabase, testNamespace } from "../../test/support/backends";
import { verifyWrites } from "./exactly-once";

// The check against a real table and a real stream: post_message's source (channels.messages and
// IM_CHANNELS). The table here has no primary key so that a row can be stored twice.
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let db: pg.Pool;
let bus: Bus;

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  db = new pg.Pool({ connectionString: testDb.url, max: 2 });
  await db.query("create schema channels; create table channels.messages (id uuid not null)");
  bus = await connectBus(inject("natsUrl"), "exactly-once-test", testNamespace());
  await ensureStream(bus, channelStream);
});

afterAll(async () => {
  await bus?.jsm.streams.delete(bus.streamName(channelStream.name)).catch(() => undefined);
  await bus?.close();
  await db?.end();
  await testDb?.drop();
});

async function store(...ids: string[]) {
  for (const id of ids) await db.query("insert into channels.messages (id) values ($1)", [id]);
}

/** Each call is a distinct publish (its own Nats-Msg-Id), as a relay that lost its dedupe would make. */
async function publish(channelId: string, ...ids: string[]) {
  for (const id of ids) await bus.js.publish(bus.subject(channelMessageSubject(channelId)), JSON.stringify({ id, event_type: "channel_message" }), { msgID: randomUUID() });
}

describe("verifyWrites", () => {
  it("reports a write missing from the database, one stored twice, one never published and one published twice", async () => {
    const channel = randomUUID();
    const [once, storedTwice, notStored, publishedTwice] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await store(once, storedTwice, storedTwice, publishedTwice);
    await publish(channel, once, notStored, publishedTwice, publishedTwice);
    // storedTwice is never published; notStored is published but never stored.

    const [report] = await verifyWrites(db, bus, { post_message: [once, storedTwice, notStored, publishedTwice] });
    expect(report).toMatchObject({
      scenario: "post_message",
      acknowledged: 4,
      ok: false,
      missingInDatabase: [notStored],
      duplicatedInDatabase: [`${storedTwice} x2`],
      missingInStream: [storedTwice],
      duplicatedInStream: [`${publishedTwice} x2`],
    });

    const [clean] = await verifyWrites(db, bus, { post_message: [once] });
    expect(clean).toMatchObject({ acknowledged: 1, ok: true });
  });
});
