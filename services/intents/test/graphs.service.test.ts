import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { IntentmeshError, type BodyOf, type ResponseOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected, UNKNOWN_ID } from "../../../test/support/e2e-helpers";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { READINESS_PROJECTION_DURABLE } from "../src/graph/projection";
import type { IntentsService } from "../src/service";

/**
 * Intent graphs (RFC-0002, docs/graphs.md), driven as the official Python client drives them
 * (openintent/client.py, CLIENTS.md section 7): every graph call the client makes, with its
 * paths, bodies and If-Match, and the shapes its parsers read (`data.get("children", data)` needs
 * an object; Intent.from_dict reads parent_intent_id and depends_on). The graph is the intents
 * service's own; the registry runs beside it only because the gateway asks it whom an X-Agent-ID
 * is bound to, sweeps run only when a test calls them. The intent.ready announcement over SSE
 * stays in test/e2e/graphs.e2e.test.ts.
 */
let harness: ServiceHarness<{ intents: IntentsService; stop(): Promise<void> }>;
let db: pg.Client;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({
      registry: QUIET.registry,
      intents: QUIET.intents,
    }),
  );
  db = new pg.Client({ connectionString: harness.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await harness?.stop();
});

/** The client's create_child_intent body. */
const childBody = (parentId: string, title: string, dependsOn: string[] = []) => ({
  title,
  description: "",
  constraints: {},
  state: {},
  parent_intent_id: parentId,
  depends_on: dependsOn,
});

const admin = () => harness.sdk();

async function child(parentId: string, title: string, dependsOn: string[] = []) {
  // Lists are oldest first: a millisecond apart, the order of creation is the order listed.
  (harness.clock as ManualClock).advance(1);
  const res = await admin().send("graphCreateChild", { intent_id: parentId, body: childBody(parentId, title, dependsOn) });
  expect(res.status).toBe(201);
  return res.data;
}

const get = (id: string) => admin().ops.intentsGet({ intent_id: id });

async function setStatus(id: string, status: BodyOf<"intentsTransition">["status"]) {
  const current = await get(id);
  return admin().send("intentsTransition", { intent_id: id, ifMatch: current.version, body: { status } });
}

async function complete(id: string) {
  if ((await get(id)).status === "draft") expect((await setStatus(id, "active")).status).toBe(200);
  const res = await setStatus(id, "completed");
  expect(res.status).toBe(200);
  return res.data;
}

/** The status (and error code) of a call that may lose a race: either side may be the one refused. */
async function settle(call: Promise<{ status: number }>): Promise<{ status: number; code?: string }> {
  try {
    return { status: (await call).status };
  } catch (error) {
    if (!(error instanceof IntentmeshError)) throw error;
    return { status: error.status, code: error.code };
  }
}

type Intent = ResponseOf<"intentsGet">;
const LISTS = {
  children: "graphChildren",
  descendants: "graphDescendants",
  ancestors: "graphAncestors",
  dependencies: "graphDependencies",
  dependents: "graphDependents",
  ready: "graphReady",
  blocked: "graphBlocked",
} as const;
type ListName = keyof typeof LISTS;

const ids = (list: { id: string }[]) => list.map((i) => i.id);
const list = async (id: string, what: ListName, key: "admin" | "agent" = "admin") => {
  const res = await harness.sdk(key).send(LISTS[what], { intent_id: id });
  expect(res.status).toBe(200);
  const page: Partial<Record<ListName, Intent[]>> & { truncated: boolean } = res.data;
  expect(page.truncated).toBe(false);
  expect(page[what]).toBeInstanceOf(Array);
  return page[what] ?? [];
};

describe("creating intents in a graph", () => {
  it("POST /intents takes the client's parent_intent_id and depends_on and answers them", async () => {
    const parent = await createIntent(harness, { title: "Resolve outage" });
    const upstream = await createIntent(harness, { title: "Diagnose" });
    const res = await admin().send("intentsCreate", { body: { title: "Hotfix", description: "", constraints: {}, state: {}, created_by: "coordinator", parent_intent_id: parent.id, depends_on: [upstream.id] } });
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ parent_intent_id: parent.id, depends_on: [upstream.id], version: 1 });
    expect(await get(res.data.id)).toMatchObject({ parent_intent_id: parent.id, depends_on: [upstream.id] });
    // A root answers the fields too (the client's from_dict reads them).
    expect(parent).toMatchObject({ parent_intent_id: null, depends_on: [] });
    const [created] = await allEvents(harness, res.data.id);
    expect(created!.payload).toMatchObject({ parent_intent_id: parent.id, depends_on: [upstream.id] });
  });

  it("refuses an unknown parent (404), an unknown dependency (404) and a closed parent (409), creating nothing", async () => {
    const count = async () => (await admin().ops.intentsList({ query: { limit: 500 } })).intents.length;
    const before = await count();
    await expectRejected(admin().ops.intentsCreate({ body: { title: "orphan", parent_intent_id: UNKNOWN_ID } }), 404, "INTENT_NOT_FOUND");
    await expectRejected(admin().ops.intentsCreate({ body: { title: "orphan", depends_on: [UNKNOWN_ID] } }), 404, "DEPENDENCY_NOT_FOUND");
    const done = await createIntent(harness, { title: "done" });
    await complete(done.id);
    await expectRejected(admin().ops.graphCreateChild({ intent_id: done.id, body: childBody(done.id, "late") }), 409, "PARENT_CLOSED");
    await expectRejected(admin().ops.intentsCreate({ body: { title: "twice", depends_on: [done.id, done.id] } }), 400, "VALIDATION_FAILED");
    expect(await count()).toBe(before + 1);
  });

  it("create_child_intent: the path's intent is the parent; a body naming another parent is refused", async () => {
    const parent = await createIntent(harness, { title: "parent" });
    const other = await createIntent(harness, { title: "other" });
    const made = await child(parent.id, "first");
    expect(made).toMatchObject({ parent_intent_id: parent.id, depends_on: [], title: "first" });
    // Without parent_intent_id in the body (it is the path's).
    const bare = await admin().send("graphCreateChild", { intent_id: parent.id, body: { title: "bare" } });
    expect(bare.status).toBe(201);
    expect(bare.data.parent_intent_id).toBe(parent.id);
    await expectRejected(admin().ops.graphCreateChild({ intent_id: parent.id, body: childBody(other.id, "wrong") }), 400, "PARENT_MISMATCH");
    await expectRejected(admin().ops.graphCreateChild({ intent_id: UNKNOWN_ID, body: { title: "x" } }), 404, "INTENT_NOT_FOUND");
  });
});

describe("reading the graph", () => {
  it("children, descendants (generation by generation), ancestors (nearest first), dependencies and dependents", async () => {
    const root = await createIntent(harness, { title: "root" });
    const a = await child(root.id, "a");
    const b = await child(root.id, "b", [a.id]);
    const a1 = await child(a.id, "a1");
    const a1x = await child(a1.id, "a1x");
    const c = await child(root.id, "c", [a.id, b.id]);

    expect(ids(await list(root.id, "children"))).toEqual([a.id, b.id, c.id]);
    expect(ids(await list(root.id, "descendants"))).toEqual([a.id, b.id, c.id, a1.id, a1x.id]);
    expect(ids(await list(a1x.id, "ancestors"))).toEqual([a1.id, a.id, root.id]);
    expect(await list(root.id, "ancestors")).toEqual([]);
    expect(ids(await list(c.id, "dependencies"))).toEqual([a.id, b.id]);
    expect(ids(await list(a.id, "dependents"))).toEqual([b.id, c.id]);
    // Full intents, as Intent.from_dict reads them.
    const [first] = await list(root.id, "children");
    expect(first).toMatchObject({ id: a.id, title: "a", status: "draft", version: 1, parent_intent_id: root.id, depends_on: [] });
    for (const operation of [...Object.values(LISTS), "graphGet"] as const) {
      await expectRejected(admin().send(operation, { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
    }
  });

  it("limits a list with ?limit and says it was truncated", async () => {
    const root = await createIntent(harness, { title: "wide" });
    for (let i = 0; i < 3; i++) await child(root.id, `c${i}`);
    const res = await admin().ops.graphChildren({ intent_id: root.id, query: { limit: 2 } });
    expect(res.children).toHaveLength(2);
    expect(res.truncated).toBe(true);
    await expectRejected(admin().ops.graphChildren({ intent_id: root.id, query: { limit: 0 } }), 400, "VALIDATION_FAILED");
  });

  it("ready and blocked list the open children by their dependencies; the graph has nodes, edges and the aggregate status", async () => {
    const root = await createIntent(harness, { title: "incident" });
    const diagnose = await child(root.id, "diagnose");
    const communicate = await child(root.id, "communicate");
    const hotfix = await child(root.id, "hotfix", [diagnose.id]);
    const external = await createIntent(harness, { title: "vendor patch" });
    const deploy = await child(root.id, "deploy", [hotfix.id, external.id]);

    expect(ids(await list(root.id, "ready"))).toEqual([diagnose.id, communicate.id]);
    expect(ids(await list(root.id, "blocked"))).toEqual([hotfix.id, deploy.id]);

    await complete(diagnose.id);
    expect(ids(await list(root.id, "ready"))).toEqual([communicate.id, hotfix.id]);
    expect(ids(await list(root.id, "blocked"))).toEqual([deploy.id]);

    const graph = await admin().ops.graphGet({ intent_id: root.id });
    expect(graph.root_id).toBe(root.id);
    expect(graph.truncated).toBe(false);
    expect(graph.nodes.map((n) => [n.id, n.depth])).toEqual([
      [root.id, 0],
      [diagnose.id, 1],
      [communicate.id, 1],
      [hotfix.id, 1],
      [deploy.id, 1],
      [external.id, -1],
    ]);
    expect(graph.nodes[3]).toMatchObject({ title: "hotfix", status: "draft", parent_intent_id: root.id, parent_id: root.id, depends_on: [diagnose.id] });
    expect(graph.edges).toEqual(
      expect.arrayContaining([
        { from: root.id, to: diagnose.id, type: "parent" },
        { from: diagnose.id, to: hotfix.id, type: "dependency" },
        { from: hotfix.id, to: deploy.id, type: "dependency" },
        { from: external.id, to: deploy.id, type: "dependency" },
      ]),
    );
    expect(graph.edges).toHaveLength(4 + 3);
    expect(graph.aggregate_status).toEqual({
      total: 4,
      by_status: { draft: 3, active: 0, blocked: 0, completed: 1, abandoned: 0, suspended_awaiting_input: 0 },
      completion_percentage: 25,
      blocking_intents: [deploy.id],
      ready_intents: [communicate.id, hotfix.id],
    });
  });

  it("lists only the intents the caller may read (RFC-0011)", async () => {
    const root = await createIntent(harness, { title: "shared" });
    const open = await child(root.id, "open");
    (harness.clock as ManualClock).advance(1); // listed after `open`, as child() does
    const made = await harness.sdk("coordinator").send("graphCreateChild", { intent_id: root.id, body: { title: "private", acl: { default_policy: "closed" } } });
    expect(made.status).toBe(201);
    const closed = made.data;
    expect(ids(await list(root.id, "children", "agent"))).toEqual([open.id]);
    expect(ids(await list(root.id, "descendants", "agent"))).toEqual([open.id]);
    expect(ids(await list(root.id, "ready", "agent"))).toEqual([open.id]);
    const agent = harness.sdk("agent");
    const graph = await agent.ops.graphGet({ intent_id: root.id });
    expect(graph.nodes.map((n) => n.id)).toEqual([root.id, open.id]);
    // The admin key is not bound by ACLs.
    expect(ids(await list(root.id, "children"))).toEqual([open.id, closed.id]);
    // Reading the graph of an intent one may not read is refused.
    await expectRejected(agent.ops.graphChildren({ intent_id: closed.id }), 403, "INTENT_ACCESS_DENIED");
    // Nor may one depend on it.
    const mine = await createIntent(harness, { title: "mine" }, "agent");
    await expectRejected(agent.ops.graphAddDependency({ intent_id: mine.id, ifMatch: 1, body: { dependency_id: closed.id } }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(agent.ops.intentsCreate({ body: { title: "x", depends_on: [closed.id] } }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(agent.ops.intentsCreate({ body: { title: "x", parent_intent_id: closed.id } }), 403, "INTENT_ACCESS_DENIED");
  });
});

describe("dependencies", () => {
  it("add_dependency and remove_dependency: If-Match, version + 1, dependency_added / dependency_removed", async () => {
    const x = await createIntent(harness, { title: "x" });
    const y = await createIntent(harness, { title: "y" });
    // Raw on purpose: an add without If-Match, which the typed request forbids.
    expectError(await harness.rawApi(`/intents/${x.id}/dependencies`, { body: { dependency_id: y.id } }), 428, "PRECONDITION_REQUIRED");
    const addDependency = (ifMatch: number, dependencyId: string) => admin().send("graphAddDependency", { intent_id: x.id, ifMatch, body: { dependency_id: dependencyId } });
    const stale = await expectRejected(addDependency(7, y.id), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(1);

    const added = await addDependency(1, y.id);
    expect(added.status).toBe(200);
    // x was active and y is not completed: x is blocked (RFC-0002), in the same version.
    expect(added.data).toMatchObject({ id: x.id, version: 2, depends_on: [y.id], status: "blocked" });
    expect(added.headers.get("etag")).toBe('"2"');
    await expectRejected(addDependency(2, y.id), 409, "DEPENDENCY_EXISTS");
    await expectRejected(addDependency(2, UNKNOWN_ID), 404, "DEPENDENCY_NOT_FOUND");

    await expectRejected(admin().ops.graphRemoveDependency({ intent_id: x.id, dependency_id: UNKNOWN_ID, ifMatch: 2 }), 404, "DEPENDENCY_NOT_FOUND");
    // Raw on purpose: a removal without If-Match, which the typed request forbids.
    expectError(await harness.rawApi(`/intents/${x.id}/dependencies/${y.id}`, { method: "DELETE" }), 428, "PRECONDITION_REQUIRED");
    const removed = await admin().send("graphRemoveDependency", { intent_id: x.id, dependency_id: y.id, ifMatch: 2 });
    expect(removed.status).toBe(200);
    expect(removed.data).toMatchObject({ version: 3, depends_on: [], status: "active" });

    const events = (await allEvents(harness, x.id)).map((e) => [e.event_type, e.payload]);
    expect(events.slice(1)).toEqual([
      ["dependency_added", { dependency_id: y.id, depends_on: [y.id], version: 2 }],
      ["status_changed", { from: "active", to: "blocked", reason: "dependencies_incomplete", version: 2, incomplete_dependencies: [y.id] }],
      ["dependency_removed", { dependency_id: y.id, depends_on: [], version: 3 }],
      ["status_changed", { from: "blocked", to: "active", reason: "dependencies_completed", version: 3 }],
      // Removing the only dependency, which was not completed, leaves x with none pending: ready.
      ["intent.ready", { dependency_id: y.id, cause: "dependency_removed", depends_on: [], status: "active" }],
    ]);
  });

  it("refuses a dependency that would close a cycle (itself, two, three intents) with 409, writing nothing", async () => {
    const a = await createIntent(harness, { title: "a" });
    const b = await createIntent(harness, { title: "b", depends_on: [a.id] });
    const c = await createIntent(harness, { title: "c", depends_on: [b.id] });
    const dependOn = (dependencyId: string) => admin().ops.graphAddDependency({ intent_id: a.id, ifMatch: 1, body: { dependency_id: dependencyId } });
    await expectRejected(dependOn(a.id), 409, "DEPENDENCY_CYCLE");
    await expectRejected(dependOn(b.id), 409, "DEPENDENCY_CYCLE");
    const three = await expectRejected(dependOn(c.id), 409, "DEPENDENCY_CYCLE");
    expect(three.message).toContain(c.id);
    expect(await get(a.id)).toMatchObject({ version: 1, depends_on: [] });
    expect((await allEvents(harness, a.id)).map((e) => e.event_type)).toEqual(["intent_created"]);
    // A diamond is no cycle.
    const d = await createIntent(harness, { title: "d", depends_on: [b.id, c.id] });
    const ok = await admin().send("graphAddDependency", { intent_id: d.id, ifMatch: 1, body: { dependency_id: a.id } });
    expect(ok.status).toBe(200);
  });

  it("two concurrent additions that together would close a cycle: exactly one wins, every time", async () => {
    for (let round = 0; round < 8; round++) {
      const x = await createIntent(harness, { title: `x${round}` });
      const y = await createIntent(harness, { title: `y${round}` });
      const z = await createIntent(harness, { title: `z${round}`, depends_on: [y.id] });
      // z already depends on y; "x depends on z" and "y depends on x" together close y -> x -> z -> y.
      const results = await Promise.all([
        settle(admin().send("graphAddDependency", { intent_id: x.id, ifMatch: 1, body: { dependency_id: z.id } })),
        settle(admin().send("graphAddDependency", { intent_id: y.id, ifMatch: 1, body: { dependency_id: x.id } })),
      ]);
      const statuses = results.map((r) => r.status).sort();
      expect(statuses, JSON.stringify(results)).toEqual([200, 409]);
      expect(results.find((r) => r.status === 409)!.code).toBe("DEPENDENCY_CYCLE");
    }
  });
});

describe("status rules", () => {
  it("draft -> active with a dependency not completed lands in blocked; a blocked one stays blocked (409); it unblocks when the dependency completes", async () => {
    const parent = await createIntent(harness, { title: "parent" });
    const first = await child(parent.id, "first");
    const second = await child(parent.id, "second", [first.id]);
    const activated = await setStatus(second.id, "active");
    expect(activated.status).toBe(200);
    expect(activated.data).toMatchObject({ status: "blocked", version: 2 });
    const again = await expectRejected(setStatus(second.id, "active"), 409, "GRAPH_INCOMPLETE");
    expect(again.details).toEqual({ intent_id: second.id, incomplete_dependencies: [first.id], open_children: [] });
    // A parent completes only after its children are closed.
    const parentEarly = await expectRejected(setStatus(parent.id, "completed"), 409, "GRAPH_INCOMPLETE");
    expect(parentEarly.details.open_children).toEqual([first.id, second.id]);

    await complete(first.id);
    await vi.waitFor(async () => expect((await get(second.id)).status).toBe("active"), { timeout: 5000, interval: 50 });
    const moves = (await allEvents(harness, second.id)).filter((e) => e.event_type === "status_changed").map((e) => e.payload);
    expect(moves).toEqual([
      { from: "draft", to: "blocked", reason: "dependencies_incomplete", version: 2, incomplete_dependencies: [first.id] },
      { from: "blocked", to: "active", reason: "dependencies_completed", version: 3 },
    ]);
    await complete(second.id);
    await complete(parent.id);
  });

  it("created active with a dependency not completed, an intent is created blocked; adding one to an active intent blocks it; removing it unblocks", async () => {
    const upstream = await createIntent(harness, { title: "upstream" });
    const created = await createIntent(harness, { title: "dependent", status: "active", depends_on: [upstream.id] })!;
    expect(created.status).toBe("blocked");
    expect((await allEvents(harness, created.id))[0]!.payload.status).toBe("blocked");
    const done = await createIntent(harness, { title: "done" });
    await complete(done.id);
    expect((await createIntent(harness, { title: "free", status: "active", depends_on: [done.id] })).status).toBe("active");
    // A manual block is not the server's: completing the dependency does not lift it.
    const manual = await createIntent(harness, { title: "manual", status: "active" });
    expect((await setStatus(manual.id, "blocked")).status).toBe(200);
    const x = await createIntent(harness, { title: "x" });
    const add = await admin().ops.graphAddDependency({ intent_id: manual.id, ifMatch: 2, body: { dependency_id: x.id } });
    expect(add.status).toBe("blocked");
    await complete(x.id);
    await vi.waitFor(async () => expect((await allEvents(harness, manual.id)).some((e) => e.event_type === "intent.ready")).toBe(true), { timeout: 5000, interval: 50 });
    expect((await get(manual.id)).status).toBe("blocked");
  });

  it("a child created while its parent completes: exactly one of the two succeeds, every time", async () => {
    for (let round = 0; round < 8; round++) {
      const parent = await createIntent(harness, { title: `parent ${round}` });
      const [made, completed] = await Promise.all([
        settle(admin().send("graphCreateChild", { intent_id: parent.id, body: childBody(parent.id, "late child") })),
        settle(setStatus(parent.id, "completed")),
      ]);
      const outcome = [made.status, completed.status];
      expect([[201, 409], [409, 200]], JSON.stringify([made, completed])).toContainEqual(outcome);
      if (made.status === 201) expect(completed.code).toBe("GRAPH_INCOMPLETE");
      else expect(made.code).toBe("PARENT_CLOSED");
    }
  });

  it("an abandoned child does not hold its parent; an abandoned dependency holds its dependent", async () => {
    const parent = await createIntent(harness, { title: "parent", status: "active" });
    const dropped = await child(parent.id, "dropped");
    expect((await setStatus(dropped.id, "abandoned")).status).toBe(200);
    const dependent = await createIntent(harness, { title: "dependent", status: "active", depends_on: [dropped.id] });
    expect(dependent.status).toBe("blocked");
    await expectRejected(setStatus(dependent.id, "active"), 409, "GRAPH_INCOMPLETE");
    expect((await setStatus(parent.id, "completed")).status).toBe(200);
  });

  it("two dependencies completing at once announce their dependent ready exactly once", async () => {
    for (let round = 0; round < 4; round++) {
      const a = await createIntent(harness, { title: "a", status: "active" });
      const b = await createIntent(harness, { title: "b", status: "active" });
      const d = await createIntent(harness, { title: "d", depends_on: [a.id, b.id] });
      const done = await Promise.all([setStatus(a.id, "completed"), setStatus(b.id, "completed")]);
      expect(done.map((r) => r.status)).toEqual([200, 200]);
      await vi.waitFor(async () => expect((await allEvents(harness, d.id)).filter((e) => e.event_type === "intent.ready")).toHaveLength(1), { timeout: 5000, interval: 50 });
      // Both completions were applied by the consumer (its inbox holds both): still one announcement.
      await vi.waitFor(
        async () => {
          const { rows } = await db.query("select count(*)::int as n from intents.inbox where consumer = $1 and message_id = any($2::text[])", [
            READINESS_PROJECTION_DURABLE,
            [`intent:${a.id}:e2`, `intent:${b.id}:e2`],
          ]);
          expect(rows[0].n).toBe(2);
        },
        { timeout: 5000, interval: 50 },
      );
      expect((await allEvents(harness, d.id)).filter((e) => e.event_type === "intent.ready")).toHaveLength(1);
      // Created active while a and b were open, d was blocked; it is unblocked once.
      expect((await allEvents(harness, d.id)).filter((e) => e.event_type === "status_changed").map((e) => [e.payload.from, e.payload.to])).toEqual([["blocked", "active"]]);
      expect((await get(d.id)).status).toBe("active");
    }
  });
});
