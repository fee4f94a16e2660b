import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import { intentEventSubject, MAX_PORTFOLIO_MEMBERS, streams, suspensionCommands, type Caller, type ManualClock, type SuspensionRecord } from "@intentmesh/contracts";
import { rowsOf } from "@intentmesh/db";
import type { BodyOf, Intentmesh, ResponseOf } from "@intentmesh/sdk";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";
import { agentHeaders } from "../support/agents";
import { allEvents, createIntent, expectError, expectRejected, keyHeader, TIMESTAMP, uniqueTag, UNKNOWN_ID } from "../support/e2e-helpers";
import { PORTFOLIO_PROJECTION_DURABLE, startPortfolioProjection, type PortfolioProjection } from "../../services/intents/src/portfolios/projection";

let cluster: TestCluster;
const open: SseClient[] = [];
let replacement: PortfolioProjection | undefined;

beforeAll(async () => {
  cluster = await startTestCluster({ ssePingMs: 50 });
});
afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  await replacement?.stop();
  await cluster?.stop();
});

/** The governance service, as it will call the suspension primitive over the bus. */
const governance: Caller = { principal: "governance", roles: ["admin"], actor: "governance", agent_id: null };

const HOUR = 3_600_000;
const clock = () => cluster.clock as ManualClock;
const future = (ms: number) => new Date(cluster.clock.now().getTime() + ms).toISOString();

const admin = () => cluster.sdk();

async function createPortfolio(body: Partial<BodyOf<"portfoliosCreate">> = {}, client: Intentmesh = admin()) {
  const res = await client.send("portfoliosCreate", { body: { name: "launch", ...body } });
  expect(res.status).toBe(201);
  return res.data;
}

async function addMember(portfolioId: string, intentId: string, extra: Omit<BodyOf<"portfoliosAddMember">, "intent_id"> = {}) {
  const res = await admin().send("portfoliosAddMember", { portfolio_id: portfolioId, body: { intent_id: intentId, ...extra } });
  expect(res.status).toBe(201);
  return res.data;
}

async function getPortfolio(portfolioId: string) {
  return admin().ops.portfoliosGet({ portfolio_id: portfolioId });
}

type PortfolioEvent = ResponseOf<"portfoliosListEvents">["events"][number];

async function portfolioEvents(portfolioId: string): Promise<PortfolioEvent[]> {
  return (await admin().ops.portfoliosListEvents({ portfolio_id: portfolioId, query: { limit: 1000 } })).events;
}

const types = (events: { event_type: string }[]) => events.map((e) => e.event_type);

/** Polls until `check` stops throwing (the projection follows member changes within milliseconds). */
async function eventually<T>(check: () => Promise<T>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function setStatus(intentId: string, status: BodyOf<"intentsTransition">["status"]): Promise<void> {
  const current = await admin().ops.intentsGet({ intent_id: intentId });
  const res = await admin().send("intentsTransition", { intent_id: intentId, ifMatch: current.version, body: { status } });
  expect(res.status).toBe(200);
}

/** The suspended intent, its state's `_suspension` read as the record it is. */
async function suspend(intentId: string, suspension: Record<string, unknown> = {}) {
  const intent = await cluster.client.request(suspensionCommands.begin, governance, {
    intent_id: intentId,
    suspension: { question: "Publish now?", response_type: "confirm", fallback_policy: "fail", timeout_seconds: 600, ...suspension } as never,
  });
  return intent as typeof intent & { state: { _suspension: SuspensionRecord } };
}

function endSuspension(intentId: string, end: Record<string, unknown>) {
  return cluster.client.request(suspensionCommands.end, governance, { intent_id: intentId, ...end } as never);
}

async function waitForPortfolioStatus(portfolioId: string, status: string) {
  return eventually(async () => {
    const portfolio = await getPortfolio(portfolioId);
    expect(portfolio.status).toBe(status);
    return portfolio;
  });
}

describe("POST /api/v1/portfolios", () => {
  it("creates an empty portfolio at version 1 with aggregate draft and a portfolio.created event", async () => {
    const due = future(24 * HOUR);
    const res = await admin().send("portfoliosCreate", { body: { name: "Q4 launch", description: "all of it", due_before: due, metadata: { team: "web" } } });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    expect(res.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Q4 launch",
      description: "all of it",
      created_by: "admin",
      status: "draft",
      due_before: new Date(due).toISOString().replace("Z", "+00:00"),
      metadata: { team: "web" },
      member_count: 0,
      status_counts: { draft: 0, active: 0, blocked: 0, completed: 0, abandoned: 0, suspended_awaiting_input: 0 },
      version: 1,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
      members: [],
    });
    const events = await portfolioEvents(res.data.id);
    expect(events).toEqual([
      {
        id: expect.any(String),
        portfolio_id: res.data.id,
        sequence: 1,
        event_type: "portfolio_created",
        actor: "admin",
        payload: expect.objectContaining({ name: "Q4 launch", status: "draft", due_before: res.data.due_before, version: 1 }),
        created_at: expect.stringMatching(TIMESTAMP),
      },
    ]);
  });

  it("refuses a missing name, a due_before that is not a timestamp or not in the future, and unknown fields", async () => {
    // Raw on purpose: a body without the required name, which the typed body forbids.
    expectError(await cluster.api("/portfolios", { body: {} }), 400, "VALIDATION_FAILED");
    await expectRejected(admin().ops.portfoliosCreate({ body: { name: "  " } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin().ops.portfoliosCreate({ body: { name: "x", due_before: "tomorrow" } }), 400, "VALIDATION_FAILED");
    const past = await expectRejected(admin().ops.portfoliosCreate({ body: { name: "x", due_before: future(-1000) } }), 400, "VALIDATION_FAILED");
    expect(past.message).toMatch(/due_before/);
    // Raw on purpose: an unknown field, which the typed body forbids.
    expectError(await cluster.api("/portfolios", { body: { name: "x", status: "active" } }), 400, "VALIDATION_FAILED");
  });

  it("records the acting agent as creator", async () => {
    await agentHeaders(cluster, "pf-creator");
    const portfolio = await createPortfolio({}, cluster.sdk("agent", "pf-creator"));
    expect(portfolio.created_by).toBe("pf-creator");
  });
});

describe("GET /api/v1/portfolios and /portfolios/{id}", () => {
  it("reads a portfolio with ETag; 404 PORTFOLIO_NOT_FOUND for an unknown or malformed id", async () => {
    const portfolio = await createPortfolio();
    const res = await admin().send("portfoliosGet", { portfolio_id: portfolio.id });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"1"');
    expect(res.data).toEqual(portfolio);
    await expectRejected(admin().ops.portfoliosGet({ portfolio_id: UNKNOWN_ID }), 404, "PORTFOLIO_NOT_FOUND");
    await expectRejected(admin().ops.portfoliosGet({ portfolio_id: "not-a-uuid" }), 404, "PORTFOLIO_NOT_FOUND");
  });

  it("lists newest first with created_by and status filters and cursor pagination", async () => {
    const owner = uniqueTag("owner");
    const made = [];
    for (let i = 0; i < 3; i++) {
      made.push(await createPortfolio({ name: `p${i}`, created_by: owner }));
      clock().advance(1000);
    }
    const intent = await createIntent(cluster);
    await addMember(made[0]!.id, intent.id);

    const first = await admin().send("portfoliosList", { query: { created_by: owner, limit: 2 } });
    expect(first.status).toBe(200);
    expect(first.data.portfolios.map((p) => p.name)).toEqual(["p2", "p1"]);
    expect(first.data.has_more).toBe(true);
    const second = await admin().ops.portfoliosList({ query: { created_by: owner, limit: 2, after: first.data.next_cursor } });
    expect(second.portfolios.map((p) => p.name)).toEqual(["p0"]);
    expect(second).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.portfolios[0]).toMatchObject({ status: "active", member_count: 1, status_counts: { active: 1 } });
    expect(second.portfolios[0]).not.toHaveProperty("members");

    const active = await admin().ops.portfoliosList({ query: { created_by: owner, status: "active" } });
    expect(active.portfolios.map((p) => p.name)).toEqual(["p0"]);
    const drafts = await admin().ops.portfoliosList({ query: { created_by: owner, status: "draft,blocked" } });
    expect(drafts.portfolios.map((p) => p.name)).toEqual(["p2", "p1"]);
    await expectRejected(admin().ops.portfoliosList({ query: { status: "busy" } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin().ops.portfoliosList({ query: { after: "garbage" } }), 400, "VALIDATION_FAILED");
  });
});

describe("membership: POST /portfolios/{id}/intents, DELETE /portfolios/{id}/intents/{intentId}", () => {
  it("adds a member: 201, version + 1 in ETag, the member with its status, member_added and the aggregate's change", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    const res = await admin().send("portfoliosAddMember", { portfolio_id: portfolio.id, ifMatch: 1, body: { intent_id: intent.id, role: "lead" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"2"');
    expect(res.data).toMatchObject({ version: 2, status: "active", member_count: 1, status_counts: { active: 1, draft: 0 } });
    expect(res.data.members).toEqual([{ intent_id: intent.id, role: "lead", status: "active", added_by: "admin", added_at: expect.stringMatching(TIMESTAMP) }]);

    const events = await portfolioEvents(portfolio.id);
    expect(types(events)).toEqual(["portfolio_created", "added_to_portfolio", "portfolio.status_changed"]);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect(events[1]!.payload).toEqual({ intent_id: intent.id, role: "lead", intent_status: "active", status: "active", version: 2 });
    expect(events[2]!.payload).toMatchObject({ from: "draft", to: "active", intent_id: intent.id, cause: "added_to_portfolio" });
  });

  it("refuses a duplicate (409 MEMBER_EXISTS), an unknown intent or portfolio (404), a stale If-Match (409) and a bad body (400)", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);
    const add = (portfolioId: string, body: BodyOf<"portfoliosAddMember">, ifMatch?: number) => admin().ops.portfoliosAddMember({ portfolio_id: portfolioId, ifMatch, body });
    await expectRejected(add(portfolio.id, { intent_id: intent.id }), 409, "MEMBER_EXISTS");
    await expectRejected(add(portfolio.id, { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
    await expectRejected(add(UNKNOWN_ID, { intent_id: intent.id }), 404, "PORTFOLIO_NOT_FOUND");
    const other = await createIntent(cluster);
    const stale = await expectRejected(add(portfolio.id, { intent_id: other.id }, 1), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(2);
    await expectRejected(add(portfolio.id, { intent_id: "nope" }), 400, "VALIDATION_FAILED");
    // Nothing of the refused requests was written.
    const after = await getPortfolio(portfolio.id);
    expect(after).toMatchObject({ version: 2, member_count: 1 });
    expect(types(await portfolioEvents(portfolio.id))).toEqual(["portfolio_created", "added_to_portfolio", "portfolio.status_changed"]);
  });

  it("serializes concurrent additions: every member in, one version each, a log without gaps", async () => {
    const portfolio = await createPortfolio();
    const intents = await Promise.all(Array.from({ length: 10 }, () => createIntent(cluster)));
    const results = await Promise.all(intents.map((i) => admin().send("portfoliosAddMember", { portfolio_id: portfolio.id, body: { intent_id: i.id } })));
    expect(results.map((r) => r.status)).toEqual(intents.map(() => 201));
    expect(results.map((r) => r.data.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 2));
    const after = await getPortfolio(portfolio.id);
    expect(after).toMatchObject({ version: 11, member_count: 10, status: "active" });
    const events = await portfolioEvents(portfolio.id);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(types(events).filter((t) => t === "added_to_portfolio")).toHaveLength(10);
    expect(types(events).filter((t) => t === "portfolio.status_changed")).toHaveLength(1);
  });

  it(`refuses a member beyond ${MAX_PORTFOLIO_MEMBERS} with 409 PORTFOLIO_FULL`, async () => {
    const portfolio = await createPortfolio();
    // Fill the portfolio directly: creating a thousand intents over HTTP would only slow the test.
    await cluster.database.db.execute(sql`
      insert into intents.portfolio_members (portfolio_id, intent_id, role, added_by, added_at, intent_status, intent_sequence)
      select ${portfolio.id}, gen_random_uuid(), null, 'filler', now(), 'draft', 1 from generate_series(1, ${MAX_PORTFOLIO_MEMBERS})`);
    const intent = await createIntent(cluster);
    const res = await expectRejected(admin().ops.portfoliosAddMember({ portfolio_id: portfolio.id, body: { intent_id: intent.id } }), 409, "PORTFOLIO_FULL");
    expect(res.details).toMatchObject({ limit: MAX_PORTFOLIO_MEMBERS });
  });

  it("records the acting agent as the one who added the member", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    await agentHeaders(cluster, "pf-adder");
    const res = await cluster.sdk("agent", "pf-adder").send("portfoliosAddMember", { portfolio_id: portfolio.id, body: { intent_id: intent.id } });
    expect(res.status).toBe(201);
    expect(res.data.members[0]!.added_by).toBe("pf-adder");
    expect((await portfolioEvents(portfolio.id))[1]!.actor).toBe("pf-adder");
  });

  it("removes a member: version + 1, member_removed and the aggregate's change; 404 MEMBER_NOT_FOUND when it is not one", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);
    const res = await admin().send("portfoliosRemoveMember", { portfolio_id: portfolio.id, intent_id: intent.id, ifMatch: 2 });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"3"');
    expect(res.data).toMatchObject({ version: 3, status: "draft", member_count: 0, members: [] });
    const events = await portfolioEvents(portfolio.id);
    expect(types(events).slice(3)).toEqual(["removed_from_portfolio", "portfolio.status_changed"]);
    expect(events[3]!.payload).toMatchObject({ intent_id: intent.id, status: "draft", version: 3 });
    expect(events[4]!.payload).toMatchObject({ from: "active", to: "draft" });

    const remove = (portfolioId: string, intentId: string) => admin().ops.portfoliosRemoveMember({ portfolio_id: portfolioId, intent_id: intentId });
    await expectRejected(remove(portfolio.id, intent.id), 404, "MEMBER_NOT_FOUND");
    await expectRejected(remove(portfolio.id, "not-a-uuid"), 404, "INTENT_NOT_FOUND");
    await expectRejected(remove(UNKNOWN_ID, intent.id), 404, "PORTFOLIO_NOT_FOUND");
  });

  it("GET /intents/{id}/portfolios lists the portfolios holding the intent; 404 for an unknown intent", async () => {
    const intent = await createIntent(cluster);
    const none = await admin().send("portfoliosOfIntent", { intent_id: intent.id });
    expect(none.status).toBe(200);
    expect(none.data).toEqual({ portfolios: [], next_cursor: null, has_more: false });
    const a = await createPortfolio({ name: "a" });
    const b = await createPortfolio({ name: "b" });
    await addMember(a.id, intent.id);
    clock().advance(10);
    await addMember(b.id, intent.id);
    const res = await admin().ops.portfoliosOfIntent({ intent_id: intent.id });
    expect(res.portfolios.map((p) => p.id)).toEqual([a.id, b.id]);
    expect(res.portfolios[0]).toMatchObject({ name: "a", member_count: 1, status: "active" });
    await expectRejected(admin().ops.portfoliosOfIntent({ intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
  });

  it("GET /intents/{id}/portfolios pages by count and by bytes, so an intent in many large portfolios never outgrows a reply", async () => {
    const intent = await createIntent(cluster);
    // Ten portfolios of about 60 KiB each (description 20,000 characters of 3 bytes): 600 KiB, past a page's 512 KiB.
    const joined: string[] = [];
    for (let i = 0; i < 10; i++) {
      const portfolio = await createPortfolio({ name: `big-${i}`, description: "€".repeat(20_000), metadata: { blob: "x".repeat(3_000) } });
      await addMember(portfolio.id, intent.id);
      clock().advance(1);
      joined.push(portfolio.id);
    }
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const res = await admin().send("portfoliosOfIntent", { intent_id: intent.id, query: { limit: 3, after } });
      expect(res.status).toBe(200);
      expect(res.data.portfolios.length).toBeLessThanOrEqual(3);
      seen.push(...res.data.portfolios.map((p) => p.id));
      pages++;
      if (!res.data.has_more) break;
      after = res.data.next_cursor ?? undefined;
    }
    expect(seen).toEqual(joined);
    expect(pages).toBe(4);
    // Without a limit a page is cut by bytes: fewer than ten, and has_more says so.
    const whole = await admin().ops.portfoliosOfIntent({ intent_id: intent.id });
    expect(whole.portfolios.length).toBeLessThan(10);
    expect(whole.has_more).toBe(true);
    await expectRejected(admin().ops.portfoliosOfIntent({ intent_id: intent.id, query: { after: "garbage" } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin().ops.portfoliosOfIntent({ intent_id: intent.id, query: { limit: 1001 } }), 400, "VALIDATION_FAILED");
  });
});

describe("PATCH /api/v1/portfolios/{id}", () => {
  it("changes fields with If-Match (428 without, 409 stale), version + 1 and portfolio.updated naming the changes", async () => {
    const portfolio = await createPortfolio();
    // Raw on purpose: a PATCH without If-Match, which the typed request forbids.
    expectError(await cluster.api(`/portfolios/${portfolio.id}`, { method: "PATCH", body: { name: "renamed" } }), 428, "PRECONDITION_REQUIRED");
    const update = (ifMatch: number, body: BodyOf<"portfoliosUpdate">) => admin().send("portfoliosUpdate", { portfolio_id: portfolio.id, ifMatch, body });
    await expectRejected(update(1, {}), 400, "VALIDATION_FAILED");
    const due = future(2 * HOUR);
    const res = await update(1, { name: "renamed", due_before: due });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"2"');
    expect(res.data).toMatchObject({ name: "renamed", version: 2, due_before: new Date(due).toISOString().replace("Z", "+00:00") });
    const events = await portfolioEvents(portfolio.id);
    expect(events[1]).toMatchObject({ event_type: "portfolio.updated", payload: { changes: { name: "renamed", due_before: res.data.due_before }, version: 2 } });
    const stale = await expectRejected(update(1, { name: "again" }), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(2);
    await expectRejected(update(2, { due_before: future(-HOUR) }), 400, "VALIDATION_FAILED");
    const cleared = await update(2, { due_before: null });
    expect(cleared.data.due_before).toBeNull();
  });
});

describe("GET /api/v1/portfolios/{id}/events", () => {
  it("pages the log oldest first by sequence or event id, filters by event_type, and refuses a cursor no log can reach with 400", async () => {
    const portfolio = await createPortfolio();
    for (const name of ["one", "two", "three"]) {
      const current = await getPortfolio(portfolio.id);
      const res = await admin().send("portfoliosUpdate", { portfolio_id: portfolio.id, ifMatch: current.version, body: { name } });
      expect(res.status).toBe(200);
    }
    const all = await portfolioEvents(portfolio.id);
    expect(all.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);

    const page = (query: NonNullable<Parameters<Intentmesh["ops"]["portfoliosListEvents"]>[0]["query"]>) => admin().ops.portfoliosListEvents({ portfolio_id: portfolio.id, query });
    const first = await page({ limit: 2 });
    expect(first).toMatchObject({ next_cursor: "2", has_more: true });
    expect(first.events.map((e) => e.sequence)).toEqual([1, 2]);
    const byId = await page({ after: all[1]!.id });
    expect(byId.events.map((e) => e.sequence)).toEqual([3, 4]);
    const updates = await page({ event_type: "portfolio.updated", after: 2 });
    expect(updates.events.map((e) => e.payload.changes)).toEqual([{ name: "two" }, { name: "three" }]);

    // Numbers past any bigint are refused as a bad cursor, not passed to Postgres (a 500).
    for (const huge of ["99999999999999999999", "9223372036854775808"]) {
      await expectRejected(page({ after: huge }), 400, "VALIDATION_FAILED");
    }
    await expectRejected(page({ after: UNKNOWN_ID }), 400, "VALIDATION_FAILED");
  });
});

describe("aggregate status, driven by the members' intent.status_changed events", () => {
  it("follows members through blocked, active and completed, with member_status_changed carrying from, to and the aggregate", async () => {
    const portfolio = await createPortfolio();
    const a = await createIntent(cluster);
    const b = await createIntent(cluster);
    await addMember(portfolio.id, a.id);
    await addMember(portfolio.id, b.id);

    await setStatus(a.id, "blocked");
    const blocked = await waitForPortfolioStatus(portfolio.id, "blocked");
    expect(blocked.status_counts).toMatchObject({ blocked: 1, active: 1 });
    expect(blocked.members.find((m) => m.intent_id === a.id)?.status).toBe("blocked");
    expect(blocked.version).toBe(3); // derived changes do not bump the version

    await setStatus(a.id, "active");
    await waitForPortfolioStatus(portfolio.id, "active");
    await setStatus(a.id, "completed");
    await setStatus(b.id, "completed");
    await waitForPortfolioStatus(portfolio.id, "completed");

    const events = await portfolioEvents(portfolio.id);
    const memberChanges = events.filter((e) => e.event_type === "portfolio.member_status_changed").map((e) => e.payload);
    expect(memberChanges.map((p) => [p.intent_id, p.from, p.to, p.status])).toEqual([
      [a.id, "active", "blocked", "blocked"],
      [a.id, "blocked", "active", "active"],
      [a.id, "active", "completed", "active"],
      [b.id, "active", "completed", "completed"],
    ]);
    expect(memberChanges[0]).toMatchObject({ intent_event_id: expect.any(String), intent_sequence: 2 });
    const aggregate = events.filter((e) => e.event_type === "portfolio.status_changed").map((e) => [e.payload.from, e.payload.to]);
    expect(aggregate).toEqual([
      ["draft", "active"],
      ["active", "blocked"],
      ["blocked", "active"],
      ["active", "completed"],
    ]);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  });

  it("is draft for draft members only, and active once one of them starts", async () => {
    const portfolio = await createPortfolio();
    const a = await createIntent(cluster, { status: "draft" });
    const added = await addMember(portfolio.id, a.id);
    expect(added.status).toBe("draft");
    await setStatus(a.id, "active");
    await waitForPortfolioStatus(portfolio.id, "active");
  });

  it("is suspended_awaiting_input when any member is suspended, even beside a blocked one; member_suspended and member_resumed", async () => {
    const portfolio = await createPortfolio();
    const a = await createIntent(cluster);
    const b = await createIntent(cluster);
    await addMember(portfolio.id, a.id);
    await addMember(portfolio.id, b.id);
    await setStatus(b.id, "blocked");
    await waitForPortfolioStatus(portfolio.id, "blocked");

    const before = (await portfolioEvents(portfolio.id)).length;
    const suspended = await suspend(a.id);
    const suspensionId = suspended.state._suspension.id;
    const during = await waitForPortfolioStatus(portfolio.id, "suspended_awaiting_input");
    expect(during.status_counts).toMatchObject({ suspended_awaiting_input: 1, blocked: 1 });

    await endSuspension(a.id, { suspension_id: suspensionId, resolution: "responded", response: "yes" });
    await waitForPortfolioStatus(portfolio.id, "blocked");

    const events = await portfolioEvents(portfolio.id);
    const tail = events.slice(before);
    expect(types(tail)).toEqual([
      "portfolio.member_status_changed",
      "portfolio.member_suspended",
      "portfolio.status_changed",
      "portfolio.member_status_changed",
      "portfolio.member_resumed",
      "portfolio.status_changed",
    ]);
    expect(tail[1]!.payload).toMatchObject({ intent_id: a.id, suspension_id: suspensionId, status: "suspended_awaiting_input" });
    expect(tail[1]!.actor).toBe("governance");
    expect(tail[2]!.payload).toMatchObject({ from: "blocked", to: "suspended_awaiting_input" });
    expect(tail[4]!.payload).toMatchObject({ intent_id: a.id, suspension_id: suspensionId, to: "active", status: "blocked" });
    expect(tail[5]!.payload).toMatchObject({ from: "suspended_awaiting_input", to: "blocked" });
  });

  it("applies a change to every portfolio holding the intent, and none to a portfolio it left", async () => {
    const intent = await createIntent(cluster);
    const a = await createPortfolio({ name: "a" });
    const b = await createPortfolio({ name: "b" });
    const left = await createPortfolio({ name: "left" });
    for (const p of [a, b, left]) await addMember(p.id, intent.id);
    expect((await admin().send("portfoliosRemoveMember", { portfolio_id: left.id, intent_id: intent.id })).status).toBe(200);
    await setStatus(intent.id, "blocked");
    await waitForPortfolioStatus(a.id, "blocked");
    await waitForPortfolioStatus(b.id, "blocked");
    // The change reached a and b; the one it left saw nothing of it.
    expect(types(await portfolioEvents(left.id))).not.toContain("portfolio.member_status_changed");
    expect((await getPortfolio(left.id)).status).toBe("draft");
  });
});

describe("the projection is idempotent", () => {
  it("a redelivered intent.status_changed (crash between commit and ack) appends nothing twice", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);

    // Swap the service's consumer for one that fails its first ack of this intent's message, as a crash would.
    const deliveries: string[] = [];
    let failed = false;
    await cluster.intents.portfolioProjection.stop();
    replacement = await startPortfolioProjection(cluster.intents.ctx, cluster.bus, {
      afterCommit: (msg: JsMsg) => {
        if (!msg.subject.includes(intent.id)) return;
        deliveries.push(msg.headers?.get("Nats-Msg-Id") ?? "");
        if (!failed) {
          failed = true;
          throw new Error("crash before the ack");
        }
      },
    });

    await suspend(intent.id);
    await eventually(async () => expect(deliveries.length).toBeGreaterThanOrEqual(2), 10_000);
    expect(new Set(deliveries).size).toBe(1); // the same message, delivered twice

    const events = await portfolioEvents(portfolio.id);
    expect(types(events).filter((t) => t === "portfolio.member_suspended")).toHaveLength(1);
    expect(types(events).filter((t) => t === "portfolio.member_status_changed")).toHaveLength(1);
    expect((await getPortfolio(portfolio.id)).status).toBe("suspended_awaiting_input");
  });

  it("an old status event seen again under another message id changes nothing (members remember the sequence they reflect)", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);
    await setStatus(intent.id, "blocked");
    await waitForPortfolioStatus(portfolio.id, "blocked");
    await setStatus(intent.id, "active");
    await waitForPortfolioStatus(portfolio.id, "active");
    const before = await portfolioEvents(portfolio.id);

    const old = (await allEvents(cluster, intent.id)).find((e) => e.event_type === "status_changed" && e.payload.to === "blocked");
    const msgId = `replayed:${intent.id}`;
    await cluster.bus.js.publish(cluster.bus.subject(intentEventSubject(intent.id, "status_changed")), JSON.stringify(old), { msgID: msgId });
    await eventually(async () => {
      const rows = rowsOf(
        await cluster.database.db.execute(sql`select 1 from intents.inbox where consumer = ${PORTFOLIO_PROJECTION_DURABLE} and message_id = ${msgId}`),
      );
      expect(rows).toHaveLength(1);
    });
    expect(await portfolioEvents(portfolio.id)).toEqual(before);
    expect((await getPortfolio(portfolio.id)).status).toBe("active");
  });
});

describe("suspension primitive on the bus (im.intents.suspension.begin / .end)", () => {
  it("begin moves active -> suspended_awaiting_input: state._suspension, version + 1, intent.suspended and intent.status_changed", async () => {
    const intent = await createIntent(cluster, { state: { draft: "v1" } });
    const suspended = await suspend(intent.id, {
      question: "Which headline?",
      response_type: "choice",
      choices: [{ value: "a", label: "A" }],
      timeout_seconds: undefined,
      retry_policy: { max_attempts: 3, interval_seconds: 600, final_fallback_policy: "complete_with_fallback" },
      fallback_policy: undefined,
      fallback_value: "a",
    });
    const now = cluster.clock.now().getTime();
    expect(suspended).toMatchObject({ status: "suspended_awaiting_input", version: 2, state: { draft: "v1" } });
    expect(suspended.state._suspension).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      question: "Which headline?",
      response_type: "choice",
      fallback_policy: "complete_with_fallback",
      fallback_value: "a",
      suspended_at: expect.stringMatching(TIMESTAMP),
      expires_at: new Date(now + 1800_000).toISOString().replace("Z", "+00:00"),
    });
    const read = await admin().ops.intentsGet({ intent_id: intent.id });
    expect(read).toEqual(suspended);
    const log = await allEvents(cluster, intent.id);
    expect(types(log)).toEqual(["intent_created", "intent.suspended", "status_changed"]);
    expect(log[1]!.payload).toEqual({ suspension: suspended.state._suspension, version: 2 });
    expect(log[2]!.payload).toMatchObject({ from: "active", to: "suspended_awaiting_input", version: 2, suspension_id: suspended.state._suspension.id });
    // The status endpoint cannot leave suspension (table 3.1): only the end primitive does.
    await expectRejected(admin().ops.intentsTransition({ intent_id: intent.id, ifMatch: 2, body: { status: "active" } }), 409, "INVALID_TRANSITION");
  });

  it("begin refuses an intent that is not active (409), a stale if_match (409), an unknown intent (404) and an invalid record (400)", async () => {
    const draft = await createIntent(cluster, { status: "draft" });
    await expect(suspend(draft.id)).rejects.toMatchObject({ code: "INVALID_TRANSITION", status: 409, details: { from: "draft" } });
    const intent = await createIntent(cluster);
    await expect(
      cluster.client.request(suspensionCommands.begin, governance, { intent_id: intent.id, if_match: 7, suspension: { question: "q", response_type: "text", fallback_policy: "fail" } }),
    ).rejects.toMatchObject({ code: "VERSION_MISMATCH", status: 409 });
    await expect(suspend(UNKNOWN_ID)).rejects.toMatchObject({ code: "INTENT_NOT_FOUND", status: 404 });
    await expect(suspend(intent.id, { fallback_policy: undefined })).rejects.toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    await expect(suspend(intent.id, { response_type: "choice" })).rejects.toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    // A second suspension of a suspended intent is not a transition table 3.1 has.
    await suspend(intent.id);
    await expect(suspend(intent.id)).rejects.toMatchObject({ code: "INVALID_TRANSITION", status: 409 });
    expect((await admin().ops.intentsGet({ intent_id: intent.id })).version).toBe(2);
  });

  it("end with the response: back to active, _suspension keeps the record with the response, intent.resumed", async () => {
    const intent = await createIntent(cluster);
    const suspended = await suspend(intent.id);
    const id = suspended.state._suspension.id;
    await expect(endSuspension(intent.id, { suspension_id: UNKNOWN_ID, resolution: "responded", response: "yes" })).rejects.toMatchObject({
      code: "SUSPENSION_MISMATCH",
      status: 409,
    });
    await expect(endSuspension(intent.id, { suspension_id: id, resolution: "responded" })).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    const resumed = await endSuspension(intent.id, { suspension_id: id, resolution: "responded", response: "yes", responded_by: "ops-1" });
    expect(resumed).toMatchObject({ status: "active", version: 3 });
    expect(resumed.state._suspension).toMatchObject({ id, resolution: "responded", response: "yes", responded_by: "ops-1", responded_at: expect.stringMatching(TIMESTAMP) });
    const log = await allEvents(cluster, intent.id);
    expect(types(log).slice(-2)).toEqual(["intent.resumed", "status_changed"]);
    expect(log.at(-2)!.payload).toMatchObject({ suspension_id: id, resolution: "responded", response: "yes", version: 3 });
    expect(log.at(-1)!.payload).toMatchObject({ from: "suspended_awaiting_input", to: "active", reason: "responded", version: 3 });
    await expect(endSuspension(intent.id, { suspension_id: id, resolution: "cancelled" })).rejects.toMatchObject({ code: "NOT_SUSPENDED", status: 409 });
  });

  it("end as expired with the fail fallback abandons the intent with intent.suspension_expired; only expiry may abandon", async () => {
    const intent = await createIntent(cluster);
    const id = (await suspend(intent.id)).state._suspension.id;
    await expect(endSuspension(intent.id, { suspension_id: id, resolution: "cancelled", status: "abandoned" })).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    const ended = await endSuspension(intent.id, { suspension_id: id, resolution: "expired", status: "abandoned" });
    expect(ended).toMatchObject({ status: "abandoned", state: { _suspension: { id, resolution: "expired" } } });
    const log = await allEvents(cluster, intent.id);
    expect(types(log).slice(-2)).toEqual(["intent.suspension_expired", "status_changed"]);
    expect(log.at(-2)!.payload).toMatchObject({ suspension_id: id, fallback_policy: "fail", status: "abandoned" });
  });
});

describe("due_before (spec 8): a member's suspension deadline must not exceed it", () => {
  it("refuses a suspension whose deadline runs past due_before, or that has none; accepts one within it", async () => {
    const portfolio = await createPortfolio({ due_before: future(HOUR) });
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);
    await expect(suspend(intent.id, { timeout_seconds: 7200 })).rejects.toMatchObject({
      code: "SUSPENSION_PAST_DUE_BEFORE",
      status: 409,
      details: { portfolio_id: portfolio.id, intent_id: intent.id },
    });
    await expect(suspend(intent.id, { timeout_seconds: undefined, retry_policy: { max_attempts: 4, interval_seconds: 1200 } })).rejects.toMatchObject({
      code: "SUSPENSION_PAST_DUE_BEFORE",
    });
    await expect(suspend(intent.id, { timeout_seconds: undefined })).rejects.toMatchObject({ code: "SUSPENSION_PAST_DUE_BEFORE" });
    expect(await admin().ops.intentsGet({ intent_id: intent.id })).toMatchObject({ status: "active", version: 1 });
    const ok = await suspend(intent.id, { timeout_seconds: 1800 });
    expect(ok.status).toBe("suspended_awaiting_input");
  });

  it("lets an intent outside any due portfolio suspend without a deadline", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);
    expect((await suspend(intent.id, { timeout_seconds: undefined })).state._suspension.expires_at).toBeNull();
  });

  it("refuses to add a suspended intent whose deadline runs past due_before", async () => {
    const intent = await createIntent(cluster);
    await suspend(intent.id, { timeout_seconds: 7200 });
    const due = await createPortfolio({ due_before: future(HOUR) });
    await expectRejected(admin().ops.portfoliosAddMember({ portfolio_id: due.id, body: { intent_id: intent.id } }), 409, "SUSPENSION_PAST_DUE_BEFORE");
    const later = await createPortfolio({ due_before: future(3 * HOUR) });
    await addMember(later.id, intent.id);
  });

  it("refuses to move due_before before a member's running suspension deadline", async () => {
    const portfolio = await createPortfolio({ due_before: future(3 * HOUR) });
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);
    await suspend(intent.id, { timeout_seconds: 7200 });
    await expectRejected(admin().ops.portfoliosUpdate({ portfolio_id: portfolio.id, ifMatch: 2, body: { due_before: future(HOUR) } }), 409, "SUSPENSION_PAST_DUE_BEFORE");
    expect((await getPortfolio(portfolio.id)).version).toBe(2);
    const fine = await admin().send("portfoliosUpdate", { portfolio_id: portfolio.id, ifMatch: 2, body: { due_before: future(2 * HOUR) } });
    expect(fine.status).toBe(200);
  });
});

/**
 * Holds a transaction open after `work`, as a concurrent writer between its write and its commit,
 * and returns a function that commits it.
 */
async function holdTransaction(work: (tx: any) => Promise<unknown>): Promise<() => Promise<void>> {
  let release!: () => void;
  let ready!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const started = new Promise<void>((resolve) => (ready = resolve));
  const done = cluster.database.db.transaction(async (tx) => {
    await work(tx);
    ready();
    await gate;
  });
  await started;
  return async () => {
    release();
    await done;
  };
}

/** Waits until some statement of this test's database waits for a row lock. */
async function someoneWaitsForALock(): Promise<void> {
  await eventually(async () => {
    const [row] = rowsOf<{ n: number }>(
      await cluster.database.db.execute(
        sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
      ),
    );
    expect(row!.n).toBeGreaterThan(0);
  });
}

describe("due_before checks against concurrent writers (row locks, not snapshots)", () => {
  it("a suspension beginning while due_before is being set waits for it, then is checked against it", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);
    const commit = await holdTransaction((tx) => tx.execute(sql`update intents.portfolios set due_before = ${new Date(future(HOUR))} where id = ${portfolio.id}`));
    const outcome = suspend(intent.id, { timeout_seconds: 7200 }).then(
      () => "suspended",
      (error: { code?: string }) => error.code,
    );
    try {
      await someoneWaitsForALock();
    } finally {
      await commit();
    }
    expect(await outcome).toBe("SUSPENSION_PAST_DUE_BEFORE");
  });

  it("adding an intent while it is being suspended waits for the suspension, then is checked against it", async () => {
    const portfolio = await createPortfolio({ due_before: future(HOUR) });
    const intent = await createIntent(cluster);
    const record = { id: UNKNOWN_ID, expires_at: new Date(future(2 * HOUR)).toISOString() };
    const commit = await holdTransaction((tx) =>
      tx.execute(sql`update intents.intents set status = 'suspended_awaiting_input', state = jsonb_build_object('_suspension', ${JSON.stringify(record)}::jsonb) where id = ${intent.id}`),
    );
    // The assertion is attached at once, so the refusal is never an unhandled rejection while the lock is held.
    const outcome = expectRejected(admin().ops.portfoliosAddMember({ portfolio_id: portfolio.id, body: { intent_id: intent.id } }), 409, "SUSPENSION_PAST_DUE_BEFORE");
    try {
      await someoneWaitsForALock();
    } finally {
      await commit();
    }
    await outcome;

  });
});

describe("GET /api/v1/subscribe/portfolios/{id}", () => {
  async function subscribe(portfolioId: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const client = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/portfolios/${portfolioId}`, { ...keyHeader(), ...headers });
    open.push(client);
    expect(client.status).toBe(200);
    return client;
  }

  it("streams the members' changes live, framed like intent streams, in sequence order", async () => {
    const portfolio = await createPortfolio();
    const a = await createIntent(cluster);
    await addMember(portfolio.id, a.id);
    const sse = await subscribe(portfolio.id);
    const b = await createIntent(cluster);
    await addMember(portfolio.id, b.id);
    await setStatus(b.id, "blocked");
    const suspension = await suspend(a.id);
    await endSuspension(a.id, { suspension_id: suspension.state._suspension.id, resolution: "cancelled" });
    await sse.waitFor((c) => c.events.some((e) => e.event === "portfolio.member_resumed") && c.events.at(-1)?.event === "portfolio.status_changed", 10_000);

    const log = (await portfolioEvents(portfolio.id)).slice(3); // after created, member_added, status_changed
    const frames = sse.frames.filter((f) => f.data !== undefined);
    expect(frames.map((f) => f.id)).toEqual(log.map((e) => e.id));
    frames.forEach((frame, i) => {
      expect(frame.event).toBe(log[i]!.event_type);
      expect(JSON.parse(frame.data!)).toEqual(log[i]);
    });
    expect(frames.map((f) => f.event)).toEqual([
      "added_to_portfolio",
      "portfolio.member_status_changed",
      "portfolio.status_changed",
      "portfolio.member_status_changed",
      "portfolio.member_suspended",
      "portfolio.status_changed",
      "portfolio.member_status_changed",
      "portfolio.member_resumed",
      "portfolio.status_changed",
    ]);
    expect(sse.events.map((e) => e.data.sequence)).toEqual(log.map((e) => e.sequence));
  });

  it("resumes after Last-Event-ID with exactly the missed events, then live ones; sends pings", async () => {
    const portfolio = await createPortfolio();
    const first = await subscribe(portfolio.id);
    const a = await createIntent(cluster);
    await addMember(portfolio.id, a.id);
    await first.waitFor((c) => c.events.length >= 2);
    await first.waitFor((c) => c.frames.some((f) => f.comment === "ping"), 2000);
    const lastId = first.events[1]!.id;
    await first.close();

    await setStatus(a.id, "blocked");
    await waitForPortfolioStatus(portfolio.id, "blocked");
    const resumed = await subscribe(portfolio.id, { "Last-Event-ID": lastId });
    await resumed.waitFor((c) => c.events.length >= 2);
    await setStatus(a.id, "active");
    await resumed.waitFor((c) => c.events.length >= 4);
    const log = await portfolioEvents(portfolio.id);
    expect(resumed.events.map((e) => e.id)).toEqual(log.slice(3).map((e) => e.id));
    expect(resumed.events.map((e) => e.data.sequence)).toEqual([4, 5, 6, 7]);
  });

  it("answers an unknown or malformed portfolio id, and an unknown Last-Event-ID, with JSON errors before any stream", async () => {
    const unknown = await fetch(`${cluster.baseUrl}/api/v1/subscribe/portfolios/${UNKNOWN_ID}`, { headers: { Accept: "text/event-stream", ...keyHeader() } });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { code?: string }).code).toBe("PORTFOLIO_NOT_FOUND");
    const malformed = await fetch(`${cluster.baseUrl}/api/v1/subscribe/portfolios/nope`, { headers: keyHeader() });
    expect(malformed.status).toBe(404);
    await malformed.body?.cancel();
    const portfolio = await createPortfolio();
    const badResume = await fetch(`${cluster.baseUrl}/api/v1/subscribe/portfolios/${portfolio.id}`, { headers: { ...keyHeader(), "Last-Event-ID": UNKNOWN_ID } });
    expect(badResume.status).toBe(400);
    expect(((await badResume.json()) as { code?: string }).code).toBe("VALIDATION_FAILED");
    const noKey = await fetch(`${cluster.baseUrl}/api/v1/subscribe/portfolios/${portfolio.id}`);
    expect(noKey.status).toBe(401);
    await noKey.body?.cancel();
  });
});

describe("stream IM_PORTFOLIOS", () => {
  it("carries each portfolio event once on im.evt.portfolio.<id>.<event_type> with Nats-Msg-Id portfolio:<id>:e<sequence>", async () => {
    const portfolio = await createPortfolio();
    const intent = await createIntent(cluster);
    await addMember(portfolio.id, intent.id);
    const log = await portfolioEvents(portfolio.id);
    const stream = cluster.bus.streamName(streams.portfolios.name);
    /** Everything the stream holds for this portfolio, read from the start by a throwaway consumer. */
    const readAll = async () => {
      const consumer = await cluster.bus.js.consumers.get(stream, {
        filter_subjects: cluster.bus.subject(`im.evt.portfolio.${portfolio.id}.>`),
        deliver_policy: DeliverPolicy.All,
      });
      const out: { subject: string; msgId: string; schema: string; data: any }[] = [];
      const batch = await consumer.fetch({ max_messages: 100, expires: 1000 });
      for await (const msg of batch) {
        out.push({ subject: msg.subject, msgId: msg.headers?.get("Nats-Msg-Id") ?? "", schema: msg.headers?.get("Im-Schema") ?? "", data: msg.json() });
        if (msg.info.pending === 0) break;
      }
      return out;
    };
    const seen = await eventually(async () => {
      const all = await readAll();
      expect(all.length).toBeGreaterThanOrEqual(log.length);
      return all;
    });
    expect(seen.map((m) => m.data)).toEqual(log);
    expect(seen.map((m) => m.subject)).toEqual(log.map((e) => cluster.bus.subject(`im.evt.portfolio.${portfolio.id}.${e.event_type}`)));
    expect(seen.map((m) => m.msgId)).toEqual(log.map((e) => `portfolio:${portfolio.id}:e${e.sequence}`));
    expect(new Set(seen.map((m) => m.schema))).toEqual(new Set(["im.portfolio-event/2"]));
  });

  it("describes the portfolio endpoints in the OpenAPI document", async () => {
    const doc = await cluster.api("/openapi.json");
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        "/api/v1/portfolios",
        "/api/v1/portfolios/{portfolio_id}",
        "/api/v1/portfolios/{portfolio_id}/intents",
        "/api/v1/portfolios/{portfolio_id}/intents/{intent_id}",
        "/api/v1/portfolios/{portfolio_id}/events",
        "/api/v1/intents/{intent_id}/portfolios",
        "/api/v1/subscribe/portfolios/{portfolio_id}",
      ]),
    );
  });
});
