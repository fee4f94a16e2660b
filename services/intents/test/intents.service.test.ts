import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IntentmeshError, type ApiResult, type BodyOf, type IfMatch, type Intentmesh } from "@intentmesh/sdk";
import { derivedUuid, intentsCommands, type Caller, type ManualClock } from "@intentmesh/contracts";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { createIntent, eventTypes, expectError, expectRejected, TIMESTAMP, uniqueTag } from "../../../test/support/e2e-helpers";
import type { IntentsService } from "../src/service";

/**
 * The intents service's own rules for an intent (spec 2.1, 2.3, 3.1, 4.1): create and read, list
 * filters and pagination, state patches and If-Match, the status table 3.1 and assignments,
 * through the typed client of the route catalogue (and the bus, for a create under a chosen id).
 * The registry runs beside it only because the gateway asks it whom an X-Agent-ID is bound to;
 * sweeps run only when a test calls them.
 */
let harness: ServiceHarness<{ intents: IntentsService; stop(): Promise<void> }>;
/** The typed client with the admin key. */
let admin: Intentmesh;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({
      registry: QUIET.registry,
      intents: QUIET.intents,
    }),
  );
  admin = harness.sdk();
});
afterAll(async () => {
  await harness?.stop();
});

type IntentStatus = BodyOf<"intentsTransition">["status"];
const patch = (id: string, patches: BodyOf<"intentsPatchState">, ifMatch: IfMatch) => admin.send("intentsPatchState", { intent_id: id, ifMatch, body: patches });
const move = (id: string, status: IntentStatus, ifMatch: IfMatch) => admin.send("intentsTransition", { intent_id: id, ifMatch, body: { status } });
/** The refusals among settled calls, each asserted to be an IntentmeshError. */
const refusalsOf = (results: PromiseSettledResult<unknown>[]) =>
  results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : [])).map((reason) => {
    expect(reason).toBeInstanceOf(IntentmeshError);
    return reason as IntentmeshError;
  });
/** The status of each settled call: 200 for a success, the error's status for a refusal. */
const statusesOf = (results: PromiseSettledResult<{ status: number }>[]) => results.map((r) => (r.status === "fulfilled" ? r.value.status : (r.reason as IntentmeshError).status));

describe("POST /intents and GET /intents/{id}", () => {
  it("creates an intent at version 1 (201) with the fields of 2.1 and reads it back", async () => {
    const res = await harness.sdk("agent").send("intentsCreate", {
      body: { title: "Ship the release", description: "v2", constraints: { budget: { max_total_cents: 100 } }, state: { step: 1 }, confidence: 40 },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    expect(res.data).toMatchObject({
      title: "Ship the release",
      description: "v2",
      created_by: "agent-1",
      status: "draft",
      constraints: { budget: { max_total_cents: 100 } },
      state: { step: 1 },
      confidence: 40,
      version: 1,
    });
    expect(res.data.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(res.data.created_at).toMatch(TIMESTAMP);
    expect(res.data.updated_at).toMatch(TIMESTAMP);

    const read = await admin.send("intentsGet", { intent_id: res.data.id });
    expect(read.status).toBe(200);
    expect(read.data).toEqual(res.data);
  });

  it("starts new intents in draft (table 3.1); a body may ask for draft or active, any other status is 400 and writes nothing", async () => {
    const tag = uniqueTag("initial");
    const drafted = await admin.ops.intentsCreate({ body: { title: "d", created_by: tag } });
    expect(drafted.status).toBe("draft");
    expect((await admin.ops.intentsListEvents({ intent_id: drafted.id })).events[0]!.payload).toMatchObject({ status: "draft" });
    const active = await admin.send("intentsCreate", { body: { title: "a", created_by: tag, status: "active" } });
    expect(active.status).toBe(201);
    expect(active.data.status).toBe("active");
    expect((await admin.ops.intentsCreate({ body: { title: "d2", created_by: tag, status: "draft" } })).status).toBe("draft");
    // Raw: the types allow only draft or active at creation.
    for (const status of ["blocked", "completed", "abandoned", "suspended_awaiting_input", "nonsense"]) {
      const refused = await harness.rawApi("/intents", { body: { title: "x", created_by: tag, status } });
      expectError(refused, 400, "VALIDATION_FAILED");
      expect(refused.body.message).toContain("draft or active");
    }
    const listed = await admin.ops.intentsList({ query: { created_by: tag } });
    expect(listed.intents).toHaveLength(3);
    // The walkthrough: activate a draft first (If-Match 1), then work on it.
    const activated = await admin.ops.intentsTransition({ intent_id: drafted.id, ifMatch: 1, body: { status: "active" } });
    expect(activated).toMatchObject({ status: "active", version: 2 });
  });

  it("defaults description to null, constraints and state to {}, and created_by to the caller", async () => {
    const created = await harness.sdk("coordinator").ops.intentsCreate({ body: { title: "minimal", status: "active" } });
    expect(created).toMatchObject({ description: null, constraints: {}, state: {}, created_by: "coordinator", version: 1 });
  });

  it("refuses a body without a title and constraints that are not an object (400 VALIDATION_FAILED)", async () => {
    // Raw: the types require a title and an object of constraints.
    const noTitle = await harness.rawApi("/intents", { body: { description: "x" } });
    expectError(noTitle, 400, "VALIDATION_FAILED");
    expect(noTitle.body.message).toContain("title");
    expectError(await harness.rawApi("/intents", { body: { title: "x", constraints: ["a"] } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin.send("intentsCreate", { body: { title: "x", confidence: 101 } }), 400, "VALIDATION_FAILED");
  });
});

describe("creating under a chosen id (bus only: federation's receive after a crash)", () => {
  const service = (actor: string): Caller => ({ principal: "federation", roles: ["admin"], actor, agent_id: null });

  it("creates once: a repeat by the same creator answers the intent made first, anyone else 409; HTTP cannot choose an id", async () => {
    const id = derivedUuid(`test:${uniqueTag()}`);
    const body = { title: "received", created_by: "did:web:peer.example", status: "active" as const, state: {}, constraints: {} };
    const first = await harness.client.request(intentsCommands.create, service("did:web:peer.example"), { intent_id: id, body });
    expect(first).toMatchObject({ id, title: "received", version: 1 });
    const again = await harness.client.request(intentsCommands.create, service("did:web:peer.example"), { intent_id: id, body: { ...body, title: "second try" } });
    expect(again).toMatchObject({ id, title: "received", version: 1 });
    expect(await eventTypes(harness, id)).toEqual(["intent_created"]);
    await expect(
      harness.client.request(intentsCommands.create, service("did:web:other.example"), { intent_id: id, body: { ...body, created_by: "did:web:other.example" } }),
    ).rejects.toMatchObject({ code: "INTENT_EXISTS", status: 409 });
    // Through the gateway a client's intent_id is not an id to create under (raw: the types have no such field).
    const chosen = derivedUuid(`test:${uniqueTag()}`);
    const viaHttp = await harness.rawApi("/intents", { method: "POST", body: { title: "x", intent_id: chosen } });
    expect([201, 400]).toContain(viaHttp.status);
    await expectRejected(admin.send("intentsGet", { intent_id: chosen }), 404, "INTENT_NOT_FOUND");
  });
});

describe("GET /intents: filters and cursor pagination", () => {
  it("walks all pages of 7 intents with limit 3 without duplicates or gaps", async () => {
    const tag = uniqueTag("page");
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      // Some intents share a creation instant, so the cursor must break ties.
      if (i % 3 === 0) (harness.clock as ManualClock).advance(1);
      ids.push((await createIntent(harness, { title: `p${i}`, created_by: tag })).id);
    }
    const seen: string[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    for (let guard = 0; guard < 10; guard++) {
      const after: string | undefined = cursor ?? undefined;
      const res: ApiResult<"intentsList"> = await admin.send("intentsList", { query: { created_by: tag, limit: 3, after } });
      expect(res.status).toBe(200);
      expect(Object.keys(res.data).sort()).toEqual(["has_more", "intents", "next_cursor"]);
      pages.push(res.data.intents.length);
      seen.push(...res.data.intents.map((i) => i.id));
      if (!res.data.has_more) {
        expect(res.data.next_cursor).toBeNull();
        break;
      }
      expect(typeof res.data.next_cursor).toBe("string");
      cursor = res.data.next_cursor;
    }
    expect(pages).toEqual([3, 3, 1]);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...ids].sort());
  });

  it("filters by status (comma list) and created_by", async () => {
    const tag = uniqueTag("filter");
    const draft1 = await createIntent(harness, { created_by: tag, status: "draft" });
    const draft2 = await createIntent(harness, { created_by: tag, status: "draft" });
    const active = await createIntent(harness, { created_by: tag });
    const blocked = await createIntent(harness, { created_by: tag });
    expect((await move(blocked.id, "blocked", 1)).status).toBe(200);
    await createIntent(harness, { created_by: uniqueTag("someone-else"), status: "draft" });

    const ids = (page: { intents: { id: string }[] }) => page.intents.map((i) => i.id).sort();

    const mine = await admin.ops.intentsList({ query: { created_by: tag } });
    expect(ids(mine)).toEqual([draft1.id, draft2.id, active.id, blocked.id].sort());

    const draftOrBlocked = await admin.send("intentsList", { query: { created_by: tag, status: "draft,blocked" } });
    expect(draftOrBlocked.status).toBe(200);
    expect(ids(draftOrBlocked.data)).toEqual([draft1.id, draft2.id, blocked.id].sort());
    for (const i of draftOrBlocked.data.intents) expect(["draft", "blocked"]).toContain(i.status);

    const onlyActive = await admin.ops.intentsList({ query: { created_by: tag, status: "active" } });
    expect(ids(onlyActive)).toEqual([active.id]);

    const allDrafts = await admin.ops.intentsList({ query: { status: "draft", limit: 500 } });
    for (const i of allDrafts.intents) expect(i.status).toBe("draft");
    expect(allDrafts.intents.some((i) => i.created_by !== tag)).toBe(true);

    await expectRejected(admin.send("intentsList", { query: { status: "nonsense" } }), 400, "VALIDATION_FAILED");
  });
});

describe("POST /intents/{id}/state", () => {
  it("accepts {\"patches\": [...]} and a bare array, with append, set and remove", async () => {
    const intent = await createIntent(harness, { state: { keep: true, drop: 1 } });
    // Raw: the typed client sends the bare array; the wrapped form is the other one the server takes.
    const wrapped = await harness.rawApi(`/intents/${intent.id}/state`, {
      body: { patches: [{ op: "set", path: "/a", value: { b: 1 } }, { op: "append", path: "/list", value: "x" }] },
      headers: { "If-Match": "1" },
    });
    expect(wrapped.status).toBe(200);
    expect(wrapped.body).toMatchObject({ version: 2, state: { keep: true, drop: 1, a: { b: 1 }, list: ["x"] } });
    expect(wrapped.headers.get("etag")).toBe('"2"');

    const bare = await patch(intent.id, [{ op: "append", path: "/list", value: "y" }, { op: "remove", path: "/drop" }], "2");
    expect(bare.status).toBe(200);
    expect(bare.data.version).toBe(3);
    expect(bare.data.state).toEqual({ keep: true, a: { b: 1 }, list: ["x", "y"] });

    const read = await admin.ops.intentsGet({ intent_id: intent.id });
    expect(read.state).toEqual({ keep: true, a: { b: 1 }, list: ["x", "y"] });
    expect(read.version).toBe(3);
  });

  it("decodes RFC 6901 escapes (~1 is /, ~0 is ~) and reads a path without a leading slash as if it had one", async () => {
    const intent = await createIntent(harness);
    const res = await patch(intent.id, [{ op: "set", path: "/a~1b/c~0d", value: 1 }, { op: "set", path: "x/y", value: 2 }, { op: "set", path: "/~01", value: 3 }], "1");
    expect(res.status).toBe(200);
    expect(res.data.state).toEqual({ "a/b": { "c~d": 1 }, x: { y: 2 }, "~1": 3 });
    const again = await patch(intent.id, [{ op: "remove", path: "a~1b/c~0d" }, { op: "set", path: "/x/y", value: 5 }], "2");
    expect(again.status).toBe(200);
    expect(again.data.state).toEqual({ "a/b": {}, x: { y: 5 }, "~1": 3 });
  });

  it("is atomic: a list whose second patch fails answers 400 PATCH_FAILED naming index 1 and changes nothing", async () => {
    const intent = await createIntent(harness, { state: { n: 1 } });
    const refusal = await expectRejected(
      patch(intent.id, [{ op: "set", path: "/n", value: 2 }, { op: "remove", path: "/does/not/exist" }, { op: "set", path: "/m", value: 3 }], "1"),
      400,
      "PATCH_FAILED",
    );
    expect(refusal.details.index).toBe(1);
    expect(refusal.body?.message).toContain("1");

    const read = await admin.send("intentsGet", { intent_id: intent.id });
    expect(read.data.state).toEqual({ n: 1 });
    expect(read.data.version).toBe(1);
    expect(read.headers.get("etag")).toBe('"1"');
    expect(await eventTypes(harness, intent.id)).toEqual(["intent_created"]);
  });

  it("requires If-Match: 428 PRECONDITION_REQUIRED without it, and nothing changes", async () => {
    const intent = await createIntent(harness);
    // Raw: the types require If-Match.
    const res = await harness.rawApi(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/a", value: 1 }] });
    expectError(res, 428, "PRECONDITION_REQUIRED");
    const read = await admin.ops.intentsGet({ intent_id: intent.id });
    expect(read).toMatchObject({ state: {}, version: 1 });
  });

  it("answers a stale If-Match with 409 VERSION_MISMATCH carrying current_version, and nothing changes", async () => {
    const intent = await createIntent(harness);
    expect((await patch(intent.id, [{ op: "set", path: "/a", value: 1 }], "1")).status).toBe(200);
    const stale = await expectRejected(patch(intent.id, [{ op: "set", path: "/a", value: 99 }], "1"), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(2);
    const ahead = await expectRejected(patch(intent.id, [{ op: "set", path: "/a", value: 99 }], "5"), 409, "VERSION_MISMATCH");
    expect(ahead.body?.current_version).toBe(2);
    const read = await admin.ops.intentsGet({ intent_id: intent.id });
    expect(read).toMatchObject({ state: { a: 1 }, version: 2 });
  });

  it("lets exactly one of 10 concurrent patches with If-Match 1 win; the other nine get 409", async () => {
    const intent = await createIntent(harness);
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => patch(intent.id, [{ op: "set", path: "/winner", value: i }, { op: "append", path: "/log", value: i }], "1")),
    );
    const statuses = statusesOf(results).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of refusalsOf(results)) {
      expect(r.code).toBe("VERSION_MISMATCH");
      expect(r.body?.current_version).toBe(2);
    }
    const winner = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))[0]!;
    const read = await admin.ops.intentsGet({ intent_id: intent.id });
    expect(read.version).toBe(2);
    expect(read.state).toEqual({ winner: winner.data.state.winner, log: [winner.data.state.winner] });
    expect(await eventTypes(harness, intent.id)).toEqual(["intent_created", "state_patched"]);
  });

  it("appends intent.state_patched with the patches and the new version", async () => {
    const intent = await createIntent(harness);
    await patch(intent.id, [{ op: "set", path: "/a", value: 1 }], "1");
    const log = await admin.ops.intentsListEvents({ intent_id: intent.id, query: { event_type: "state_patched" } });
    expect(log.events).toHaveLength(1);
    expect(log.events[0]!.payload).toMatchObject({ patches: [{ op: "set", path: "/a", value: 1 }], version: 2 });
  });
});

describe("POST /intents/{id}/status: table 3.1", () => {
  /** Walks a chain of transitions, checking each answer, the version and the event log. */
  async function walk(initial: "draft" | "active", chain: IntentStatus[]) {
    const intent = await createIntent(harness, { status: initial });
    expect(intent.status).toBe(initial);
    let version = 1;
    let from: string = initial;
    for (const to of chain) {
      const res = await move(intent.id, to, version);
      expect(res.status, `${from} -> ${to}: ${JSON.stringify(res.data)}`).toBe(200);
      version++;
      expect(res.data).toMatchObject({ status: to, version });
      expect(res.headers.get("etag")).toBe(`"${version}"`);
      from = to;
    }
    const changes = await admin.ops.intentsListEvents({ intent_id: intent.id, query: { event_type: "status_changed" } });
    const pairs = changes.events.map((e) => `${String(e.payload.from)}->${String(e.payload.to)}`);
    const expected: string[] = [];
    let prev: string = initial;
    for (const to of chain) {
      expected.push(`${prev}->${to}`);
      prev = to;
    }
    expect(pairs).toEqual(expected);
    return intent.id as string;
  }

  it("reaches every allowed transition through HTTP", async () => {
    await walk("draft", ["active", "blocked", "active", "completed"]); // draft->active, active->blocked, blocked->active, active->completed
    await walk("draft", ["abandoned"]); // draft->abandoned
    await walk("active", ["abandoned"]); // active->abandoned
    await walk("active", ["blocked", "abandoned"]); // blocked->abandoned
  });

  it("refuses an illegal transition with 409 INVALID_TRANSITION naming from, to and allowed, and changes nothing", async () => {
    const draft = await createIntent(harness, { status: "draft" });
    const res = await expectRejected(move(draft.id, "completed", 1), 409, "INVALID_TRANSITION");
    expect(res.details.from).toBe("draft");
    expect(res.details.to).toBe("completed");
    expect([...(res.details.allowed as string[])].sort()).toEqual(["abandoned", "active"]);
    const read = await admin.ops.intentsGet({ intent_id: draft.id });
    expect(read).toMatchObject({ status: "draft", version: 1 });

    const done = await walk("active", ["completed"]);
    const reopen = await expectRejected(move(done, "active", 2), 409, "INVALID_TRANSITION");
    expect(reopen.details).toMatchObject({ from: "completed", to: "active", allowed: [] });

    const blocked = await walk("active", ["blocked"]);
    const blockedToDone = await expectRejected(move(blocked, "completed", 2), 409, "INVALID_TRANSITION");
    expect(blockedToDone.details).toMatchObject({ from: "blocked", to: "completed" });
    expect([...(blockedToDone.details.allowed as string[])].sort()).toEqual(["abandoned", "active"]);

    const active = await createIntent(harness);
    const toDraft = await expectRejected(move(active.id, "draft", 1), 409, "INVALID_TRANSITION");
    expect([...(toDraft.details.allowed as string[])].sort()).toEqual(["abandoned", "blocked", "completed"]);
  });

  it("requires If-Match (428), refuses a stale one (409) and increments the version", async () => {
    const intent = await createIntent(harness);
    // Raw: the types require If-Match.
    expectError(await harness.rawApi(`/intents/${intent.id}/status`, { body: { status: "blocked" } }), 428, "PRECONDITION_REQUIRED");
    expect(await admin.ops.intentsGet({ intent_id: intent.id })).toMatchObject({ status: "active", version: 1 });

    const stale = await expectRejected(move(intent.id, "blocked", 3), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(1);

    const ok = await move(intent.id, "blocked", '"1"');
    expect(ok.status).toBe(200);
    expect(ok.data.version).toBe(2);
    expect(await admin.ops.intentsGet({ intent_id: intent.id })).toMatchObject({ status: "blocked", version: 2 });
  });

  it("lets exactly one of 5 concurrent transitions with If-Match 1 win", async () => {
    const intent = await createIntent(harness);
    const targets: IntentStatus[] = ["blocked", "completed", "abandoned", "blocked", "completed"];
    const results = await Promise.allSettled(targets.map((to) => move(intent.id, to, 1)));
    expect(statusesOf(results).sort()).toEqual([200, 409, 409, 409, 409]);
    refusalsOf(results);
    const winner = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))[0]!;
    const read = await admin.ops.intentsGet({ intent_id: intent.id });
    expect(read).toMatchObject({ version: 2, status: winner.data.status });
    expect((await eventTypes(harness, intent.id)).filter((t) => t === "status_changed")).toHaveLength(1);
  });

  it("moves updated_at on a transition and keeps created_at", async () => {
    const intent = await createIntent(harness);
    (harness.clock as ManualClock).advance(5_000);
    const res = await move(intent.id, "blocked", 1);
    expect(res.data.created_at).toBe(intent.created_at);
    expect(Date.parse(res.data.updated_at)).toBe(Date.parse(intent.updated_at) + 5_000);
  });

  it("refuses an unknown status value with 400", async () => {
    const intent = await createIntent(harness);
    // Raw: the types allow only the statuses of table 3.1.
    expectError(await harness.rawApi(`/intents/${intent.id}/status`, { body: { status: "finished" }, headers: { "If-Match": "1" } }), 400, "VALIDATION_FAILED");
  });
});

describe("assignments: POST/GET/DELETE /intents/{id}/agents", () => {
  it("assigns, lists {agents: [...]} and unassigns, each change logged", async () => {
    const intent = await createIntent(harness);
    const empty = await admin.send("intentsListAgents", { intent_id: intent.id });
    expect(empty.status).toBe(200);
    expect(empty.data).toEqual({ agents: [] });

    const a = await admin.send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: "agent-a", role: "writer" } });
    expect(a.status).toBe(201);
    expect(a.data).toMatchObject({ intent_id: intent.id, agent_id: "agent-a", role: "writer", assigned_by: "admin" });
    expect(a.data.assigned_at).toMatch(TIMESTAMP);
    const b = await admin.send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: "agent-b" } });
    expect(b.status).toBe(201);

    const listed = await admin.send("intentsListAgents", { intent_id: intent.id });
    expect(listed.status).toBe(200);
    expect(listed.data.agents.map((x) => x.agent_id).sort()).toEqual(["agent-a", "agent-b"]);

    const removed = await admin.send("intentsUnassignAgent", { intent_id: intent.id, agent_id: "agent-a" });
    expect(removed.status).toBe(200);
    const after = await admin.ops.intentsListAgents({ intent_id: intent.id });
    expect(after.agents.map((x) => x.agent_id)).toEqual(["agent-b"]);

    const again = await admin.send("intentsUnassignAgent", { intent_id: intent.id, agent_id: "agent-a" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(again).toBeInstanceOf(IntentmeshError);
    expect(again).toMatchObject({ status: 404 });

    const log = await admin.ops.intentsListEvents({ intent_id: intent.id });
    const types = log.events.map((e) => e.event_type);
    expect(types).toEqual(["intent_created", "agent_assigned", "agent_assigned", "agent_unassigned"]);
    expect(log.events[1]!.payload).toMatchObject({ agent_id: "agent-a", role: "writer" });
  });

  it("honours If-Match on assignment: stale 409, nothing assigned", async () => {
    const intent = await createIntent(harness);
    const stale = await expectRejected(admin.send("intentsAssignAgent", { intent_id: intent.id, ifMatch: 9, body: { agent_id: "agent-a" } }), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(1);
    expect(await admin.ops.intentsListAgents({ intent_id: intent.id })).toEqual({ agents: [] });
  });
});
