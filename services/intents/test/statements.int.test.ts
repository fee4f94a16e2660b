import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { encodeKeysetCursor, intentEventMsgId, LIMITS, intentsCommands as commands, streams, type Intent } from "@intentmesh/contracts";
import { agentCaller, startTestCluster, type TestCluster } from "../../../test/support/cluster";
import { readStream } from "../../../test/support/service-process";
import { commitChangeStatement, rawToIntent, selectIntent, selectIntentForWrite, selectIntentJson } from "../src/kernel/statements";

let cluster: TestCluster;
const agent = agentCaller;

beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe("single-statement writes", () => {
  it("refuse a state write checked against leases that changed before it committed", async () => {
    const intent = await cluster.client.request(commands.create, agent("a"), { body: { title: "epoch" } });
    const read = await selectIntentForWrite(cluster.intents.ctx.query, intent.id, "writer");
    expect(read?.leases).toEqual([]);
    // Another agent takes a lease on the part the writer is about to write.
    await cluster.client.request(commands.acquireLease, agent("holder"), { intent_id: intent.id, if_match: null, body: { scope: "plan" } });
    const stale = await commitChangeStatement(
      cluster.intents.ctx.query,
      intent.id,
      { version: 1, leaseEpoch: read!.intent.lease_epoch },
      { state: { plan: "overwritten" } },
      { eventType: "state_patched", actor: "writer", payload: {} },
      new Date(),
    );
    expect(stale).toBeUndefined();
    // Going through the handler, the write is checked again and meets the new lease.
    const error = await cluster.client
      .request(commands.patchState, agent("writer"), { intent_id: intent.id, if_match: 1, patches: [{ op: "set", path: "plan", value: "x" }] })
      .catch((e: { code: string }) => e);
    expect((error as { code: string }).code).toBe("LEASE_HELD");
  });

  it("publish each event under the catalogue's message id with the event's exact fields", async () => {
    const intent = await cluster.client.request(commands.create, agent("a"), { body: { title: "ids" } });
    await cluster.client.request(commands.appendEvent, agent("a"), { intent_id: intent.id, if_match: null, body: { event_type: "note", payload: { n: 1 } } });
    await cluster.client.request(commands.patchState, agent("a"), { intent_id: intent.id, if_match: 1, patches: [{ op: "set", path: "x", value: 1 }] });
    // What the relay published from the outbox rows (it deletes each row it publishes).
    const published = async () =>
      (await readStream(cluster.bus, cluster.bus.streamName(streams.intents.name), (msg) => ({ msgId: msg.headers?.get("Nats-Msg-Id") ?? "", event: msg.json() }))).filter((m) =>
        m.msgId.startsWith(`intent:${intent.id}:`),
      );
    await vi.waitFor(async () => expect(await published()).toHaveLength(3), { timeout: 10_000 });
    const messages = await published();
    expect(messages.map((m) => m.msgId)).toEqual([1, 2, 3].map((n) => intentEventMsgId(intent.id, n)));
    const page = await cluster.client.request(commands.listEvents, agent("a"), { intent_id: intent.id, query: {} });
    expect(messages.map((m) => m.event)).toEqual(page.events);
  });
});

/**
 * An intent whose JSON has what could print differently: quotes, non-ASCII, a newline, -0, 1e21,
 * null, an empty object, a parent and a dependency. `createdBy` lets a list find only these intents.
 */
async function createFixture(createdBy = "a") {
  const parent = await cluster.client.request(commands.create, agent("a"), { body: { title: "parent", created_by: createdBy } });
  const dependency = await cluster.client.request(commands.create, agent("a"), { body: { title: "dependency", created_by: createdBy } });
  const intent = await cluster.client.request(commands.create, agent("a"), {
    body: {
      title: "wire \"json\" \u00e9",
      created_by: createdBy,
      constraints: { deadline: "2027-01-01T00:00:00Z", tags: ["a", "b"], weight: 1.5 },
      state: { plan: { steps: [1, 2.25, -0, 1e21, null, true], note: "line\nbreak" }, empty: {} },
      parent_intent_id: parent.id,
      depends_on: [dependency.id],
    },
  });
  return { parent, dependency, intent };
}

/** The intent as the service served it before its replies were PostgreSQL's JSON: the row mapped in JavaScript. */
async function mappedInJavaScript(id: string) {
  const row = await selectIntent(cluster.intents.ctx.query, id);
  return rawToIntent(row!);
}

/** A served intent's JSON is the mapped intent: the same value, the same fields in the same order. */
function expectSameIntent(json: string, expected: Intent) {
  expect(JSON.parse(json)).toEqual(expected);
  expect(Object.keys(JSON.parse(json))).toEqual(Object.keys(expected));
}

const bodyOf = (reply: { body: Uint8Array }) => new TextDecoder().decode(reply.body);

describe("the intent as PostgreSQL writes it (GET /intents/{id})", () => {
  it("is the same value as the row mapped in JavaScript: every field, timestamps, nulls, nested state, a parent and dependencies", async () => {
    const { parent, intent } = await createFixture();
    for (const id of [intent.id, parent.id]) {
      const served = await selectIntentJson(cluster.intents.ctx.query, id);
      const row = await selectIntent(cluster.intents.ctx.query, id);
      expectSameIntent(served!.json, rawToIntent(row!));
      expect(served!.version).toBe(row!.version);
      expect(served!.acl_policy).toBe(row!.acl_policy ?? null);
    }
    // Through the command, as the gateway gets it: the same intent the create answered, and its version.
    const got = await cluster.client.requestRaw(commands.get, agent("a"), { intent_id: intent.id });
    expect(JSON.parse(bodyOf(got))).toEqual(intent);
    expect(got.version).toBe(intent.version);
  });
});

describe("the intent as PostgreSQL writes it (the answers of state and status writes)", () => {
  it("is the written intent mapped in JavaScript, with its version", async () => {
    const { intent } = await createFixture();
    const written = { written: { quote: "\"", text: "\u00e9\n", numbers: [-0, 1e21, 0.1], nothing: null, empty: {} } };
    // The statement's answer.
    const answer = await commitChangeStatement(
      cluster.intents.ctx.query,
      intent.id,
      { version: 1, leaseEpoch: null },
      { state: { ...intent.state, ...written } },
      { eventType: "state_patched", actor: "a", payload: { patches: [{ op: "set", path: "written", value: written.written }], version: 2 } },
      new Date(),
    );
    expectSameIntent(answer!.json, await mappedInJavaScript(intent.id));
    expect(answer!.version).toBe(2);

    // POST /intents/{id}/state through the command, as the gateway gets it.
    const patched = await cluster.client.requestRaw(commands.patchState, agent("a"), {
      intent_id: intent.id,
      if_match: 2,
      patches: [{ op: "set", path: "note", value: "a \"quoted\" line\nand \u00e9" }],
    });
    const afterPatch = await mappedInJavaScript(intent.id);
    expectSameIntent(bodyOf(patched), afterPatch);
    expect(afterPatch.state.note).toBe("a \"quoted\" line\nand \u00e9");
    expect(patched.version).toBe(3);

    // POST /intents/{id}/status: a plain change (not a graph or suspension move: draft to abandoned).
    const moved = await cluster.client.requestRaw(commands.transition, agent("a"), { intent_id: intent.id, if_match: 3, body: { status: "abandoned", reason: "done with it" } });
    const afterMove = await mappedInJavaScript(intent.id);
    expectSameIntent(bodyOf(moved), afterMove);
    expect(afterMove.status).toBe("abandoned");
    expect(moved.version).toBe(4);
  });
});

describe("the intents page as PostgreSQL writes it (GET /intents)", () => {
  it("is the page mapped in JavaScript: the intents newest first, the cursor and has_more", async () => {
    const createdBy = `page-${Date.now()}`;
    const { parent, dependency, intent } = await createFixture(createdBy);
    // Newest first, ties (the same millisecond) by id, descending.
    const expected = (await Promise.all([parent.id, dependency.id, intent.id].map(mappedInJavaScript))).sort((a, b) =>
      a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
    );

    const first = await cluster.client.requestRaw(commands.list, agent("a"), { query: { created_by: createdBy, limit: 2 } });
    const firstPage = JSON.parse(bodyOf(first)) as { intents: Intent[]; next_cursor: string | null; has_more: boolean };
    expect(Object.keys(firstPage)).toEqual(["intents", "next_cursor", "has_more"]);
    expect(firstPage.intents).toEqual(expected.slice(0, 2));
    firstPage.intents.forEach((served, i) => expect(Object.keys(served)).toEqual(Object.keys(expected[i]!)));
    expect(firstPage.has_more).toBe(true);
    expect(firstPage.next_cursor).toBe(encodeKeysetCursor(new Date(expected[1]!.created_at), expected[1]!.id));

    const second = await cluster.client.request(commands.list, agent("a"), { query: { created_by: createdBy, limit: 2, after: firstPage.next_cursor! } });
    expect(second).toEqual({ intents: expected.slice(2), next_cursor: null, has_more: false });

    // A filter that keeps nothing: an empty page.
    const none = await cluster.client.requestRaw(commands.list, agent("a"), { query: { created_by: createdBy, status: "completed" } });
    expect(bodyOf(none)).toBe(`{"intents":[],"next_cursor":null,"has_more":false}`);
  });
  it("stops before LIMITS.pageBytes of intents, with at least one, and the next page goes on from there", async () => {
    const createdBy = `big-${Date.now()}`;
    // Three intents of 200 KB each: two fit in a page of 512 KB, the third starts the next page.
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const made = await cluster.client.request(commands.create, agent("a"), { body: { title: `big ${i}`, created_by: createdBy, state: { text: "x".repeat(200 * 1024) } } });
      ids.push(made.id);
    }
    const first = await cluster.client.requestRaw(commands.list, agent("a"), { query: { created_by: createdBy, limit: 10 } });
    expect(first.body.byteLength).toBeLessThan(LIMITS.pageBytes + 4096);
    const firstPage = JSON.parse(bodyOf(first)) as { intents: Intent[]; next_cursor: string | null; has_more: boolean };
    expect(firstPage.intents).toHaveLength(2);
    expect(firstPage.has_more).toBe(true);
    const second = await cluster.client.request(commands.list, agent("a"), { query: { created_by: createdBy, limit: 10, after: firstPage.next_cursor! } });
    expect(second.intents).toHaveLength(1);
    expect(second.has_more).toBe(false);
    expect([...firstPage.intents, ...second.intents].map((intent) => intent.id).sort()).toEqual([...ids].sort());
  });
});
