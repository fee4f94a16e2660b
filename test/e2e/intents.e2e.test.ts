import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivedUuid, intentsCommands, type Caller, type ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { createIntent, eventTypes, expectError, TIMESTAMP, uniqueTag } from "../support/e2e-helpers";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const patch = (id: string, body: unknown, ifMatch?: string, headers: Record<string, string> = {}) =>
  cluster.api(`/intents/${id}/state`, { body, headers: ifMatch === undefined ? headers : { "If-Match": ifMatch, ...headers } });
const move = (id: string, status: string, ifMatch?: string | number) =>
  cluster.api(`/intents/${id}/status`, { body: { status }, headers: ifMatch === undefined ? {} : { "If-Match": String(ifMatch) } });

describe("POST /intents and GET /intents/{id}", () => {
  it("creates an intent at version 1 (201) with the fields of 2.1 and reads it back", async () => {
    const res = await cluster.api("/intents", {
      body: { title: "Ship the release", description: "v2", constraints: { budget: { max_total_cents: 100 } }, state: { step: 1 }, confidence: 40 },
      key: "agent",
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    expect(res.body).toMatchObject({
      title: "Ship the release",
      description: "v2",
      created_by: "agent-1",
      status: "draft",
      constraints: { budget: { max_total_cents: 100 } },
      state: { step: 1 },
      confidence: 40,
      version: 1,
    });
    expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(res.body.created_at).toMatch(TIMESTAMP);
    expect(res.body.updated_at).toMatch(TIMESTAMP);

    const read = await cluster.api(`/intents/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it("starts new intents in draft (table 3.1); a body may ask for draft or active, any other status is 400 and writes nothing", async () => {
    const tag = uniqueTag("initial");
    const drafted = await cluster.api("/intents", { body: { title: "d", created_by: tag } });
    expect(drafted.body.status).toBe("draft");
    expect((await cluster.api(`/intents/${drafted.body.id}/events`)).body.events[0].payload).toMatchObject({ status: "draft" });
    const active = await cluster.api("/intents", { body: { title: "a", created_by: tag, status: "active" } });
    expect(active.status).toBe(201);
    expect(active.body.status).toBe("active");
    expect((await cluster.api("/intents", { body: { title: "d2", created_by: tag, status: "draft" } })).body.status).toBe("draft");
    for (const status of ["blocked", "completed", "abandoned", "suspended_awaiting_input", "nonsense"]) {
      const refused = await cluster.api("/intents", { body: { title: "x", created_by: tag, status } });
      expectError(refused, 400, "VALIDATION_FAILED");
      expect(refused.body.message).toContain("draft or active");
    }
    const listed = await cluster.api(`/intents?created_by=${tag}`);
    expect(listed.body.intents).toHaveLength(3);
    // The walkthrough: activate a draft first (If-Match 1), then work on it.
    const activated = await cluster.api(`/intents/${drafted.body.id}/status`, { body: { status: "active" }, headers: { "If-Match": "1" } });
    expect(activated.body).toMatchObject({ status: "active", version: 2 });
  });

  it("defaults description to null, constraints and state to {}, and created_by to the caller", async () => {
    const created = await createIntent(cluster, { title: "minimal" }, "coordinator");
    expect(created).toMatchObject({ description: null, constraints: {}, state: {}, created_by: "coordinator", version: 1 });
  });

  it("refuses a body without a title and constraints that are not an object (400 VALIDATION_FAILED)", async () => {
    const noTitle = await cluster.api("/intents", { body: { description: "x" } });
    expectError(noTitle, 400, "VALIDATION_FAILED");
    expect(noTitle.body.message).toContain("title");
    expectError(await cluster.api("/intents", { body: { title: "x", constraints: ["a"] } }), 400, "VALIDATION_FAILED");
    expectError(await cluster.api("/intents", { body: { title: "x", confidence: 101 } }), 400, "VALIDATION_FAILED");
  });
});

describe("creating under a chosen id (bus only: federation's receive after a crash)", () => {
  const service = (actor: string): Caller => ({ principal: "federation", roles: ["admin"], actor, agent_id: null });

  it("creates once: a repeat by the same creator answers the intent made first, anyone else 409; HTTP cannot choose an id", async () => {
    const id = derivedUuid(`test:${uniqueTag()}`);
    const body = { title: "received", created_by: "did:web:peer.example", status: "active" as const, state: {}, constraints: {} };
    const first = await cluster.client.request(intentsCommands.create, service("did:web:peer.example"), { intent_id: id, body });
    expect(first).toMatchObject({ id, title: "received", version: 1 });
    const again = await cluster.client.request(intentsCommands.create, service("did:web:peer.example"), { intent_id: id, body: { ...body, title: "second try" } });
    expect(again).toMatchObject({ id, title: "received", version: 1 });
    expect(await eventTypes(cluster, id)).toEqual(["intent_created"]);
    await expect(
      cluster.client.request(intentsCommands.create, service("did:web:other.example"), { intent_id: id, body: { ...body, created_by: "did:web:other.example" } }),
    ).rejects.toMatchObject({ code: "INTENT_EXISTS", status: 409 });
    // Through the gateway a client's intent_id is not an id to create under.
    const chosen = derivedUuid(`test:${uniqueTag()}`);
    const viaHttp = await cluster.api("/intents", { method: "POST", body: { title: "x", intent_id: chosen } });
    expect([201, 400]).toContain(viaHttp.status);
    expect((await cluster.api(`/intents/${chosen}`)).status).toBe(404);
  });
});

describe("GET /intents: filters and cursor pagination", () => {
  it("walks all pages of 7 intents with limit 3 without duplicates or gaps", async () => {
    const tag = uniqueTag("page");
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      // Some intents share a creation instant, so the cursor must break ties.
      if (i % 3 === 0) (cluster.clock as ManualClock).advance(1);
      ids.push((await createIntent(cluster, { title: `p${i}`, created_by: tag })).id);
    }
    const seen: string[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    for (let guard = 0; guard < 10; guard++) {
      const res = await cluster.api(`/intents?created_by=${tag}&limit=3${cursor ? `&after=${encodeURIComponent(cursor)}` : ""}`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(["has_more", "intents", "next_cursor"]);
      pages.push(res.body.intents.length);
      seen.push(...res.body.intents.map((i: any) => i.id));
      if (!res.body.has_more) {
        expect(res.body.next_cursor).toBeNull();
        break;
      }
      expect(typeof res.body.next_cursor).toBe("string");
      cursor = res.body.next_cursor;
    }
    expect(pages).toEqual([3, 3, 1]);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...ids].sort());
  });

  it("filters by status (comma list) and created_by", async () => {
    const tag = uniqueTag("filter");
    const draft1 = await createIntent(cluster, { created_by: tag, status: "draft" });
    const draft2 = await createIntent(cluster, { created_by: tag, status: "draft" });
    const active = await createIntent(cluster, { created_by: tag });
    const blocked = await createIntent(cluster, { created_by: tag });
    expect((await move(blocked.id, "blocked", 1)).status).toBe(200);
    await createIntent(cluster, { created_by: uniqueTag("someone-else"), status: "draft" });

    const ids = (res: { body: any }) => (res.body.intents as any[]).map((i) => i.id).sort();

    const mine = await cluster.api(`/intents?created_by=${tag}`);
    expect(ids(mine)).toEqual([draft1.id, draft2.id, active.id, blocked.id].sort());

    const draftOrBlocked = await cluster.api(`/intents?created_by=${tag}&status=draft,blocked`);
    expect(draftOrBlocked.status).toBe(200);
    expect(ids(draftOrBlocked)).toEqual([draft1.id, draft2.id, blocked.id].sort());
    for (const i of draftOrBlocked.body.intents) expect(["draft", "blocked"]).toContain(i.status);

    const onlyActive = await cluster.api(`/intents?created_by=${tag}&status=active`);
    expect(ids(onlyActive)).toEqual([active.id]);

    const allDrafts = await cluster.api(`/intents?status=draft&limit=500`);
    for (const i of allDrafts.body.intents) expect(i.status).toBe("draft");
    expect(allDrafts.body.intents.some((i: any) => i.created_by !== tag)).toBe(true);

    expectError(await cluster.api(`/intents?status=nonsense`), 400, "VALIDATION_FAILED");
  });
});

describe("POST /intents/{id}/state", () => {
  it("accepts {\"patches\": [...]} and a bare array, with append, set and remove", async () => {
    const intent = await createIntent(cluster, { state: { keep: true, drop: 1 } });
    const wrapped = await patch(intent.id, { patches: [{ op: "set", path: "/a", value: { b: 1 } }, { op: "append", path: "/list", value: "x" }] }, "1");
    expect(wrapped.status).toBe(200);
    expect(wrapped.body).toMatchObject({ version: 2, state: { keep: true, drop: 1, a: { b: 1 }, list: ["x"] } });
    expect(wrapped.headers.get("etag")).toBe('"2"');

    const bare = await patch(intent.id, [{ op: "append", path: "/list", value: "y" }, { op: "remove", path: "/drop" }], "2");
    expect(bare.status).toBe(200);
    expect(bare.body.version).toBe(3);
    expect(bare.body.state).toEqual({ keep: true, a: { b: 1 }, list: ["x", "y"] });

    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body.state).toEqual({ keep: true, a: { b: 1 }, list: ["x", "y"] });
    expect(read.body.version).toBe(3);
  });

  it("decodes RFC 6901 escapes (~1 is /, ~0 is ~) and reads a path without a leading slash as if it had one", async () => {
    const intent = await createIntent(cluster);
    const res = await patch(intent.id, [{ op: "set", path: "/a~1b/c~0d", value: 1 }, { op: "set", path: "x/y", value: 2 }, { op: "set", path: "/~01", value: 3 }], "1");
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.state).toEqual({ "a/b": { "c~d": 1 }, x: { y: 2 }, "~1": 3 });
    const again = await patch(intent.id, [{ op: "remove", path: "a~1b/c~0d" }, { op: "set", path: "/x/y", value: 5 }], "2");
    expect(again.status).toBe(200);
    expect(again.body.state).toEqual({ "a/b": {}, x: { y: 5 }, "~1": 3 });
  });

  it("is atomic: a list whose second patch fails answers 400 PATCH_FAILED naming index 1 and changes nothing", async () => {
    const intent = await createIntent(cluster, { state: { n: 1 } });
    const res = await patch(intent.id, [{ op: "set", path: "/n", value: 2 }, { op: "remove", path: "/does/not/exist" }, { op: "set", path: "/m", value: 3 }], "1");
    expectError(res, 400, "PATCH_FAILED");
    expect(res.body.details.index).toBe(1);
    expect(res.body.message).toContain("1");

    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body.state).toEqual({ n: 1 });
    expect(read.body.version).toBe(1);
    expect(read.headers.get("etag")).toBe('"1"');
    expect(await eventTypes(cluster, intent.id)).toEqual(["intent_created"]);
  });

  it("requires If-Match: 428 PRECONDITION_REQUIRED without it, and nothing changes", async () => {
    const intent = await createIntent(cluster);
    const res = await patch(intent.id, [{ op: "set", path: "/a", value: 1 }]);
    expectError(res, 428, "PRECONDITION_REQUIRED");
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body).toMatchObject({ state: {}, version: 1 });
  });

  it("answers a stale If-Match with 409 VERSION_MISMATCH carrying current_version, and nothing changes", async () => {
    const intent = await createIntent(cluster);
    expect((await patch(intent.id, [{ op: "set", path: "/a", value: 1 }], "1")).status).toBe(200);
    const stale = await patch(intent.id, [{ op: "set", path: "/a", value: 99 }], "1");
    expectError(stale, 409, "VERSION_MISMATCH");
    expect(stale.body.current_version).toBe(2);
    const ahead = await patch(intent.id, [{ op: "set", path: "/a", value: 99 }], "5");
    expectError(ahead, 409, "VERSION_MISMATCH");
    expect(ahead.body.current_version).toBe(2);
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body).toMatchObject({ state: { a: 1 }, version: 2 });
  });

  it("lets exactly one of 10 concurrent patches with If-Match 1 win; the other nine get 409", async () => {
    const intent = await createIntent(cluster);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => patch(intent.id, [{ op: "set", path: "/winner", value: i }, { op: "append", path: "/log", value: i }], "1")),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of results.filter((r) => r.status === 409)) {
      expect(r.body.code).toBe("VERSION_MISMATCH");
      expect(r.body.current_version).toBe(2);
    }
    const winner = results.find((r) => r.status === 200)!;
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body.version).toBe(2);
    expect(read.body.state).toEqual({ winner: winner.body.state.winner, log: [winner.body.state.winner] });
    expect(await eventTypes(cluster, intent.id)).toEqual(["intent_created", "state_patched"]);
  });

  it("appends intent.state_patched with the patches and the new version", async () => {
    const intent = await createIntent(cluster);
    await patch(intent.id, [{ op: "set", path: "/a", value: 1 }], "1");
    const log = await cluster.api(`/intents/${intent.id}/events?event_type=state_patched`);
    expect(log.body.events).toHaveLength(1);
    expect(log.body.events[0].payload).toMatchObject({ patches: [{ op: "set", path: "/a", value: 1 }], version: 2 });
  });
});

describe("POST /intents/{id}/status: table 3.1", () => {
  /** Walks a chain of transitions, checking each answer, the version and the event log. */
  async function walk(initial: "draft" | "active", chain: string[]) {
    const intent = await createIntent(cluster, { status: initial });
    expect(intent.status).toBe(initial);
    let version = 1;
    let from: string = initial;
    for (const to of chain) {
      const res = await move(intent.id, to, version);
      expect(res.status, `${from} -> ${to}: ${JSON.stringify(res.body)}`).toBe(200);
      version++;
      expect(res.body).toMatchObject({ status: to, version });
      expect(res.headers.get("etag")).toBe(`"${version}"`);
      from = to;
    }
    const changes = await cluster.api(`/intents/${intent.id}/events?event_type=status_changed`);
    const pairs = changes.body.events.map((e: any) => `${e.payload.from}->${e.payload.to}`);
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
    const draft = await createIntent(cluster, { status: "draft" });
    const res = await move(draft.id, "completed", 1);
    expectError(res, 409, "INVALID_TRANSITION");
    expect(res.body.details.from).toBe("draft");
    expect(res.body.details.to).toBe("completed");
    expect([...res.body.details.allowed].sort()).toEqual(["abandoned", "active"]);
    const read = await cluster.api(`/intents/${draft.id}`);
    expect(read.body).toMatchObject({ status: "draft", version: 1 });

    const done = await walk("active", ["completed"]);
    const reopen = await move(done, "active", 2);
    expectError(reopen, 409, "INVALID_TRANSITION");
    expect(reopen.body.details).toMatchObject({ from: "completed", to: "active", allowed: [] });

    const blocked = await walk("active", ["blocked"]);
    const blockedToDone = await move(blocked, "completed", 2);
    expectError(blockedToDone, 409, "INVALID_TRANSITION");
    expect(blockedToDone.body.details).toMatchObject({ from: "blocked", to: "completed" });
    expect([...blockedToDone.body.details.allowed].sort()).toEqual(["abandoned", "active"]);

    const active = await createIntent(cluster);
    const toDraft = await move(active.id, "draft", 1);
    expectError(toDraft, 409, "INVALID_TRANSITION");
    expect([...toDraft.body.details.allowed].sort()).toEqual(["abandoned", "blocked", "completed"]);
  });

  it("requires If-Match (428), refuses a stale one (409) and increments the version", async () => {
    const intent = await createIntent(cluster);
    expectError(await move(intent.id, "blocked"), 428, "PRECONDITION_REQUIRED");
    expect((await cluster.api(`/intents/${intent.id}`)).body).toMatchObject({ status: "active", version: 1 });

    const stale = await move(intent.id, "blocked", 3);
    expectError(stale, 409, "VERSION_MISMATCH");
    expect(stale.body.current_version).toBe(1);

    const ok = await move(intent.id, "blocked", '"1"');
    expect(ok.status).toBe(200);
    expect(ok.body.version).toBe(2);
    expect((await cluster.api(`/intents/${intent.id}`)).body).toMatchObject({ status: "blocked", version: 2 });
  });

  it("lets exactly one of 5 concurrent transitions with If-Match 1 win", async () => {
    const intent = await createIntent(cluster);
    const targets = ["blocked", "completed", "abandoned", "blocked", "completed"];
    const results = await Promise.all(targets.map((to) => move(intent.id, to, 1)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    const winner = results.find((r) => r.status === 200)!;
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body).toMatchObject({ version: 2, status: winner.body.status });
    expect((await eventTypes(cluster, intent.id)).filter((t) => t === "status_changed")).toHaveLength(1);
  });

  it("moves updated_at on a transition and keeps created_at", async () => {
    const intent = await createIntent(cluster);
    (cluster.clock as ManualClock).advance(5_000);
    const res = await move(intent.id, "blocked", 1);
    expect(res.body.created_at).toBe(intent.created_at);
    expect(Date.parse(res.body.updated_at)).toBe(Date.parse(intent.updated_at) + 5_000);
  });

  it("refuses an unknown status value with 400", async () => {
    const intent = await createIntent(cluster);
    expectError(await move(intent.id, "finished", 1), 400, "VALIDATION_FAILED");
  });
});

describe("assignments: POST/GET/DELETE /intents/{id}/agents", () => {
  it("assigns, lists {agents: [...]} and unassigns, each change logged", async () => {
    const intent = await createIntent(cluster);
    const empty = await cluster.api(`/intents/${intent.id}/agents`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ agents: [] });

    const a = await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: "agent-a", role: "writer" } });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ intent_id: intent.id, agent_id: "agent-a", role: "writer", assigned_by: "admin" });
    expect(a.body.assigned_at).toMatch(TIMESTAMP);
    const b = await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: "agent-b" } });
    expect(b.status).toBe(201);

    const listed = await cluster.api(`/intents/${intent.id}/agents`);
    expect(listed.status).toBe(200);
    expect(listed.body.agents.map((x: any) => x.agent_id).sort()).toEqual(["agent-a", "agent-b"]);

    const removed = await cluster.api(`/intents/${intent.id}/agents/agent-a`, { method: "DELETE" });
    expect(removed.status).toBe(200);
    const after = await cluster.api(`/intents/${intent.id}/agents`);
    expect(after.body.agents.map((x: any) => x.agent_id)).toEqual(["agent-b"]);

    const again = await cluster.api(`/intents/${intent.id}/agents/agent-a`, { method: "DELETE" });
    expect(again.status).toBe(404);

    const log = await cluster.api(`/intents/${intent.id}/events`);
    const types = log.body.events.map((e: any) => e.event_type);
    expect(types).toEqual(["intent_created", "agent_assigned", "agent_assigned", "agent_unassigned"]);
    expect(log.body.events[1].payload).toMatchObject({ agent_id: "agent-a", role: "writer" });
  });

  it("honours If-Match on assignment: stale 409, nothing assigned", async () => {
    const intent = await createIntent(cluster);
    const stale = await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: "agent-a" }, headers: { "If-Match": "9" } });
    expectError(stale, 409, "VERSION_MISMATCH");
    expect(stale.body.current_version).toBe(1);
    expect((await cluster.api(`/intents/${intent.id}/agents`)).body).toEqual({ agents: [] });
  });
});
