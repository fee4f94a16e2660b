import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { MAX_COST_AGENTS_PER_INTENT, type ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { agentHeaders } from "../support/agents";
import { allEvents, createIntent, expectError, keyHeader, TIMESTAMP, UNKNOWN_ID } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";
import { recordCostInTx } from "../../services/intents/src/costs/handlers";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;

/** A cost body in cents, overridable. */
const cents = (amount: number, overrides: Record<string, unknown> = {}) => ({ cost_type: "api_call", amount, unit: "cents", ...overrides });

const record = (intentId: string, body: unknown, headers: Record<string, string>) => cluster.api(`/intents/${intentId}/costs`, { body, headers, key: null });
const costsOf = (intentId: string, query = "") => cluster.api(`/intents/${intentId}/costs${query}`);
const readIntent = (intentId: string) => cluster.api(`/intents/${intentId}`);
const budgetEvents = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type === "budget_alert");
const blockEvents = async (intentId: string) =>
  (await allEvents(cluster, intentId)).filter((e) => e.event_type === "status_changed" && e.payload.reason === "budget_exceeded");
const putBudget = (intentId: string, budget: unknown, version: number | null, key: "operator" | "admin" | "agent" | "coordinator" = "operator") =>
  cluster.api(`/intents/${intentId}/budget`, { method: "PUT", body: budget, key, headers: version === null ? {} : { "If-Match": String(version) } });
const withBudget = (budget: Record<string, unknown>) => createIntent(cluster, { constraints: { budget } });

describe("POST /intents/{id}/costs", () => {
  it("records the cost (201) with the fields of 2.6, provider and metadata as given, for the acting agent", async () => {
    const intent = await createIntent(cluster);
    const headers = await agentHeaders(cluster, "cost-rec-a", "agent");
    const body = { cost_type: "tokens", amount: 1523, unit: "tokens", provider: "openai", metadata: { model: "gpt-x", prompt_tokens: 1200, completion_tokens: 323 } };
    const res = await record(intent.id, body, headers);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
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
    expect(Date.parse(res.body.recorded_at)).toBe(clock().now().getTime());

    const listed = await costsOf(intent.id);
    expect(listed.status).toBe(200);
    expect(listed.body.costs).toEqual([res.body]);
    // Without a budget, recording appends nothing to the log.
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type)).toEqual(["intent_created"]);
  });

  it("takes agent_id from the body when it agrees with X-Agent-ID, refuses a contradiction, defaults provider to null and metadata to {}", async () => {
    const intent = await createIntent(cluster);
    const headers = await agentHeaders(cluster, "cost-body-a", "agent");
    const res = await record(intent.id, { ...cents(5), agent_id: "cost-body-a" }, headers);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ agent_id: "cost-body-a", provider: null, metadata: {}, cents: 5 });
    await agentHeaders(cluster, "cost-body-b", "agent");
    expectError(await record(intent.id, { ...cents(5), agent_id: "cost-body-b" }, headers), 400, "AGENT_MISMATCH");
  });

  it.each([
    ["an unknown cost_type", cents(1, { cost_type: "electricity" }), "cost_type"],
    ["an unknown unit", cents(1, { unit: "dollars" }), "unit"],
    ["a negative amount", cents(-1), "amount"],
    ["an amount that is not a number", cents(1, { amount: "12" }), "amount"],
    ["an amount beyond 10^15", cents(1e16), "amount"],
    ["a missing amount", { cost_type: "api_call", unit: "cents" }, "amount"],
    ["a missing cost_type", { amount: 1, unit: "cents" }, "cost_type"],
    ["a missing unit", { cost_type: "api_call", amount: 1 }, "unit"],
    ["metadata that is not an object", cents(1, { metadata: [1, 2] }), "metadata"],
    ["a provider that is not a string", cents(1, { provider: 7 }), "provider"],
    ["cents that differ from a cents amount", cents(10, { cents: 12 }), "cents"],
    ["negative cents", { cost_type: "tokens", amount: 10, unit: "tokens", cents: -1 }, "cents"],
    ["an unknown field", cents(1, { currency: "EUR" }), ""],
  ])("refuses %s with 400 VALIDATION_FAILED naming the field, and records nothing", async (_name, body, field) => {
    const intent = await createIntent(cluster);
    const headers = await agentHeaders(cluster, "cost-invalid", "agent");
    const res = await record(intent.id, body, headers);
    expectError(res, 400, "VALIDATION_FAILED");
    if (field) expect(res.body.details.issues.map((i: any) => i.path)).toContain(`body.${field}`);
    expect((await costsOf(intent.id)).body.summary.count).toBe(0);
  });

  it("refuses an infinite amount (1e400 in the JSON) with 400", async () => {
    const intent = await createIntent(cluster);
    const headers = await agentHeaders(cluster, "cost-infinite", "agent");
    const res = await cluster.api(`/intents/${intent.id}/costs`, {
      rawBody: '{"cost_type":"compute","amount":1e400,"unit":"seconds"}',
      headers: { ...headers, "Content-Type": "application/json" },
      key: null,
    });
    expectError(res, 400, "NUMBER_NOT_REPRESENTABLE");
    expect(res.body.message).toMatch(/1e400/);
  });

  it("answers 404 for an intent that does not exist", async () => {
    const headers = await agentHeaders(cluster, "cost-404", "agent");
    expectError(await record(UNKNOWN_ID, cents(1), headers), 404, "INTENT_NOT_FOUND");
    expectError(await costsOf(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
  });
});

describe("GET /intents/{id}/costs", () => {
  it("sums every record into the summary: total, by_type and by_agent in amount, total_cents and by_agent_cents in cents", async () => {
    const intent = await createIntent(cluster);
    const a = await agentHeaders(cluster, "sum-a", "agent");
    const b = await agentHeaders(cluster, "sum-b", "other");
    const bodies: [Record<string, string>, unknown][] = [
      [a, { cost_type: "tokens", amount: 1000, unit: "tokens" }],
      [a, { cost_type: "tokens", amount: 500, unit: "tokens", cents: 0.75 }],
      [a, { cost_type: "api_call", amount: 0.1, unit: "cents" }],
      [b, { cost_type: "api_call", amount: 0.2, unit: "cents" }],
      [b, { cost_type: "compute", amount: 12.5, unit: "seconds", cents: 3 }],
      [b, { cost_type: "custom", amount: 2, unit: "custom" }],
    ];
    for (const [headers, body] of bodies) expect((await record(intent.id, body, headers)).status).toBe(201);

    const res = await costsOf(intent.id);
    expect(res.status).toBe(200);
    expect(res.body.costs).toHaveLength(6);
    expect(res.body.summary).toEqual({
      total: 1514.8,
      by_type: { api_call: 0.3, compute: 12.5, custom: 2, tokens: 1500 },
      by_agent: { "sum-a": 1500.1, "sum-b": 14.7 },
      count: 6,
      // 0.75 + 0.1 + 0.2 + 3, exactly: sums are decimal, not floating point
      total_cents: 4.05,
      by_agent_cents: { "sum-a": 0.85, "sum-b": 3.2 },
    });
    expect(res.body.budget).toEqual({ limits: null, blocked: false });
  });

  it("pages the records oldest first with limit and after, while the summary always covers all of them", async () => {
    const intent = await createIntent(cluster);
    const headers = await agentHeaders(cluster, "page-a", "agent");
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push((await record(intent.id, cents(i), headers)).body.id);

    const first = await costsOf(intent.id, "?limit=2");
    expect(first.status).toBe(200);
    expect(first.body.costs.map((c: any) => c.id)).toEqual(ids.slice(0, 2));
    expect(first.body.has_more).toBe(true);
    expect(first.body.summary).toMatchObject({ count: 5, total: 15, total_cents: 15 });

    const second = await costsOf(intent.id, `?limit=2&after=${first.body.next_cursor}`);
    expect(second.body.costs.map((c: any) => c.id)).toEqual(ids.slice(2, 4));
    const third = await costsOf(intent.id, `?limit=2&after=${second.body.next_cursor}`);
    expect(third.body.costs.map((c: any) => c.id)).toEqual(ids.slice(4));
    expect(third.body.has_more).toBe(false);
    // An empty page keeps the cursor, so a client can poll for new records.
    const empty = await costsOf(intent.id, `?after=${third.body.next_cursor}`);
    expect(empty.body).toMatchObject({ costs: [], has_more: false, next_cursor: third.body.next_cursor });

    expectError(await costsOf(intent.id, "?after=abc"), 400, "VALIDATION_FAILED");
    // A cursor beyond any record's position is a 400, not a bigint overflow in Postgres (500).
    for (const huge of ["99999999999999999999", "9223372036854775807"]) expectError(await costsOf(intent.id, `?after=${huge}`), 400, "VALIDATION_FAILED");
    expectError(await costsOf(intent.id, "?limit=1001"), 400, "VALIDATION_FAILED");
  });

  it(`tracks at most ${MAX_COST_AGENTS_PER_INTENT} agents per intent, exactly under concurrency, so the summary always fits in a reply`, async () => {
    const intent = await createIntent(cluster);
    // The longest agent ids the contracts allow, so the summary is as large as it can be.
    const agent = (n: number) => `agent-${String(n).padStart(4, "0")}-`.padEnd(200, "x");
    const asAdmin = (agentId: string) => cluster.api(`/intents/${intent.id}/costs`, { body: cents(1, { agent_id: agentId }) });
    const extra = 12;
    const statuses: number[] = [];
    for (let start = 0; start < MAX_COST_AGENTS_PER_INTENT + extra; start += 25) {
      const batch = Array.from({ length: Math.min(25, MAX_COST_AGENTS_PER_INTENT + extra - start) }, (_, i) => asAdmin(agent(start + i)));
      for (const res of await Promise.all(batch)) statuses.push(res.status);
    }
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX_COST_AGENTS_PER_INTENT);
    expect(statuses.filter((s) => s === 409)).toHaveLength(extra);

    const refused = await asAdmin("one-agent-too-many");
    expectError(refused, 409, "COST_AGENTS_FULL");
    expect(refused.body.details).toMatchObject({ limit: MAX_COST_AGENTS_PER_INTENT, agent_id: "one-agent-too-many" });
    // An agent that already has costs still records more, also several at once.
    const known = statuses.findIndex((s) => s === 201);
    expect((await Promise.all([asAdmin(agent(known)), asAdmin(agent(known))])).map((r) => r.status)).toEqual([201, 201]);

    const listed = await costsOf(intent.id, "?limit=1000");
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body.summary.by_agent)).toHaveLength(MAX_COST_AGENTS_PER_INTENT);
    expect(Object.keys(listed.body.summary.by_agent_cents)).toHaveLength(MAX_COST_AGENTS_PER_INTENT);
    expect(listed.body.summary).toMatchObject({ count: MAX_COST_AGENTS_PER_INTENT + 2, total_cents: MAX_COST_AGENTS_PER_INTENT + 2 });
    // A refused cost wrote nothing: no record, no total, no event.
    expect(listed.body.costs.some((c: any) => c.agent_id === "one-agent-too-many")).toBe(false);
    expect(await allEvents(cluster, intent.id)).toHaveLength(1);
  });
});

describe("budget validation at intent creation", () => {
  it.each([
    ["a negative limit", { max_total_cents: -1 }],
    ["a fractional limit", { max_per_agent_cents: 10.5 }],
    ["a limit that is not a number", { max_per_call_cents: "100" }],
    ["a threshold of 0", { alert_threshold_percent: 0 }],
    ["a threshold above 100", { alert_threshold_percent: 101 }],
    ["an unknown field", { max_cents: 100 }],
  ])("refuses %s with 400", async (_name, budget) => {
    const res = await cluster.api("/intents", { body: { title: "budgeted", status: "active", constraints: { budget } } });
    expectError(res, 400, "VALIDATION_FAILED");
    expect(res.body.details.issues[0].path).toMatch(/^body\.constraints\.budget/);
  });

  it("accepts a full budget beside other constraints and keeps it as given", async () => {
    const budget = { max_total_cents: 0, max_per_agent_cents: 500, max_per_call_cents: 100, alert_threshold_percent: 100 };
    const intent = await createIntent(cluster, { constraints: { budget, deadline: "friday" } });
    expect(intent.constraints).toEqual({ budget, deadline: "friday" });
  });
});

describe("budget alerts", () => {
  it("emits budget_alert once, when the total reaches exactly the threshold, with the figures", async () => {
    const intent = await withBudget({ max_total_cents: 1000, alert_threshold_percent: 80 });
    const headers = await agentHeaders(cluster, "alert-total", "agent");
    expect((await record(intent.id, cents(799), headers)).status).toBe(201);
    expect(await budgetEvents(intent.id)).toEqual([]);

    const crossing = await record(intent.id, cents(1), headers);
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
        cost_id: crossing.body.id,
      },
    });
    expect(alerts[0].created_at).toMatch(TIMESTAMP);

    for (const amount of [1, 50, 149]) expect((await record(intent.id, cents(amount), headers)).status).toBe(201);
    expect(await budgetEvents(intent.id)).toHaveLength(1);
    // 999 of 1000: not exceeded, still active
    expect((await readIntent(intent.id)).body.status).toBe("active");
  });

  it("emits budget_alert for one agent crossing its share of max_per_agent_cents, and not for the others below it", async () => {
    const intent = await withBudget({ max_per_agent_cents: 100, alert_threshold_percent: 50 });
    const a = await agentHeaders(cluster, "alert-agent-a", "agent");
    const b = await agentHeaders(cluster, "alert-agent-b", "other");
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
    const headers = await agentHeaders(cluster, "alert-units", "agent");
    await record(intent.id, { cost_type: "tokens", amount: 1_000_000, unit: "tokens" }, headers);
    expect(await budgetEvents(intent.id)).toEqual([]);
    await record(intent.id, { cost_type: "tokens", amount: 20_000, unit: "tokens", cents: 50 }, headers);
    expect(await budgetEvents(intent.id)).toHaveLength(1);
    expect((await costsOf(intent.id)).body.summary).toMatchObject({ total: 1_020_000, total_cents: 50 });
  });

  it("fires once when concurrent records cross the threshold together, and blocks once when they pass the limit", async () => {
    const intent = await withBudget({ max_total_cents: 100, alert_threshold_percent: 50 });
    const headers = await agentHeaders(cluster, "alert-race", "agent");
    const results = await Promise.all(Array.from({ length: 20 }, () => record(intent.id, cents(7), headers)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    expect(await budgetEvents(intent.id)).toHaveLength(1);
    expect(await blockEvents(intent.id)).toHaveLength(1);
    const listed = await costsOf(intent.id);
    expect(listed.body.summary).toMatchObject({ count: 20, total_cents: 140 });
    expect(listed.body.budget).toEqual({ limits: { max_total_cents: 100, alert_threshold_percent: 50 }, blocked: true });
    // Sequence numbers stay gapless under the race.
    const events = await allEvents(cluster, intent.id);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_e, i) => i + 1));
  });
});

describe("exceeding the budget", () => {
  it("does not block at exactly max_total_cents, and blocks the record that passes it: blocked, version + 1, intent.status_changed", async () => {
    const intent = await withBudget({ max_total_cents: 1000 });
    const headers = await agentHeaders(cluster, "exceed-total", "agent");
    await record(intent.id, cents(1000), headers);
    expect((await readIntent(intent.id)).body).toMatchObject({ status: "active", version: 1 });

    const over = await record(intent.id, cents(0.01), headers);
    expect(over.status).toBe(201);
    const read = await readIntent(intent.id);
    expect(read.body).toMatchObject({ status: "blocked", version: 2 });
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
        budget: { rule: "max_total_cents", limit_cents: 1000, spent_cents: 1000.01, agent_id: "exceed-total", cost_id: over.body.id },
      },
    });
  });

  it("blocks on one record above max_per_call_cents, not on one exactly at it", async () => {
    const intent = await withBudget({ max_per_call_cents: 100 });
    const headers = await agentHeaders(cluster, "exceed-call", "agent");
    await record(intent.id, cents(100), headers);
    expect((await readIntent(intent.id)).body.status).toBe("active");
    await record(intent.id, { cost_type: "tokens", amount: 9000, unit: "tokens", cents: 100.5 }, headers);
    expect((await readIntent(intent.id)).body.status).toBe("blocked");
    expect((await blockEvents(intent.id))[0].payload.budget).toMatchObject({ rule: "max_per_call_cents", limit_cents: 100, spent_cents: 100.5 });
  });

  it("blocks when one agent passes max_per_agent_cents, though the intent's total is within every other limit", async () => {
    const intent = await withBudget({ max_per_agent_cents: 50, max_total_cents: 1000 });
    const a = await agentHeaders(cluster, "exceed-agent-a", "agent");
    const b = await agentHeaders(cluster, "exceed-agent-b", "other");
    await record(intent.id, cents(50), a);
    await record(intent.id, cents(50), b);
    expect((await readIntent(intent.id)).body.status).toBe("active");
    await record(intent.id, cents(1), b);
    expect((await readIntent(intent.id)).body.status).toBe("blocked");
    expect((await blockEvents(intent.id))[0].payload.budget).toMatchObject({ rule: "max_per_agent_cents", limit_cents: 50, spent_cents: 51, agent_id: "exceed-agent-b" });
  });

  it("still records costs on a blocked intent (they were spent) and refuses agents leases, state writes and a return to active with 403 BUDGET_EXCEEDED", async () => {
    const intent = await withBudget({ max_total_cents: 10 });
    const headers = await agentHeaders(cluster, "blocked-agent", "agent");
    // The agent holds a lease from before the block: the block still stops its writes.
    const lease = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "draft" }, headers, key: null });
    expect(lease.status).toBe(201);
    await record(intent.id, cents(11), headers);

    const after = await record(intent.id, cents(5), headers);
    expect(after.status).toBe(201);
    expect((await costsOf(intent.id)).body.summary.total_cents).toBe(16);

    const leaseRes = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "notes" }, headers, key: null });
    expectError(leaseRes, 403, "BUDGET_EXCEEDED");
    expect(leaseRes.body.message).toMatch(/budget/);
    expect(leaseRes.body.details).toMatchObject({ intent_id: intent.id, reason: "budget_exceeded" });
    const write = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/draft/x", value: 1 }], headers: { ...headers, "If-Match": "2" }, key: null });
    expectError(write, 403, "BUDGET_EXCEEDED");
    const resume = await cluster.api(`/intents/${intent.id}/status`, { body: { status: "active" }, headers: { ...headers, "If-Match": "2" }, key: null });
    expectError(resume, 403, "BUDGET_EXCEEDED");
    expect((await readIntent(intent.id)).body).toMatchObject({ status: "blocked", version: 2 });

    // Operators are not stopped by the budget.
    const opWrite = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/note", value: "over budget" }], headers: { "If-Match": "2" }, key: "operator" });
    expect(opWrite.status, JSON.stringify(opWrite.body)).toBe(200);
  });

  it("lifts the block when an operator returns the intent to active; only a new crossing blocks again", async () => {
    const intent = await withBudget({ max_total_cents: 10, max_per_call_cents: 20 });
    const headers = await agentHeaders(cluster, "resumed-agent", "agent");
    await record(intent.id, cents(11), headers);
    const resumed = await cluster.api(`/intents/${intent.id}/status`, { body: { status: "active", reason: "accepted the overrun" }, headers: { "If-Match": "2" }, key: "operator" });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body).toMatchObject({ status: "active", version: 3 });

    const lease = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "work" }, headers, key: null });
    expect(lease.status, JSON.stringify(lease.body)).toBe(201);
    const write = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/work/x", value: 1 }], headers: { ...headers, "If-Match": "3" }, key: null });
    expect(write.status, JSON.stringify(write.body)).toBe(200);

    // Already past max_total_cents: further records do not cross it again...
    await record(intent.id, cents(5), headers);
    expect((await readIntent(intent.id)).body.status).toBe("active");
    // ...but one record over max_per_call_cents does.
    await record(intent.id, cents(21), headers);
    expect((await readIntent(intent.id)).body.status).toBe("blocked");
    expect((await blockEvents(intent.id)).map((e) => e.payload.budget.rule)).toEqual(["max_total_cents", "max_per_call_cents"]);
  });

  it("publishes budget_alert and the block over SSE like every event, right after the record", async () => {
    const intent = await withBudget({ max_total_cents: 10, alert_threshold_percent: 50 });
    const headers = await agentHeaders(cluster, "sse-agent", "agent");
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader());
    try {
      expect(sse.status).toBe(200);
      await record(intent.id, cents(11), headers);
      await sse.waitFor((c) => c.events.length >= 2);
      expect(sse.events.map((e) => [e.event, e.data.sequence])).toEqual([
        ["budget_alert", 2],
        ["status_changed", 3],
      ]);
      const logged = await allEvents(cluster, intent.id);
      expect(sse.events.map((e) => e.data)).toEqual(logged.slice(1));
      expect(sse.events.map((e) => e.id)).toEqual(logged.slice(1).map((e) => e.id));
    } finally {
      await sse.close();
    }
  });

  it("gives an intent blocked by hand the reason budget_exceeded when its budget is exceeded, so agents stop there too", async () => {
    const intent = await withBudget({ max_total_cents: 10 });
    const headers = await agentHeaders(cluster, "hand-blocked-agent", "agent");
    const blocked = await cluster.api(`/intents/${intent.id}/status`, { body: { status: "blocked", reason: "waiting for legal" }, headers: { "If-Match": "1" }, key: "operator" });
    expect(blocked.status).toBe(200);
    expect((await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "a" }, headers, key: null })).status).toBe(201);

    await record(intent.id, cents(11), headers);
    // Still blocked, same version (no status change), no second status event.
    expect((await readIntent(intent.id)).body).toMatchObject({ status: "blocked", version: 2 });
    expect(await blockEvents(intent.id)).toEqual([]);
    expect((await costsOf(intent.id)).body.budget.blocked).toBe(true);
    expectError(await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "b" }, headers, key: null }), 403, "BUDGET_EXCEEDED");

    const resumed = await cluster.api(`/intents/${intent.id}/status`, { body: { status: "active" }, headers: { "If-Match": "2" }, key: "operator" });
    expect(resumed.status).toBe(200);
    expect((await costsOf(intent.id)).body.budget.blocked).toBe(false);
    expect((await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "b" }, headers, key: null })).status).toBe(201);
  });

  it("ignores budget fields that are not numbers on intents stored before budgets were checked, applying the others", async () => {
    const intent = await createIntent(cluster);
    const legacy = { budget: { max_total_cents: "a lot", alert_threshold_percent: 50, max_per_call_cents: 5 } };
    await cluster.database.db.execute(sql`update intents.intents set constraints = ${JSON.stringify(legacy)}::jsonb where id = ${intent.id}`);
    const headers = await agentHeaders(cluster, "legacy-agent", "agent");
    expect((await record(intent.id, cents(6), headers)).status).toBe(201);
    expect((await readIntent(intent.id)).body.status).toBe("blocked");
    expect((await blockEvents(intent.id))[0].payload.budget.rule).toBe("max_per_call_cents");
    expect(await budgetEvents(intent.id)).toEqual([]);
  });

  it("does not block a draft intent (table 3.1 has no draft -> blocked) but still records and alerts", async () => {
    const intent = await createIntent(cluster, { status: "draft", constraints: { budget: { max_total_cents: 10, alert_threshold_percent: 50 } } });
    const headers = await agentHeaders(cluster, "draft-agent", "agent");
    await record(intent.id, cents(20), headers);
    expect((await readIntent(intent.id)).body).toMatchObject({ status: "draft", version: 1 });
    expect(await budgetEvents(intent.id)).toHaveLength(1);
    expect(await blockEvents(intent.id)).toEqual([]);
  });
});

describe("PUT /intents/{id}/budget", () => {
  it("raising the budget to cover the spend returns a budget-blocked intent to active, in one version, with its events", async () => {
    const intent = await withBudget({ max_total_cents: 100, alert_threshold_percent: 90 });
    const headers = await agentHeaders(cluster, "raise-agent", "agent");
    await record(intent.id, cents(150), headers);
    expect((await readIntent(intent.id)).body).toMatchObject({ status: "blocked", version: 2 });

    const notEnough = await putBudget(intent.id, { max_total_cents: 120, alert_threshold_percent: 90 }, 2);
    expect(notEnough.status, JSON.stringify(notEnough.body)).toBe(200);
    expect(notEnough.body).toMatchObject({ status: "blocked", version: 3, constraints: { budget: { max_total_cents: 120, alert_threshold_percent: 90 } } });
    expect(notEnough.headers.get("etag")).toBe('"3"');

    const raised = await putBudget(intent.id, { max_total_cents: 150, alert_threshold_percent: 90 }, 3);
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({ status: "active", version: 4, constraints: { budget: { max_total_cents: 150 } } });
    const events = (await allEvents(cluster, intent.id)).slice(-3);
    expect(events.map((e) => e.event_type)).toEqual(["intent.budget_updated", "intent.budget_updated", "status_changed"]);
    expect(events[1]).toMatchObject({
      actor: "operator",
      payload: { budget: { max_total_cents: 150, alert_threshold_percent: 90 }, previous: { max_total_cents: 120, alert_threshold_percent: 90 }, version: 4 },
    });
    expect(events[2].payload).toEqual({ from: "blocked", to: "active", reason: "budget_raised", version: 4 });

    const lease = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "*" }, headers, key: null });
    expect(lease.status, JSON.stringify(lease.body)).toBe(201);
    // The next record past the raised limit blocks again.
    await record(intent.id, cents(1), headers);
    expect((await readIntent(intent.id)).body).toMatchObject({ status: "blocked", version: 5 });
  });

  it("an empty budget removes every limit and unblocks; lowering a budget below the spend blocks an active intent", async () => {
    const intent = await withBudget({ max_per_call_cents: 5 });
    const headers = await agentHeaders(cluster, "lower-agent", "agent");
    await record(intent.id, cents(6), headers);
    expect((await readIntent(intent.id)).body.status).toBe("blocked");
    const cleared = await putBudget(intent.id, {}, 2, "coordinator");
    expect(cleared.body).toMatchObject({ status: "active", version: 3, constraints: { budget: {} } });

    const lowered = await putBudget(intent.id, { max_per_agent_cents: 5 }, 3, "admin");
    expect(lowered.body).toMatchObject({ status: "blocked", version: 4 });
    const last = (await allEvents(cluster, intent.id)).at(-1);
    expect(last).toMatchObject({
      event_type: "status_changed",
      payload: { from: "active", to: "blocked", reason: "budget_exceeded", version: 4, budget: { rule: "max_per_agent_cents", limit_cents: 5, spent_cents: 6 } },
    });
  });

  it("is refused to agents (403), needs If-Match (428), refuses a stale one (409) and an invalid budget (400)", async () => {
    const intent = await withBudget({ max_total_cents: 100 });
    expectError(await putBudget(intent.id, { max_total_cents: 1000 }, 1, "agent"), 403, "FORBIDDEN");
    expectError(await putBudget(intent.id, { max_total_cents: 1000 }, null), 428, "PRECONDITION_REQUIRED");
    const stale = await putBudget(intent.id, { max_total_cents: 1000 }, 7);
    expectError(stale, 409, "VERSION_MISMATCH");
    expect(stale.body.current_version).toBe(1);
    expectError(await putBudget(intent.id, { max_total_cents: -5 }, 1), 400, "VALIDATION_FAILED");
    expectError(await putBudget(UNKNOWN_ID, { max_total_cents: 5 }, 1), 404, "INTENT_NOT_FOUND");
    expect((await readIntent(intent.id)).body).toMatchObject({ version: 1, constraints: { budget: { max_total_cents: 100 } } });
  });
});

describe("API description", () => {
  it("documents the cost and budget endpoints and the budget schema in /openapi.json", async () => {
    const doc = (await cluster.api("/openapi.json", { key: null })).body;
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
      cluster.database.db.transaction(async (tx) => {
        await recordCostInTx(tx, intent.id, { cost_type: "api_call", amount: 20, unit: "cents" }, caller, now);
        throw new Error("the other write failed");
      }),
    ).rejects.toThrow("the other write failed");
    expect((await costsOf(intent.id)).body.summary.count).toBe(0);
    expect((await readIntent(intent.id)).body.status).toBe("active");

    const { cost, events } = await cluster.database.db.transaction((tx) =>
      recordCostInTx(tx, intent.id, { cost_type: "compute", amount: 3, unit: "seconds", cents: 11, provider: "gpu-farm" }, caller, now),
    );
    expect(cost).toMatchObject({ intent_id: intent.id, agent_id: "tx-agent", cost_type: "compute", amount: 3, unit: "seconds", cents: 11, provider: "gpu-farm", metadata: {} });
    expect(events.map((e) => [e.event_type, e.sequence])).toEqual([
      ["budget_alert", 2],
      ["status_changed", 3],
    ]);
    expect((await costsOf(intent.id)).body.costs).toEqual([cost]);
    expect((await readIntent(intent.id)).body).toMatchObject({ status: "blocked", version: 2 });
    await expect(cluster.database.db.transaction((tx) => recordCostInTx(tx, UNKNOWN_ID, { cost_type: "api_call", amount: 1, unit: "cents" }, caller, now))).rejects.toMatchObject({
      code: "INTENT_NOT_FOUND",
    });
  });
});

describe("on the embedded database (PGlite)", () => {
  it("records, sums, alerts and blocks the same way", async () => {
    const embedded = await startTestCluster({ embedded: true });
    try {
      const created = await embedded.api("/intents", { body: { title: "embedded budget", status: "active", constraints: { budget: { max_total_cents: 10, alert_threshold_percent: 50 } } } });
      expect(created.status).toBe(201);
      const id = created.body.id;
      const headers = await agentHeaders(embedded, "pglite-agent", "agent");
      for (const amount of [4, 1, 6]) {
        const res = await embedded.api(`/intents/${id}/costs`, { body: cents(amount), headers, key: null });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
      }
      const listed = await embedded.api(`/intents/${id}/costs`);
      expect(listed.body.summary).toEqual({ total: 11, by_type: { api_call: 11 }, by_agent: { "pglite-agent": 11 }, count: 3, total_cents: 11, by_agent_cents: { "pglite-agent": 11 } });
      expect(listed.body.budget.blocked).toBe(true);
      const events = await allEvents(embedded, id);
      expect(events.map((e) => e.event_type)).toEqual(["intent_created", "budget_alert", "status_changed"]);
    } finally {
      await embedded.stop();
    }
  });
});
