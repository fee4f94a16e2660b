import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { MAX_COST_AGENTS_PER_INTENT, type ManualClock } from "@intentmesh/contracts";
import { agentHeaders } from "../../../test/support/agents";
import type { BodyOf, Intentmesh } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected, statusOf, TIMESTAMP, UNKNOWN_ID } from "../../../test/support/e2e-helpers";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { recordCostInTx } from "../src/costs/handlers";
import type { IntentsService } from "../src/service";

/**
 * The intents service's costs and budgets (spec 2.6, 4.2): recording, summaries, budget
 * validation, alerts, blocking and lifting it, PUT budget, and recordCostInTx inside another
 * handler's transaction, through the typed client of the route catalogue. The registry runs
 * beside it only because the gateway asks it whom an X-Agent-ID is bound to; sweeps run only
 * when a test calls them. The events over SSE and the embedded database (a whole cluster on
 * PGlite) stay in test/e2e/costs.e2e.test.ts.
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

const clock = () => harness.clock as ManualClock;

type CostBody = BodyOf<"costsRecord">;
type Budget = BodyOf<"costsSetBudget">;

/** A cost body in cents, overridable. */
const cents = (amount: number, overrides: Partial<CostBody> = {}): CostBody => ({ cost_type: "api_call", amount, unit: "cents", ...overrides });
/** A cost body in cents with fields the typed body forbids (sent raw). */
const centsWith = (amount: number, overrides: Record<string, unknown>) => ({ cost_type: "api_call", amount, unit: "cents", ...overrides });

/** Registers an agent (once) and answers the typed client acting as it with the key it is bound to. */
async function actingAgent(agentId: string, key: "agent" | "other" = "agent"): Promise<Intentmesh> {
  await agentHeaders(harness, agentId, key);
  return harness.sdk(key, agentId);
}

const record = (intentId: string, body: CostBody, agent: Intentmesh) => agent.send("costsRecord", { intent_id: intentId, body });
const costsOf = (intentId: string, query: { limit?: number; after?: string } = {}) => harness.sdk().send("costsList", { intent_id: intentId, query });
const readIntent = (intentId: string) => harness.sdk().send("intentsGet", { intent_id: intentId });
const budgetEvents = async (intentId: string) => (await allEvents(harness, intentId)).filter((e) => e.event_type === "budget_alert");
const blockEvents = async (intentId: string) =>
  (await allEvents(harness, intentId)).filter((e) => e.event_type === "status_changed" && e.payload.reason === "budget_exceeded");
const putBudget = (intentId: string, budget: Budget, version: number, key: "operator" | "admin" | "agent" | "coordinator" = "operator") =>
  harness.sdk(key).send("costsSetBudget", { intent_id: intentId, ifMatch: version, body: budget });
const withBudget = (budget: Budget) => createIntent(harness, { constraints: { budget } });

describe("POST /intents/{id}/costs", () => {
  it("records the cost (201) with the fields of 2.6, provider and metadata as given, for the acting agent", async () => {
    const intent = await createIntent(harness);
    const agent = await actingAgent("cost-rec-a");
    const body = { cost_type: "tokens", amount: 1523, unit: "tokens", provider: "openai", metadata: { model: "gpt-x", prompt_tokens: 1200, completion_tokens: 323 } } as const;
    const res = await record(intent.id, body, agent);
    expect(res.status).toBe(201);
    expect(res.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      intent_id: intent.id,
      agent_id: "cost-rec-a",
      cost_type: "tokens",
      amount: 1523,
      unit: "tokens",
      provider: "openai",
      metadata: { model: "gpt-x", prompt_tokens: 1200, completion_tokens: 323 },
      cents: null,
      recorded_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(res.data.recorded_at)).toBe(clock().now().getTime());

    const listed = await costsOf(intent.id);
    expect(listed.status).toBe(200);
    expect(listed.data.costs).toEqual([res.data]);
    // Without a budget, recording appends nothing to the log.
    expect((await allEvents(harness, intent.id)).map((e) => e.event_type)).toEqual(["intent_created"]);
  });

  it("takes agent_id from the body when it agrees with X-Agent-ID, refuses a contradiction, defaults provider to null and metadata to {}", async () => {
    const intent = await createIntent(harness);
    const agent = await actingAgent("cost-body-a");
    const res = await record(intent.id, { ...cents(5), agent_id: "cost-body-a" }, agent);
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ agent_id: "cost-body-a", provider: null, metadata: {}, cents: 5 });
    await agentHeaders(harness, "cost-body-b", "agent");
    await expectRejected(record(intent.id, { ...cents(5), agent_id: "cost-body-b" }, agent), 400, "AGENT_MISMATCH");
  });

  // Bodies the typed request accepts go through the typed client; the others (raw) are sent as they are.
  const typed = (body: CostBody) => ({ typed: body });
  const raw = (body: unknown) => ({ raw: body });
  it.each([
    ["an unknown cost_type", raw(centsWith(1, { cost_type: "electricity" })), "cost_type"],
    ["an unknown unit", raw(centsWith(1, { unit: "dollars" })), "unit"],
    ["a negative amount", typed(cents(-1)), "amount"],
    ["an amount that is not a number", raw(centsWith(1, { amount: "12" })), "amount"],
    ["an amount beyond 10^15", typed(cents(1e16)), "amount"],
    ["a missing amount", raw({ cost_type: "api_call", unit: "cents" }), "amount"],
    ["a missing cost_type", raw({ amount: 1, unit: "cents" }), "cost_type"],
    ["a missing unit", raw({ cost_type: "api_call", amount: 1 }), "unit"],
    ["metadata that is not an object", raw(centsWith(1, { metadata: [1, 2] })), "metadata"],
    ["a provider that is not a string", raw(centsWith(1, { provider: 7 })), "provider"],
    ["cents that differ from a cents amount", typed(cents(10, { cents: 12 })), "cents"],
    ["negative cents", typed({ cost_type: "tokens", amount: 10, unit: "tokens", cents: -1 }), "cents"],
    ["an unknown field", raw(centsWith(1, { currency: "EUR" })), ""],
  ])("refuses %s with 400 VALIDATION_FAILED naming the field, and records nothing", async (_name, sent, field) => {
    const intent = await createIntent(harness);
    const agent = await actingAgent("cost-invalid");
    let details: Record<string, unknown>;
    if ("typed" in sent) {
      details = (await expectRejected(record(intent.id, sent.typed, agent), 400, "VALIDATION_FAILED")).details;
    } else {
      const res = await harness.rawApi(`/intents/${intent.id}/costs`, { body: sent.raw, headers: await agentHeaders(harness, "cost-invalid", "agent"), key: null });
      expectError(res, 400, "VALIDATION_FAILED");
      details = res.body.details;
    }
    if (field) expect(details.issues).toContainEqual(expect.objectContaining({ path: `body.${field}` }));
    expect((await costsOf(intent.id)).data.summary.count).toBe(0);
  });

  it("refuses an infinite amount (1e400 in the JSON) with 400", async () => {
    const intent = await createIntent(harness);
    const headers = await agentHeaders(harness, "cost-infinite", "agent");
    // Raw on purpose: a number JSON can spell and no typed body can hold.
    const res = await harness.rawApi(`/intents/${intent.id}/costs`, {
      rawBody: '{"cost_type":"compute","amount":1e400,"unit":"seconds"}',
      headers: { ...headers, "Content-Type": "application/json" },
      key: null,
    });
    expectError(res, 400, "NUMBER_NOT_REPRESENTABLE");
    expect(res.body.message).toMatch(/1e400/);
  });

  it("answers 404 for an intent that does not exist", async () => {
    const agent = await actingAgent("cost-404");
    await expectRejected(record(UNKNOWN_ID, cents(1), agent), 404, "INTENT_NOT_FOUND");
    await expectRejected(costsOf(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
  });
});

describe("GET /intents/{id}/costs", () => {
  it("sums every record into the summary: total, by_type and by_agent in amount, total_cents and by_agent_cents in cents", async () => {
    const intent = await createIntent(harness);
    const a = await actingAgent("sum-a", "agent");
    const b = await actingAgent("sum-b", "other");
    const bodies: [Intentmesh, CostBody][] = [
      [a, { cost_type: "tokens", amount: 1000, unit: "tokens" }],
      [a, { cost_type: "tokens", amount: 500, unit: "tokens", cents: 0.75 }],
      [a, { cost_type: "api_call", amount: 0.1, unit: "cents" }],
      [b, { cost_type: "api_call", amount: 0.2, unit: "cents" }],
      [b, { cost_type: "compute", amount: 12.5, unit: "seconds", cents: 3 }],
      [b, { cost_type: "custom", amount: 2, unit: "custom" }],
    ];
    for (const [agent, body] of bodies) expect((await record(intent.id, body, agent)).status).toBe(201);

    const res = await costsOf(intent.id);
    expect(res.status).toBe(200);
    expect(res.data.costs).toHaveLength(6);
    expect(res.data.summary).toEqual({
      total: 1514.8,
      by_type: { api_call: 0.3, compute: 12.5, custom: 2, tokens: 1500 },
      by_agent: { "sum-a": 1500.1, "sum-b": 14.7 },
      count: 6,
      // 0.75 + 0.1 + 0.2 + 3, exactly: sums are decimal, not floating point
      total_cents: 4.05,
      by_agent_cents: { "sum-a": 0.85, "sum-b": 3.2 },
    });
    expect(res.data.budget).toEqual({ limits: null, blocked: false });
  });

  it("pages the records oldest first with limit and after, while the summary always covers all of them", async () => {
    const intent = await createIntent(harness);
    const agent = await actingAgent("page-a");
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push((await record(intent.id, cents(i), agent)).data.id);

    const first = await costsOf(intent.id, { limit: 2 });
    expect(first.status).toBe(200);
    expect(first.data.costs.map((c) => c.id)).toEqual(ids.slice(0, 2));
    expect(first.data.has_more).toBe(true);
    expect(first.data.summary).toMatchObject({ count: 5, total: 15, total_cents: 15 });
    const cursor = (page: { next_cursor: string | null }) => page.next_cursor ?? undefined;

    const second = (await costsOf(intent.id, { limit: 2, after: cursor(first.data) })).data;
    expect(second.costs.map((c) => c.id)).toEqual(ids.slice(2, 4));
    const third = (await costsOf(intent.id, { limit: 2, after: cursor(second) })).data;
    expect(third.costs.map((c) => c.id)).toEqual(ids.slice(4));
    expect(third.has_more).toBe(false);
    // An empty page keeps the cursor, so a client can poll for new records.
    const empty = (await costsOf(intent.id, { after: cursor(third) })).data;
    expect(empty).toMatchObject({ costs: [], has_more: false, next_cursor: third.next_cursor });

    await expectRejected(costsOf(intent.id, { after: "abc" }), 400, "VALIDATION_FAILED");
    // A cursor beyond any record's position is a 400, not a bigint overflow in Postgres (500).
    for (const huge of ["99999999999999999999", "9223372036854775807"]) await expectRejected(costsOf(intent.id, { after: huge }), 400, "VALIDATION_FAILED");
    await expectRejected(costsOf(intent.id, { limit: 1001 }), 400, "VALIDATION_FAILED");
  });

  it(`tracks at most ${MAX_COST_AGENTS_PER_INTENT} agents per intent, exactly under concurrency, so the summary always fits in a reply`, async () => {
    const intent = await createIntent(harness);
    // The longest agent ids the contracts allow, so the summary is as large as it can be.
    const agent = (n: number) => `agent-${String(n).padStart(4, "0")}-`.padEnd(200, "x");
    const asAdmin = (agentId: string) => harness.sdk().send("costsRecord", { intent_id: intent.id, body: cents(1, { agent_id: agentId }) });
    const extra = 12;
    const statuses: number[] = [];
    for (let start = 0; start < MAX_COST_AGENTS_PER_INTENT + extra; start += 25) {
      const batch = Array.from({ length: Math.min(25, MAX_COST_AGENTS_PER_INTENT + extra - start) }, (_, i) => statusOf(asAdmin(agent(start + i))));
      statuses.push(...(await Promise.all(batch)));
    }
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX_COST_AGENTS_PER_INTENT);
    expect(statuses.filter((s) => s === 409)).toHaveLength(extra);

    const refused = await expectRejected(asAdmin("one-agent-too-many"), 409, "COST_AGENTS_FULL");
    expect(refused.details).toMatchObject({ limit: MAX_COST_AGENTS_PER_INTENT, agent_id: "one-agent-too-many" });
    // An agent that already has costs still records more, also several at once.
    const known = statuses.findIndex((s) => s === 201);
    expect((await Promise.all([asAdmin(agent(known)), asAdmin(agent(known))])).map((r) => r.status)).toEqual([201, 201]);

    const listed = await costsOf(intent.id, { limit: 1000 });
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.data.summary.by_agent)).toHaveLength(MAX_COST_AGENTS_PER_INTENT);
    expect(Object.keys(listed.data.summary.by_agent_cents)).toHaveLength(MAX_COST_AGENTS_PER_INTENT);
    expect(listed.data.summary).toMatchObject({ count: MAX_COST_AGENTS_PER_INTENT + 2, total_cents: MAX_COST_AGENTS_PER_INTENT + 2 });
    // A refused cost wrote nothing: no record, no total, no event.
    expect(listed.data.costs.some((c) => c.agent_id === "one-agent-too-many")).toBe(false);
    expect(await allEvents(harness, intent.id)).toHaveLength(1);
  });
});

describe("budget validation at intent creation", () => {
  // Budgets the typed request accepts go through the typed client; the others (raw) are sent as they are.
  const typed = (budget: Budget) => ({ typed: budget });
  const raw = (budget: unknown) => ({ raw: budget });
  it.each([
    ["a negative limit", typed({ max_total_cents: -1 })],
    ["a fractional limit", typed({ max_per_agent_cents: 10.5 })],
    ["a limit that is not a number", raw({ max_per_call_cents: "100" })],
    ["a threshold of 0", typed({ alert_threshold_percent: 0 })],
    ["a threshold above 100", typed({ alert_threshold_percent: 101 })],
    ["an unknown field", raw({ max_cents: 100 })],
  ])("refuses %s with 400", async (_name, sent) => {
    let details: Record<string, unknown>;
    if ("typed" in sent) {
      details = (await expectRejected(harness.sdk().ops.intentsCreate({ body: { title: "budgeted", status: "active", constraints: { budget: sent.typed } } }), 400, "VALIDATION_FAILED")).details;
    } else {
      const res = await harness.rawApi("/intents", { body: { title: "budgeted", status: "active", constraints: { budget: sent.raw } } });
      expectError(res, 400, "VALIDATION_FAILED");
      details = res.body.details;
    }
    const issues = Array.isArray(details.issues) ? details.issues : [];
    expect(issues[0]).toMatchObject({ path: expect.stringMatching(/^body\.constraints\.budget/) });
  });

  it("accepts a full budget beside other constraints and keeps it as given", async () => {
    const budget = { max_total_cents: 0, max_per_agent_cents: 500, max_per_call_cents: 100, alert_threshold_percent: 100 };
    const intent = await createIntent(harness, { constraints: { budget, deadline: "friday" } });
    expect(intent.constraints).toEqual({ budget, deadline: "friday" });
  });
});

describe("budget alerts", () => {
  it("emits budget_alert once, when the total reaches exactly the threshold, with the figures", async () => {
    const intent = await withBudget({ max_total_cents: 1000, alert_threshold_percent: 80 });
    const agent = await actingAgent("alert-total");
    expect((await record(intent.id, cents(799), agent)).status).toBe(201);
    expect(await budgetEvents(intent.id)).toEqual([]);

    const crossing = await record(intent.id, cents(1), agent);
    expect(crossing.status).toBe(201);
    const alerts = await budgetEvents(intent.id);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      actor: "alert-total",
      payload: {
        scope: "total",
        agent_id: null,
        threshold_percent: 80,
        limit_cents: 1000,
        threshold_cents: 800,
        spent_cents: 800,
        previous_cents: 799,
        percent_used: 80,
        cost_id: crossing.data.id,
      },
    });
    expect(alerts[0]!.created_at).toMatch(TIMESTAMP);

    for (const amount of [1, 50, 149]) expect((await record(intent.id, cents(amount), agent)).status).toBe(201);
    expect(await budgetEvents(intent.id)).toHaveLength(1);
    // 999 of 1000: not exceeded, still active
    expect((await readIntent(intent.id)).data.status).toBe("active");
  });

  it("emits budget_alert for one agent crossing its share of max_per_agent_cents, and not for the others below it", async () => {
    const intent = await withBudget({ max_per_agent_cents: 100, alert_threshold_percent: 50 });
    const a = await actingAgent("alert-agent-a", "agent");
    const b = await actingAgent("alert-agent-b", "other");
    await record(intent.id, cents(49.99), a);
    await record(intent.id, cents(49), b);
    expect(await budgetEvents(intent.id)).toEqual([]);
    await record(intent.id, cents(0.01), a);
    const alerts = await budgetEvents(intent.id);
    expect(alerts.map((e) => e.payload)).toEqual([
      expect.objectContaining({ scope: "agent", agent_id: "alert-agent-a", limit_cents: 100, threshold_cents: 50, spent_cents: 50, previous_cents: 49.99 }),
    ]);
    await record(intent.id, cents(10), b);
    expect((await budgetEvents(intent.id)).map((e) => e.payload.agent_id)).toEqual(["alert-agent-a", "alert-agent-b"]);
  });

  it("counts only cents: tokens without a cents value count nothing, with one they count that value", async () => {
    const intent = await withBudget({ max_total_cents: 100, alert_threshold_percent: 50 });
    const agent = await actingAgent("alert-units");
    await record(intent.id, { cost_type: "tokens", amount: 1_000_000, unit: "tokens" }, agent);
    expect(await budgetEvents(intent.id)).toEqual([]);
    await record(intent.id, { cost_type: "tokens", amount: 20_000, unit: "tokens", cents: 50 }, agent);
    expect(await budgetEvents(intent.id)).toHaveLength(1);
    expect((await costsOf(intent.id)).data.summary).toMatchObject({ total: 1_020_000, total_cents: 50 });
  });

  it("fires once when concurrent records cross the threshold together, and blocks once when they pass the limit", async () => {
    const intent = await withBudget({ max_total_cents: 100, alert_threshold_percent: 50 });
    const agent = await actingAgent("alert-race");
    const results = await Promise.all(Array.from({ length: 20 }, () => record(intent.id, cents(7), agent)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    expect(await budgetEvents(intent.id)).toHaveLength(1);
    expect(await blockEvents(intent.id)).toHaveLength(1);
    const listed = await costsOf(intent.id);
    expect(listed.data.summary).toMatchObject({ count: 20, total_cents: 140 });
    expect(listed.data.budget).toEqual({ limits: { max_total_cents: 100, alert_threshold_percent: 50 }, blocked: true });
    // Sequence numbers stay gapless under the race.
    const events = await allEvents(harness, intent.id);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_e, i) => i + 1));
  });
});

describe("exceeding the budget", () => {
  it("does not block at exactly max_total_cents, and blocks the record that passes it: blocked, version + 1, intent.status_changed", async () => {
    const intent = await withBudget({ max_total_cents: 1000 });
    const agent = await actingAgent("exceed-total");
    await record(intent.id, cents(1000), agent);
    expect((await readIntent(intent.id)).data).toMatchObject({ status: "active", version: 1 });

    const over = await record(intent.id, cents(0.01), agent);
    expect(over.status).toBe(201);
    const read = await readIntent(intent.id);
    expect(read.data).toMatchObject({ status: "blocked", version: 2 });
    expect(read.headers.get("etag")).toBe('"2"');
    const blocks = await blockEvents(intent.id);
    expect(blocks).toHaveLength(1);
    expect(blocks[0]).toMatchObject({
      actor: "exceed-total",
      payload: {
        from: "active",
        to: "blocked",
        reason: "budget_exceeded",
        version: 2,
        budget: { rule: "max_total_cents", limit_cents: 1000, spent_cents: 1000.01, agent_id: "exceed-total", cost_id: over.data.id },
      },
    });
  });

  it("blocks on one record above max_per_call_cents, not on one exactly at it", async () => {
    const intent = await withBudget({ max_per_call_cents: 100 });
    const agent = await actingAgent("exceed-call");
    await record(intent.id, cents(100), agent);
    expect((await readIntent(intent.id)).data.status).toBe("active");
    await record(intent.id, { cost_type: "tokens", amount: 9000, unit: "tokens", cents: 100.5 }, agent);
    expect((await readIntent(intent.id)).data.status).toBe("blocked");
    expect((await blockEvents(intent.id))[0]!.payload.budget).toMatchObject({ rule: "max_per_call_cents", limit_cents: 100, spent_cents: 100.5 });
  });

  it("blocks when one agent passes max_per_agent_cents, though the intent's total is within every other limit", async () => {
    const intent = await withBudget({ max_per_agent_cents: 50, max_total_cents: 1000 });
    const a = await actingAgent("exceed-agent-a", "agent");
    const b = await actingAgent("exceed-agent-b", "other");
    await record(intent.id, cents(50), a);
    await record(intent.id, cents(50), b);
    expect((await readIntent(intent.id)).data.status).toBe("active");
    await record(intent.id, cents(1), b);
    expect((await readIntent(intent.id)).data.status).toBe("blocked");
    expect((await blockEvents(intent.id))[0]!.payload.budget).toMatchObject({ rule: "max_per_agent_cents", limit_cents: 50, spent_cents: 51, agent_id: "exceed-agent-b" });
  });

  it("still records costs on a blocked intent (they were spent) and refuses agents leases, state writes and a return to active with 403 BUDGET_EXCEEDED", async () => {
    const intent = await withBudget({ max_total_cents: 10 });
    const agent = await actingAgent("blocked-agent");
    // The agent holds a lease from before the block: the block still stops its writes.
    const lease = await agent.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "draft" } });
    expect(lease.status).toBe(201);
    await record(intent.id, cents(11), agent);

    const after = await record(intent.id, cents(5), agent);
    expect(after.status).toBe(201);
    expect((await costsOf(intent.id)).data.summary.total_cents).toBe(16);

    const leaseRes = await expectRejected(agent.ops.intentsAcquireLease({ intent_id: intent.id, body: { scope: "notes" } }), 403, "BUDGET_EXCEEDED");
    expect(leaseRes.message).toMatch(/budget/);
    expect(leaseRes.details).toMatchObject({ intent_id: intent.id, reason: "budget_exceeded" });
    await expectRejected(agent.ops.intentsPatchState({ intent_id: intent.id, ifMatch: 2, body: [{ op: "set", path: "/draft/x", value: 1 }] }), 403, "BUDGET_EXCEEDED");
    await expectRejected(agent.ops.intentsTransition({ intent_id: intent.id, ifMatch: 2, body: { status: "active" } }), 403, "BUDGET_EXCEEDED");
    expect((await readIntent(intent.id)).data).toMatchObject({ status: "blocked", version: 2 });

    // Operators are not stopped by the budget.
    const opWrite = await harness.sdk("operator").send("intentsPatchState", { intent_id: intent.id, ifMatch: 2, body: [{ op: "set", path: "/note", value: "over budget" }] });
    expect(opWrite.status).toBe(200);
  });

  it("lifts the block when an operator returns the intent to active; only a new crossing blocks again", async () => {
    const intent = await withBudget({ max_total_cents: 10, max_per_call_cents: 20 });
    const agent = await actingAgent("resumed-agent");
    await record(intent.id, cents(11), agent);
    const resumed = await harness.sdk("operator").send("intentsTransition", { intent_id: intent.id, ifMatch: 2, body: { status: "active", reason: "accepted the overrun" } });
    expect(resumed.status).toBe(200);
    expect(resumed.data).toMatchObject({ status: "active", version: 3 });

    const lease = await agent.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "work" } });
    expect(lease.status).toBe(201);
    const write = await agent.send("intentsPatchState", { intent_id: intent.id, ifMatch: 3, body: [{ op: "set", path: "/work/x", value: 1 }] });
    expect(write.status).toBe(200);

    // Already past max_total_cents: further records do not cross it again...
    await record(intent.id, cents(5), agent);
    expect((await readIntent(intent.id)).data.status).toBe("active");
    // ...but one record over max_per_call_cents does.
    await record(intent.id, cents(21), agent);
    expect((await readIntent(intent.id)).data.status).toBe("blocked");
    expect((await blockEvents(intent.id)).map((e) => e.payload.budget)).toEqual([expect.objectContaining({ rule: "max_total_cents" }), expect.objectContaining({ rule: "max_per_call_cents" })]);
  });

  it("gives an intent blocked by hand the reason budget_exceeded when its budget is exceeded, so agents stop there too", async () => {
    const intent = await withBudget({ max_total_cents: 10 });
    const agent = await actingAgent("hand-blocked-agent");
    const operator = harness.sdk("operator");
    const lease = (scope: string) => agent.send("intentsAcquireLease", { intent_id: intent.id, body: { scope } });
    const blocked = await operator.send("intentsTransition", { intent_id: intent.id, ifMatch: 1, body: { status: "blocked", reason: "waiting for legal" } });
    expect(blocked.status).toBe(200);
    expect((await lease("a")).status).toBe(201);

    await record(intent.id, cents(11), agent);
    // Still blocked, same version (no status change), no second status event.
    expect((await readIntent(intent.id)).data).toMatchObject({ status: "blocked", version: 2 });
    expect(await blockEvents(intent.id)).toEqual([]);
    expect((await costsOf(intent.id)).data.budget.blocked).toBe(true);
    await expectRejected(lease("b"), 403, "BUDGET_EXCEEDED");

    const resumed = await operator.send("intentsTransition", { intent_id: intent.id, ifMatch: 2, body: { status: "active" } });
    expect(resumed.status).toBe(200);
    expect((await costsOf(intent.id)).data.budget.blocked).toBe(false);
    expect((await lease("b")).status).toBe(201);
  });

  it("ignores budget fields that are not numbers on intents stored before budgets were checked, applying the others", async () => {
    const intent = await createIntent(harness);
    const legacy = { budget: { max_total_cents: "a lot", alert_threshold_percent: 50, max_per_call_cents: 5 } };
    await harness.database.db.execute(sql`update intents.intents set constraints = ${JSON.stringify(legacy)}::jsonb where id = ${intent.id}`);
    const agent = await actingAgent("legacy-agent");
    expect((await record(intent.id, cents(6), agent)).status).toBe(201);
    expect((await readIntent(intent.id)).data.status).toBe("blocked");
    expect((await blockEvents(intent.id))[0]!.payload.budget).toMatchObject({ rule: "max_per_call_cents" });
    expect(await budgetEvents(intent.id)).toEqual([]);
  });

  it("does not block a draft intent (table 3.1 has no draft -> blocked) but still records and alerts", async () => {
    const intent = await createIntent(harness, { status: "draft", constraints: { budget: { max_total_cents: 10, alert_threshold_percent: 50 } } });
    const agent = await actingAgent("draft-agent");
    await record(intent.id, cents(20), agent);
    expect((await readIntent(intent.id)).data).toMatchObject({ status: "draft", version: 1 });
    expect(await budgetEvents(intent.id)).toHaveLength(1);
    expect(await blockEvents(intent.id)).toEqual([]);
  });
});

describe("PUT /intents/{id}/budget", () => {
  it("raising the budget to cover the spend returns a budget-blocked intent to active, in one version, with its events", async () => {
    const intent = await withBudget({ max_total_cents: 100, alert_threshold_percent: 90 });
    const agent = await actingAgent("raise-agent");
    await record(intent.id, cents(150), agent);
    expect((await readIntent(intent.id)).data).toMatchObject({ status: "blocked", version: 2 });

    const notEnough = await putBudget(intent.id, { max_total_cents: 120, alert_threshold_percent: 90 }, 2);
    expect(notEnough.status).toBe(200);
    expect(notEnough.data).toMatchObject({ status: "blocked", version: 3, constraints: { budget: { max_total_cents: 120, alert_threshold_percent: 90 } } });
    expect(notEnough.headers.get("etag")).toBe('"3"');

    const raised = await putBudget(intent.id, { max_total_cents: 150, alert_threshold_percent: 90 }, 3);
    expect(raised.status).toBe(200);
    expect(raised.data).toMatchObject({ status: "active", version: 4, constraints: { budget: { max_total_cents: 150 } } });
    const events = (await allEvents(harness, intent.id)).slice(-3);
    expect(events.map((e) => e.event_type)).toEqual(["intent.budget_updated", "intent.budget_updated", "status_changed"]);
    expect(events[1]).toMatchObject({
      actor: "operator",
      payload: { budget: { max_total_cents: 150, alert_threshold_percent: 90 }, previous: { max_total_cents: 120, alert_threshold_percent: 90 }, version: 4 },
    });
    expect(events[2]!.payload).toEqual({ from: "blocked", to: "active", reason: "budget_raised", version: 4 });

    const lease = await agent.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "*" } });
    expect(lease.status).toBe(201);
    // The next record past the raised limit blocks again.
    await record(intent.id, cents(1), agent);
    expect((await readIntent(intent.id)).data).toMatchObject({ status: "blocked", version: 5 });
  });

  it("an empty budget removes every limit and unblocks; lowering a budget below the spend blocks an active intent", async () => {
    const intent = await withBudget({ max_per_call_cents: 5 });
    const agent = await actingAgent("lower-agent");
    await record(intent.id, cents(6), agent);
    expect((await readIntent(intent.id)).data.status).toBe("blocked");
    const cleared = await putBudget(intent.id, {}, 2, "coordinator");
    expect(cleared.data).toMatchObject({ status: "active", version: 3, constraints: { budget: {} } });

    const lowered = await putBudget(intent.id, { max_per_agent_cents: 5 }, 3, "admin");
    expect(lowered.data).toMatchObject({ status: "blocked", version: 4 });
    const last = (await allEvents(harness, intent.id)).at(-1);
    expect(last).toMatchObject({
      event_type: "status_changed",
      payload: { from: "active", to: "blocked", reason: "budget_exceeded", version: 4, budget: { rule: "max_per_agent_cents", limit_cents: 5, spent_cents: 6 } },
    });
  });

  it("is refused to agents (403), needs If-Match (428), refuses a stale one (409) and an invalid budget (400)", async () => {
    const intent = await withBudget({ max_total_cents: 100 });
    await expectRejected(putBudget(intent.id, { max_total_cents: 1000 }, 1, "agent"), 403, "FORBIDDEN");
    // Raw on purpose: a PUT without If-Match, which the typed request forbids.
    expectError(await harness.rawApi(`/intents/${intent.id}/budget`, { method: "PUT", body: { max_total_cents: 1000 }, key: "operator" }), 428, "PRECONDITION_REQUIRED");
    const stale = await expectRejected(putBudget(intent.id, { max_total_cents: 1000 }, 7), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(1);
    await expectRejected(putBudget(intent.id, { max_total_cents: -5 }, 1), 400, "VALIDATION_FAILED");
    await expectRejected(putBudget(UNKNOWN_ID, { max_total_cents: 5 }, 1), 404, "INTENT_NOT_FOUND");
    expect((await readIntent(intent.id)).data).toMatchObject({ version: 1, constraints: { budget: { max_total_cents: 100 } } });
  });
});

describe("API description", () => {
  it("documents the cost and budget endpoints and the budget schema in /openapi.json", async () => {
    const doc = (await harness.rawApi("/openapi.json", { key: null })).body;
    expect(Object.keys(doc.paths["/api/v1/intents/{intent_id}/costs"]).sort()).toEqual(["get", "post"]);
    expect(Object.keys(doc.paths["/api/v1/intents/{intent_id}/budget"])).toEqual(["put"]);
    expect(Object.keys(doc.components.schemas.Budget.properties).sort()).toEqual(["alert_threshold_percent", "max_per_agent_cents", "max_per_call_cents", "max_total_cents"]);
  });
});

describe("recordCostInTx", () => {
  it("records a cost inside another handler's transaction with the same budget rules, rolled back with it", async () => {
    const intent = await withBudget({ max_total_cents: 10, alert_threshold_percent: 50 });
    const caller = { principal: "agent-1", roles: ["agent" as const], actor: "tx-agent", agent_id: "tx-agent" };
    const now = clock().now();

    await expect(
      harness.database.db.transaction(async (tx) => {
        await recordCostInTx(tx, intent.id, { cost_type: "api_call", amount: 20, unit: "cents" }, caller, now);
        throw new Error("the other write failed");
      }),
    ).rejects.toThrow("the other write failed");
    expect((await costsOf(intent.id)).data.summary.count).toBe(0);
    expect((await readIntent(intent.id)).data.status).toBe("active");

    const { cost, events } = await harness.database.db.transaction((tx) =>
      recordCostInTx(tx, intent.id, { cost_type: "compute", amount: 3, unit: "seconds", cents: 11, provider: "gpu-farm" }, caller, now),
    );
    expect(cost).toMatchObject({ intent_id: intent.id, agent_id: "tx-agent", cost_type: "compute", amount: 3, unit: "seconds", cents: 11, provider: "gpu-farm", metadata: {} });
    expect(events.map((e) => [e.event_type, e.sequence])).toEqual([
      ["budget_alert", 2],
      ["status_changed", 3],
    ]);
    expect((await costsOf(intent.id)).data.costs).toEqual([cost]);
    expect((await readIntent(intent.id)).data).toMatchObject({ status: "blocked", version: 2 });
    await expect(harness.database.db.transaction((tx) => recordCostInTx(tx, UNKNOWN_ID, { cost_type: "api_call", amount: 1, unit: "cents" }, caller, now))).rejects.toMatchObject({
      code: "INTENT_NOT_FOUND",
    });
  });
});
