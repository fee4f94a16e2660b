import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BodyOf, IfMatch } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected, TIMESTAMP, UNKNOWN_ID } from "../../../test/support/e2e-helpers";
import { registerAgents } from "../../../test/support/agents";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { IntentsService } from "../src/service";

/**
 * The intents service's event log (spec 2.2, 4.1, 6): appending client events, reserved types, If-Match,
 * reading the log with cursors and filters, and the event each mutation appends, through the typed
 * client of the route catalogue. The registry runs beside it only because the gateway asks it whom
 * an X-Agent-ID is bound to; sweeps run only when a test calls them. The live stream (SSE) of the
 * log is tested in test/e2e.
 */
let harness: ServiceHarness<{ intents: IntentsService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({
      registry: QUIET.registry,
      intents: QUIET.intents,
    }),
  );
});
afterAll(async () => {
  await harness?.stop();
});

const append = (id: string, body: BodyOf<"intentsAppendEvent">, options: { ifMatch?: IfMatch; key?: "admin" | "agent"; agentId?: string } = {}) =>
  harness.sdk(options.key ?? "admin", options.agentId).send("intentsAppendEvent", { intent_id: id, ifMatch: options.ifMatch, body });
/** Raw on purpose: bodies the typed request forbids (no event_type, a payload that is not an object). */
const appendRaw = (id: string, body: unknown) => harness.rawApi(`/intents/${id}/events`, { body });
const admin = () => harness.sdk();
const listEvents = (id: string, query: { after?: string; limit?: number; event_type?: string } = {}) => admin().ops.intentsListEvents({ intent_id: id, query });

/** An intent with `n` client events note.0 .. note.n-1 after intent.created. */
async function intentWithNotes(n: number): Promise<{ id: string; events: any[] }> {
  const intent = await createIntent(harness);
  for (let i = 0; i < n; i++) {
    const res = await append(intent.id, { event_type: i % 2 === 0 ? "note.even" : "note.odd", payload: { i } });
    expect(res.status).toBe(201);
  }
  return { id: intent.id, events: await allEvents(harness, intent.id) };
}

describe("POST /intents/{id}/events", () => {
  it("stores the clients' trace_id and parent_event_id and returns them in the event and its log pages (the stream message is the same text)", async () => {
    const intent = await createIntent(harness);
    const parent = await append(intent.id, { event_type: "comment", payload: { text: "first" } });
    expect(parent.data).not.toHaveProperty("trace_id");
    expect(parent.data).not.toHaveProperty("parent_event_id");
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const child = await append(intent.id, { event_type: "comment", payload: { text: "reply" }, trace_id: traceId, parent_event_id: parent.data.id.toUpperCase() });
    expect(child.status).toBe(201);
    expect(child.data).toMatchObject({ event_type: "comment", trace_id: traceId, parent_event_id: parent.data.id });
    const page = (await listEvents(intent.id)).events;
    expect(page.at(-1)).toEqual(child.data);
    const filtered = (await listEvents(intent.id, { event_type: "comment" })).events;
    expect(filtered.at(-1)).toEqual(child.data);
    const nulls = await append(intent.id, { event_type: "comment", trace_id: null, parent_event_id: null });
    expect(nulls.status).toBe(201);
    expect(nulls.data).not.toHaveProperty("trace_id");
  });

  it("refuses a parent_event_id that is not a UUID and a trace_id with whitespace (400), appending nothing", async () => {
    const intent = await createIntent(harness);
    await expectRejected(append(intent.id, { event_type: "comment", parent_event_id: "nope" }), 400, "VALIDATION_FAILED");
    await expectRejected(append(intent.id, { event_type: "comment", trace_id: "a b" }), 400, "VALIDATION_FAILED");
    expect((await allEvents(harness, intent.id)).map((e) => e.event_type)).toEqual(["intent_created"]);
  });

  it("appends an event (201) with event_type, actor and payload", async () => {
    const intent = await createIntent(harness);
    const res = await append(intent.id, { event_type: "research.finding", actor: "agent-7", payload: { url: "https://x", score: 3 } });
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ intent_id: intent.id, event_type: "research.finding", actor: "agent-7", payload: { url: "https://x", score: 3 } });
    expect(res.data.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.data.created_at).toMatch(TIMESTAMP);

    const log = await allEvents(harness, intent.id);
    expect(log.map((e) => e.event_type)).toEqual(["intent_created", "research.finding"]);
    expect(log[1]).toEqual(res.data);
  });

  it("defaults the actor to X-Agent-ID, else to the key's principal", async () => {
    const intent = await createIntent(harness);
    const byKey = await append(intent.id, { event_type: "note.a" }, { key: "agent" });
    expect(byKey.data.actor).toBe("agent-1");
    expect(byKey.data.payload).toEqual({});
    await registerAgents(harness, ["worker-9"]);
    const byHeader = await append(intent.id, { event_type: "note.b" }, { key: "agent", agentId: "worker-9" });
    expect(byHeader.data.actor).toBe("worker-9");
  });

  it("refuses event types the server emits with 400 RESERVED_EVENT_TYPE, appending nothing", async () => {
    const intent = await createIntent(harness);
    for (const type of ["intent_created", "status_changed", "lease_released", "lease_acquired", "agent_assigned", "attachment_added", "lease.expired", "intent.created"]) {
      await expectRejected(append(intent.id, { event_type: type, payload: {} }), 400, "RESERVED_EVENT_TYPE");
    }
    const log = await allEvents(harness, intent.id);
    expect(log.map((e) => e.event_type)).toEqual(["intent_created"]);
  });

  it("refuses a body without event_type (400)", async () => {
    const intent = await createIntent(harness);
    expectError(await appendRaw(intent.id, { payload: {} }), 400, "VALIDATION_FAILED");
    expectError(await appendRaw(intent.id, { event_type: "x", payload: [1] }), 400, "VALIDATION_FAILED");
  });

  it("honours If-Match: stale 409 with current_version, matching 201, and never changes the intent version", async () => {
    const intent = await createIntent(harness);
    await admin().ops.intentsPatchState({ intent_id: intent.id, ifMatch: 1, body: [{ op: "set", path: "/a", value: 1 }] });

    const stale = await expectRejected(append(intent.id, { event_type: "note.x" }, { ifMatch: 1 }), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(2);

    const matching = await append(intent.id, { event_type: "note.y" }, { ifMatch: '"2"' });
    expect(matching.status).toBe(201);
    const unconditional = await append(intent.id, { event_type: "note.z" });
    expect(unconditional.status).toBe(201);

    const read = await admin().send("intentsGet", { intent_id: intent.id });
    expect(read.data.version).toBe(2);
    expect(read.headers.get("etag")).toBe('"2"');
    const types = (await allEvents(harness, intent.id)).map((e) => e.event_type);
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
    await expectRejected(listEvents(id, { after: "99999999999999999999" }), 400, "VALIDATION_FAILED");
    expect((await listEvents(id, { after: "9007199254740991" })).events).toEqual([]);
  });

  it("pages with limit, next_cursor and has_more, covering the log exactly once", async () => {
    const { id, events } = await intentWithNotes(6); // 7 events
    const seen: string[] = [];
    const sizes: number[] = [];
    let after: string | undefined;
    for (let guard = 0; guard < 10; guard++) {
      const res = await admin().send("intentsListEvents", { intent_id: id, query: { limit: 3, after } });
      expect(res.status).toBe(200);
      sizes.push(res.data.events.length);
      seen.push(...res.data.events.map((e) => e.id));
      if (!res.data.has_more) break;
      expect(res.data.next_cursor).toBeTruthy();
      after = res.data.next_cursor ?? undefined;
    }
    expect(sizes).toEqual([3, 3, 1]);
    expect(seen).toEqual(events.map((e) => e.id));
  });

  it("reads after a sequence number and after an event id alike", async () => {
    const { id, events } = await intentWithNotes(4); // 5 events
    const bySeq = await listEvents(id, { after: "2" });
    expect(bySeq.events.map((e) => e.sequence)).toEqual([3, 4, 5]);
    const byId = await admin().send("intentsListEvents", { intent_id: id, query: { after: events[1].id } });
    expect(byId.status).toBe(200);
    expect(byId.data.events.map((e) => e.id)).toEqual(events.slice(2).map((e) => e.id));
    expect(byId.data.has_more).toBe(false);
    const atEnd = await listEvents(id, { after: events[4].id });
    expect(atEnd.events).toEqual([]);
    expect(atEnd.has_more).toBe(false);
  });

  it("refuses an after naming no event of this intent (400) rather than restarting the log", async () => {
    const { id } = await intentWithNotes(1);
    const other = await intentWithNotes(1);
    await expectRejected(listEvents(id, { after: other.events[1].id }), 400, "VALIDATION_FAILED");
    await expectRejected(listEvents(id, { after: UNKNOWN_ID }), 400, "VALIDATION_FAILED");
  });

  it("filters by event_type, with limit and cursor", async () => {
    const { id, events } = await intentWithNotes(6); // even: i=0,2,4
    const evens = events.filter((e) => e.event_type === "note.even");
    const first = await listEvents(id, { event_type: "note.even", limit: 2 });
    expect(first.events.map((e) => e.id)).toEqual(evens.slice(0, 2).map((e) => e.id));
    expect(first.has_more).toBe(true);
    const second = await listEvents(id, { event_type: "note.even", limit: 2, after: first.next_cursor ?? undefined });
    expect(second.events.map((e) => e.id)).toEqual(evens.slice(2).map((e) => e.id));
    expect(second.has_more).toBe(false);
    const none = await admin().send("intentsListEvents", { intent_id: id, query: { event_type: "not.there" } });
    expect(none.status).toBe(200);
    expect(none.data.events).toEqual([]);
  });
});

describe("every mutation appends its event", () => {
  it("logs intent.created, intent.state_patched, intent.status_changed, intent.agent_assigned and the lease events in order", async () => {
    const intent = await createIntent(harness, { title: "logged" });
    const id = intent.id as string;
    await registerAgents(harness, ["agent-x"], "admin");
    await admin().ops.intentsPatchState({ intent_id: id, ifMatch: 1, body: [{ op: "set", path: "/a", value: 1 }] });
    await admin().ops.intentsTransition({ intent_id: id, ifMatch: 2, body: { status: "blocked", reason: "waiting" } });
    await admin().ops.intentsAssignAgent({ intent_id: id, body: { agent_id: "agent-x", role: "r" } });
    const asAgent = harness.sdk("admin", "agent-x");
    const lease = await asAgent.send("intentsAcquireLease", { intent_id: id, body: { scope: "notes", ttl_seconds: 60 } });
    expect(lease.status).toBe(201);
    const renewed = await asAgent.send("intentsRenewLease", { intent_id: id, lease_id: lease.data.id, body: { ttl_seconds: 120 } });
    expect(renewed.status).toBe(200);
    const released = await asAgent.send("intentsReleaseLease", { intent_id: id, lease_id: lease.data.id });
    expect(released.status).toBe(200);
    await admin().ops.intentsUnassignAgent({ intent_id: id, agent_id: "agent-x" });

    const log = await allEvents(harness, id);
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
    expect(log[0]!.payload).toMatchObject({ title: "logged" });
    expect(log[2]!.payload).toMatchObject({ from: "active", to: "blocked", reason: "waiting" });
    expect(log[3]!.payload).toMatchObject({ agent_id: "agent-x" });
    expect(log[4]).toMatchObject({ actor: "agent-x", payload: { lease_id: lease.data.id, scope: "notes" } });
    // A renewal is the same lease for a new term; a release says so (an expiry says expired).
    expect(log[5]!.payload).toMatchObject({ lease_id: lease.data.id, renewal: true });
    expect(log[4]!.payload).not.toHaveProperty("renewal");
    expect(log[6]!.payload).toMatchObject({ lease_id: lease.data.id, reason: "released" });
  });

  it("appends nothing for a refused mutation", async () => {
    const intent = await createIntent(harness);
    await expectRejected(admin().ops.intentsPatchState({ intent_id: intent.id, ifMatch: 7, body: [{ op: "set", path: "/a", value: 1 }] }), 409, "VERSION_MISMATCH");
    await expectRejected(admin().ops.intentsTransition({ intent_id: intent.id, ifMatch: 1, body: { status: "draft" } }), 409, "INVALID_TRANSITION");
    // Raw on purpose: a status change without If-Match, which the typed request forbids.
    expectError(await harness.rawApi(`/intents/${intent.id}/status`, { body: { status: "blocked" } }), 428, "PRECONDITION_REQUIRED");
    expect((await allEvents(harness, intent.id)).map((e) => e.event_type)).toEqual(["intent_created"]);
  });
});
