import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, TIMESTAMP, UNKNOWN_ID } from "../support/e2e-helpers";
import { registerAgents } from "../support/agents";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const append = (id: string, body: unknown, headers: Record<string, string> = {}, key: "admin" | "agent" | "other" = "admin") =>
  cluster.api(`/intents/${id}/events`, { body, headers, key });

/** An intent with `n` client events note.0 .. note.n-1 after intent.created. */
async function intentWithNotes(n: number): Promise<{ id: string; events: any[] }> {
  const intent = await createIntent(cluster);
  for (let i = 0; i < n; i++) {
    const res = await append(intent.id, { event_type: i % 2 === 0 ? "note.even" : "note.odd", payload: { i } });
    expect(res.status).toBe(201);
  }
  return { id: intent.id, events: await allEvents(cluster, intent.id) };
}

describe("POST /intents/{id}/events", () => {
  it("stores the clients' trace_id and parent_event_id and returns them in the event and its log pages (the stream message is the same text)", async () => {
    const intent = await createIntent(cluster);
    const parent = await append(intent.id, { event_type: "comment", payload: { text: "first" } });
    expect(parent.body).not.toHaveProperty("trace_id");
    expect(parent.body).not.toHaveProperty("parent_event_id");
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const child = await append(intent.id, { event_type: "comment", payload: { text: "reply" }, trace_id: traceId, parent_event_id: parent.body.id.toUpperCase() });
    expect(child.status, JSON.stringify(child.body)).toBe(201);
    expect(child.body).toMatchObject({ event_type: "comment", trace_id: traceId, parent_event_id: parent.body.id });
    const page = (await cluster.api(`/intents/${intent.id}/events`)).body.events;
    expect(page.at(-1)).toEqual(child.body);
    const filtered = (await cluster.api(`/intents/${intent.id}/events?event_type=comment`)).body.events;
    expect(filtered.at(-1)).toEqual(child.body);
    const nulls = await append(intent.id, { event_type: "comment", trace_id: null, parent_event_id: null });
    expect(nulls.status).toBe(201);
    expect(nulls.body).not.toHaveProperty("trace_id");
  });

  it("refuses a parent_event_id that is not a UUID and a trace_id with whitespace (400), appending nothing", async () => {
    const intent = await createIntent(cluster);
    expectError(await append(intent.id, { event_type: "comment", parent_event_id: "nope" }), 400, "VALIDATION_FAILED");
    expectError(await append(intent.id, { event_type: "comment", trace_id: "a b" }), 400, "VALIDATION_FAILED");
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type)).toEqual(["intent_created"]);
  });

  it("appends an event (201) with event_type, actor and payload", async () => {
    const intent = await createIntent(cluster);
    const res = await append(intent.id, { event_type: "research.finding", actor: "agent-7", payload: { url: "https://x", score: 3 } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ intent_id: intent.id, event_type: "research.finding", actor: "agent-7", payload: { url: "https://x", score: 3 } });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.created_at).toMatch(TIMESTAMP);

    const log = await allEvents(cluster, intent.id);
    expect(log.map((e) => e.event_type)).toEqual(["intent_created", "research.finding"]);
    expect(log[1]).toEqual(res.body);
  });

  it("defaults the actor to X-Agent-ID, else to the key's principal", async () => {
    const intent = await createIntent(cluster);
    const byKey = await append(intent.id, { event_type: "note.a" }, {}, "agent");
    expect(byKey.body.actor).toBe("agent-1");
    expect(byKey.body.payload).toEqual({});
    await registerAgents(cluster, ["worker-9"]);
    const byHeader = await append(intent.id, { event_type: "note.b" }, { "X-Agent-ID": "worker-9" }, "agent");
    expect(byHeader.body.actor).toBe("worker-9");
  });

  it("refuses event types the server emits with 400 RESERVED_EVENT_TYPE, appending nothing", async () => {
    const intent = await createIntent(cluster);
    for (const type of ["intent_created", "status_changed", "lease_released", "lease_acquired", "agent_assigned", "attachment_added", "lease.expired", "intent.created"]) {
      const res = await append(intent.id, { event_type: type, payload: {} });
      expectError(res, 400, "RESERVED_EVENT_TYPE");
    }
    const log = await allEvents(cluster, intent.id);
    expect(log.map((e) => e.event_type)).toEqual(["intent_created"]);
  });

  it("refuses a body without event_type (400)", async () => {
    const intent = await createIntent(cluster);
    expectError(await append(intent.id, { payload: {} }), 400, "VALIDATION_FAILED");
    expectError(await append(intent.id, { event_type: "x", payload: [1] }), 400, "VALIDATION_FAILED");
  });

  it("honours If-Match: stale 409 with current_version, matching 201, and never changes the intent version", async () => {
    const intent = await createIntent(cluster);
    await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/a", value: 1 }], headers: { "If-Match": "1" } });

    const stale = await append(intent.id, { event_type: "note.x" }, { "If-Match": "1" });
    expectError(stale, 409, "VERSION_MISMATCH");
    expect(stale.body.current_version).toBe(2);

    const matching = await append(intent.id, { event_type: "note.y" }, { "If-Match": '"2"' });
    expect(matching.status).toBe(201);
    const unconditional = await append(intent.id, { event_type: "note.z" });
    expect(unconditional.status).toBe(201);

    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body.version).toBe(2);
    expect(read.headers.get("etag")).toBe('"2"');
    const types = (await allEvents(cluster, intent.id)).map((e) => e.event_type);
    expect(types).toEqual(["intent_created", "state_patched", "note.y", "note.z"]);
  });
});

describe("GET /intents/{id}/events", () => {
  it("lists oldest first with consecutive sequence numbers", async () => {
    const { events } = await intentWithNotes(5);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(events[0].event_type).toBe("intent_created");
    expect(events.slice(1).map((e) => e.payload.i)).toEqual([0, 1, 2, 3, 4]);
    const times = events.map((e) => Date.parse(e.created_at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it("answers 400, not 500, to a cursor number larger than any sequence", async () => {
    const { id } = await intentWithNotes(1);
    expectError(await cluster.api(`/intents/${id}/events?after=99999999999999999999`), 400, "VALIDATION_FAILED");
    expect((await cluster.api(`/intents/${id}/events?after=9007199254740991`)).body.events).toEqual([]);
  });

  it("pages with limit, next_cursor and has_more, covering the log exactly once", async () => {
    const { id, events } = await intentWithNotes(6); // 7 events
    const seen: string[] = [];
    const sizes: number[] = [];
    let after: string | undefined;
    for (let guard = 0; guard < 10; guard++) {
      const res = await cluster.api(`/intents/${id}/events?limit=3${after ? `&after=${after}` : ""}`);
      expect(res.status).toBe(200);
      sizes.push(res.body.events.length);
      seen.push(...res.body.events.map((e: any) => e.id));
      if (!res.body.has_more) break;
      expect(res.body.next_cursor).toBeTruthy();
      after = res.body.next_cursor;
    }
    expect(sizes).toEqual([3, 3, 1]);
    expect(seen).toEqual(events.map((e) => e.id));
  });

  it("reads after a sequence number and after an event id alike", async () => {
    const { id, events } = await intentWithNotes(4); // 5 events
    const bySeq = await cluster.api(`/intents/${id}/events?after=2`);
    expect(bySeq.body.events.map((e: any) => e.sequence)).toEqual([3, 4, 5]);
    const byId = await cluster.api(`/intents/${id}/events?after=${events[1].id}`);
    expect(byId.status).toBe(200);
    expect(byId.body.events.map((e: any) => e.id)).toEqual(events.slice(2).map((e) => e.id));
    expect(byId.body.has_more).toBe(false);
    const atEnd = await cluster.api(`/intents/${id}/events?after=${events[4].id}`);
    expect(atEnd.body.events).toEqual([]);
    expect(atEnd.body.has_more).toBe(false);
  });

  it("refuses an after naming no event of this intent (400) rather than restarting the log", async () => {
    const { id } = await intentWithNotes(1);
    const other = await intentWithNotes(1);
    expect((await cluster.api(`/intents/${id}/events?after=${other.events[1].id}`)).status).toBe(400);
    expect((await cluster.api(`/intents/${id}/events?after=${UNKNOWN_ID}`)).status).toBe(400);
  });

  it("filters by event_type, with limit and cursor", async () => {
    const { id, events } = await intentWithNotes(6); // even: i=0,2,4
    const evens = events.filter((e) => e.event_type === "note.even");
    const first = await cluster.api(`/intents/${id}/events?event_type=note.even&limit=2`);
    expect(first.body.events.map((e: any) => e.id)).toEqual(evens.slice(0, 2).map((e) => e.id));
    expect(first.body.has_more).toBe(true);
    const second = await cluster.api(`/intents/${id}/events?event_type=note.even&limit=2&after=${first.body.next_cursor}`);
    expect(second.body.events.map((e: any) => e.id)).toEqual(evens.slice(2).map((e) => e.id));
    expect(second.body.has_more).toBe(false);
    const none = await cluster.api(`/intents/${id}/events?event_type=not.there`);
    expect(none.status).toBe(200);
    expect(none.body.events).toEqual([]);
  });
});

describe("every mutation appends its event", () => {
  it("logs intent.created, intent.state_patched, intent.status_changed, intent.agent_assigned and the lease events in order", async () => {
    const intent = await createIntent(cluster, { title: "logged" });
    const id = intent.id as string;
    await registerAgents(cluster, ["agent-x"], "admin");
    await cluster.api(`/intents/${id}/state`, { body: [{ op: "set", path: "/a", value: 1 }], headers: { "If-Match": "1" } });
    await cluster.api(`/intents/${id}/status`, { body: { status: "blocked", reason: "waiting" }, headers: { "If-Match": "2" } });
    await cluster.api(`/intents/${id}/agents`, { body: { agent_id: "agent-x", role: "r" } });
    const lease = await cluster.api(`/intents/${id}/leases`, { body: { scope: "notes", ttl_seconds: 60 }, headers: { "X-Agent-ID": "agent-x" } });
    expect(lease.status).toBe(201);
    const renewed = await cluster.api(`/intents/${id}/leases/${lease.body.id}/renew`, { body: { ttl_seconds: 120 }, headers: { "X-Agent-ID": "agent-x" } });
    expect(renewed.status).toBe(200);
    const released = await cluster.api(`/intents/${id}/leases/${lease.body.id}`, { method: "DELETE", headers: { "X-Agent-ID": "agent-x" } });
    expect(released.status).toBe(200);
    await cluster.api(`/intents/${id}/agents/agent-x`, { method: "DELETE" });

    const log = await allEvents(cluster, id);
    expect(log.map((e) => e.event_type)).toEqual([
      "intent_created",
      "state_patched",
      "status_changed",
      "agent_assigned",
      "lease_acquired",
      "lease_acquired",
      "lease_released",
      "agent_unassigned",
    ]);
    expect(log.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(log[0].payload).toMatchObject({ title: "logged" });
    expect(log[2].payload).toMatchObject({ from: "active", to: "blocked", reason: "waiting" });
    expect(log[3].payload).toMatchObject({ agent_id: "agent-x" });
    expect(log[4]).toMatchObject({ actor: "agent-x", payload: { lease_id: lease.body.id, scope: "notes" } });
    // A renewal is the same lease for a new term; a release says so (an expiry says expired).
    expect(log[5].payload).toMatchObject({ lease_id: lease.body.id, renewal: true });
    expect(log[4].payload).not.toHaveProperty("renewal");
    expect(log[6].payload).toMatchObject({ lease_id: lease.body.id, reason: "released" });
  });

  it("appends nothing for a refused mutation", async () => {
    const intent = await createIntent(cluster);
    await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/a", value: 1 }], headers: { "If-Match": "7" } });
    await cluster.api(`/intents/${intent.id}/status`, { body: { status: "draft" }, headers: { "If-Match": "1" } });
    await cluster.api(`/intents/${intent.id}/status`, { body: { status: "blocked" } });
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type)).toEqual(["intent_created"]);
  });
});
