import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { agentHeaders } from "../support/agents";
import { knownAgentStatus } from "../../services/intents/src/agents/agent-status";
import type { BodyOf, Intentmesh } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected, TIMESTAMP, UNKNOWN_ID } from "../support/e2e-helpers";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const at = (offsetMs: number) => new Date(clock().now().getTime() + offsetMs).toISOString().replace("Z", "+00:00");

type Policy = BodyOf<"retriesPutPolicy">;
type Failure = BodyOf<"retriesRecordFailure">;
const admin = () => cluster.sdk();

/** Registers an agent (once) and answers the typed client acting as it with the key it is bound to. */
async function actingAgent(agentId: string, key: "agent" | "other" | "coordinator" = "agent"): Promise<Intentmesh> {
  await agentHeaders(cluster, agentId, key);
  return cluster.sdk(key, agentId);
}

const putPolicy = (intentId: string, body: Policy, ifMatch?: number) => admin().send("retriesPutPolicy", { intent_id: intentId, ifMatch, body });
/** Raw on purpose: a policy the typed body forbids. */
const putPolicyRaw = (intentId: string, body: unknown) => cluster.api(`/intents/${intentId}/retry-policy`, { method: "PUT", body });
const getPolicy = (intentId: string) => admin().send("retriesGetPolicy", { intent_id: intentId });
/** A failure with the error fields defaulted. */
type FailureFields = Omit<Failure, "error_code" | "error_message"> & Partial<Pick<Failure, "error_code" | "error_message">>;
const fail = (intentId: string, agent: Intentmesh, body: FailureFields) =>
  agent.send("retriesRecordFailure", { intent_id: intentId, body: { error_code: "TIMEOUT", error_message: "the model did not answer", ...body } });
const failures = (intentId: string, agent: Intentmesh = admin(), query: { agent_id?: string; limit?: number; after?: string } = {}) =>
  agent.send("retriesListFailures", { intent_id: intentId, query });
const acquire = (intentId: string, agent: Intentmesh, scope: string, ttlSeconds = 120) =>
  agent.send("intentsAcquireLease", { intent_id: intentId, body: { scope, ttl_seconds: ttlSeconds } });
const activeLeases = async (intentId: string) => (await admin().ops.intentsListLeases({ intent_id: intentId, query: { active: true } })).leases;
const allLeases = async (intentId: string) => (await admin().ops.intentsListLeases({ intent_id: intentId })).leases;
/** A timestamp the answer must carry, as milliseconds (NaN when it is null, which no expectation matches). */
const msOf = (timestamp: string | null) => Date.parse(timestamp ?? "");
const patchAs = (intentId: string, agent: Intentmesh, version: number, patches: BodyOf<"intentsPatchState">) =>
  agent.send("intentsPatchState", { intent_id: intentId, ifMatch: version, body: patches });
// Tables of refusals: what the typed request accepts is sent typed, what it forbids is sent raw.
const typed = <T,>(body: T) => ({ typed: body });
const raw = (body: unknown) => ({ raw: body });

describe("PUT and GET /intents/{id}/retry-policy", () => {
  it("answers 404 RETRY_POLICY_NOT_FOUND before a policy is set, and INTENT_NOT_FOUND for an unknown intent", async () => {
    const intent = await createIntent(cluster);
    await expectRejected(getPolicy(intent.id), 404, "RETRY_POLICY_NOT_FOUND");
    await expectRejected(getPolicy(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
    await expectRejected(putPolicy(UNKNOWN_ID, {}), 404, "INTENT_NOT_FOUND");
  });

  it("sets a policy (200) with every field of 2.8 and reads it back", async () => {
    const intent = await createIntent(cluster);
    const body = { strategy: "linear", max_retries: 5, base_delay_ms: 250, max_delay_ms: 1000, fallback_agent_id: "backup-agent", failure_threshold: 3 } as const;
    const res = await putPolicy(intent.id, body);
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ id: expect.any(String), intent_id: intent.id, ...body, created_at: expect.stringMatching(TIMESTAMP), updated_at: expect.stringMatching(TIMESTAMP) });
    expect((await getPolicy(intent.id)).data).toEqual(res.data);
  });

  it("fills omitted fields with the documented defaults", async () => {
    const intent = await createIntent(cluster);
    expect((await putPolicy(intent.id, {})).data).toMatchObject({
      strategy: "exponential",
      max_retries: 3,
      base_delay_ms: 1000,
      max_delay_ms: 60_000,
      fallback_agent_id: null,
      failure_threshold: 4,
    });
    // max_delay_ms defaults to at least the base delay; failure_threshold to max_retries + 1.
    expect((await putPolicy(intent.id, { base_delay_ms: 90_000, max_retries: 0 })).data).toMatchObject({ max_delay_ms: 90_000, failure_threshold: 1 });
  });

  it("replaces the whole policy, keeping its id and created_at; omitted fields return to their defaults", async () => {
    const intent = await createIntent(cluster);
    const first = (await putPolicy(intent.id, { strategy: "fixed", max_retries: 9, fallback_agent_id: "backup" })).data;
    clock().advance(5000);
    const second = await putPolicy(intent.id, { strategy: "linear" });
    expect(second.status).toBe(200);
    expect(second.data).toMatchObject({ id: first.id, created_at: first.created_at, strategy: "linear", max_retries: 3, fallback_agent_id: null });
    expect(Date.parse(second.data.updated_at) - Date.parse(first.updated_at)).toBe(5000);
    expect((await getPolicy(intent.id)).data).toEqual(second.data);
  });

  it.each([
    ["an unknown strategy", raw({ strategy: "random" }), "strategy"],
    ["a negative max_retries", typed<Policy>({ max_retries: -1 }), "max_retries"],
    ["a fractional max_retries", typed<Policy>({ max_retries: 1.5 }), "max_retries"],
    ["max_retries as a string", raw({ max_retries: "3" }), "max_retries"],
    ["a negative base_delay_ms", typed<Policy>({ base_delay_ms: -1 }), "base_delay_ms"],
    ["a fractional base_delay_ms", typed<Policy>({ base_delay_ms: 0.5 }), "base_delay_ms"],
    ["max_delay_ms below base_delay_ms", typed<Policy>({ base_delay_ms: 2000, max_delay_ms: 1000 }), "max_delay_ms"],
    ["max_delay_ms below the default base_delay_ms", typed<Policy>({ max_delay_ms: 10 }), "max_delay_ms"],
    ["a negative max_delay_ms", typed<Policy>({ max_delay_ms: -5 }), "max_delay_ms"],
    ["a failure_threshold of 0", typed<Policy>({ failure_threshold: 0 }), "failure_threshold"],
    ["a fractional failure_threshold", typed<Policy>({ failure_threshold: 2.5 }), "failure_threshold"],
    ["a fallback_agent_id with whitespace", typed<Policy>({ fallback_agent_id: "two words" }), "fallback_agent_id"],
    ["an empty fallback_agent_id", typed<Policy>({ fallback_agent_id: "" }), "fallback_agent_id"],
    ["a fallback_agent_id that is a number", raw({ fallback_agent_id: 7 }), "fallback_agent_id"],
    ["an unknown field", raw({ retries: 3 }), ""],
  ])("refuses %s (400 naming the field) and keeps the policy it had", async (_what, sent, field) => {
    const intent = await createIntent(cluster);
    const before = (await putPolicy(intent.id, { strategy: "fixed" })).data;
    let refusal: { message: string; details: Record<string, unknown> };
    if ("typed" in sent) {
      refusal = await expectRejected(putPolicy(intent.id, sent.typed), 400, "VALIDATION_FAILED");
    } else {
      const res = await putPolicyRaw(intent.id, sent.raw);
      expectError(res, 400, "VALIDATION_FAILED");
      refusal = res.body;
    }
    expect(refusal.message).toContain(field);
    if (field) expect(refusal.details.issues).toContainEqual(expect.objectContaining({ path: `body.${field}` }));
    expect((await getPolicy(intent.id)).data).toEqual(before);
  });

  it("accepts max_delay_ms equal to base_delay_ms and a delay of 0", async () => {
    const intent = await createIntent(cluster);
    expect((await putPolicy(intent.id, { base_delay_ms: 0, max_delay_ms: 0 })).status).toBe(200);
    expect((await putPolicy(intent.id, { base_delay_ms: 500, max_delay_ms: 500 })).status).toBe(200);
  });

  it("honours If-Match when sent (409 when stale)", async () => {
    const intent = await createIntent(cluster);
    await expectRejected(putPolicy(intent.id, {}, 3), 409, "VERSION_MISMATCH");
    await expectRejected(getPolicy(intent.id), 404, "RETRY_POLICY_NOT_FOUND");
    expect((await putPolicy(intent.id, {}, 1)).status).toBe(200);
  });
});

describe("POST and GET /intents/{id}/failures", () => {
  it("records a failure (201) with the fields of 2.8 and lists the history oldest first", async () => {
    const intent = await createIntent(cluster);
    const agent = await actingAgent("fl-rec-a");
    const res = await fail(intent.id, agent, { attempt_number: 1, error_code: "RATE_LIMIT", error_message: "429 from provider", metadata: { provider: "x" } });
    expect(res.status).toBe(201);
    expect(res.data).toEqual({
      id: expect.any(String),
      intent_id: intent.id,
      agent_id: "fl-rec-a",
      task_id: null,
      attempt_number: 1,
      error_code: "RATE_LIMIT",
      error_message: "429 from provider",
      retry_scheduled_at: null,
      resolved_at: null,
      metadata: { provider: "x" },
      retries_exhausted: false,
      fallback_agent_id: null,
      cost_id: null,
      created_at: expect.stringMatching(TIMESTAMP),
    });
    const second = (await fail(intent.id, agent, { attempt_number: 2, error_code: "NETWORK_ERROR" })).data;
    const history = await failures(intent.id);
    expect(history.status).toBe(200);
    expect(history.data).toEqual({ failures: [res.data, second], next_cursor: expect.any(String), has_more: false });
  });

  it("reads a long history in bounded pages (limit, after = next_cursor), the agent_id filter applying to every page", async () => {
    const intent = await createIntent(cluster);
    const a = await actingAgent("fl-page-a");
    const b = await actingAgent("fl-page-b");
    const ids: string[] = [];
    for (let attempt = 1; attempt <= 5; attempt++) {
      ids.push((await fail(intent.id, a, { attempt_number: attempt })).data.id);
      await fail(intent.id, b, { attempt_number: attempt });
    }
    const first = await failures(intent.id, undefined, { agent_id: "fl-page-a", limit: 2 });
    expect(first.status).toBe(200);
    expect(first.data.failures.map((f) => f.id)).toEqual(ids.slice(0, 2));
    expect(first.data.has_more).toBe(true);
    const second = (await failures(intent.id, undefined, { agent_id: "fl-page-a", limit: 2, after: first.data.next_cursor })).data;
    expect(second.failures.map((f) => f.id)).toEqual(ids.slice(2, 4));
    const third = (await failures(intent.id, undefined, { agent_id: "fl-page-a", limit: 2, after: second.next_cursor })).data;
    expect(third).toMatchObject({ has_more: false });
    expect(third.failures.map((f) => f.id)).toEqual(ids.slice(4));
    // An empty page keeps the cursor, so a client can poll for new failures.
    const empty = await failures(intent.id, undefined, { agent_id: "fl-page-a", after: third.next_cursor });
    expect(empty.data).toEqual({ failures: [], next_cursor: third.next_cursor, has_more: false });
    expect((await failures(intent.id)).data.failures).toHaveLength(10);

    await expectRejected(failures(intent.id, undefined, { limit: 1001 }), 400, "VALIDATION_FAILED");
    await expectRejected(failures(intent.id, undefined, { limit: 0 }), 400, "VALIDATION_FAILED");
    for (const bad of ["abc", "99999999999999999999"]) await expectRejected(failures(intent.id, undefined, { after: bad }), 400, "VALIDATION_FAILED");
  });

  it("filters the history by agent_id, answers an empty list without failures and 404 for an unknown intent", async () => {
    const intent = await createIntent(cluster);
    expect((await failures(intent.id)).data).toEqual({ failures: [], next_cursor: "0", has_more: false });
    await fail(intent.id, await actingAgent("fl-filter-a"), { attempt_number: 1 });
    await fail(intent.id, await actingAgent("fl-filter-b"), { attempt_number: 1 });
    const onlyB = await failures(intent.id, undefined, { agent_id: "fl-filter-b" });
    expect(onlyB.data.failures.map((f) => f.agent_id)).toEqual(["fl-filter-b"]);
    await expectRejected(failures(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
  });

  it("takes the failing agent from agent_id when no agent acts, and refuses one that contradicts X-Agent-ID", async () => {
    const intent = await createIntent(cluster);
    await agentHeaders(cluster, "fl-named", "coordinator");
    const res = await cluster.sdk("coordinator").send("retriesRecordFailure", { intent_id: intent.id, body: { agent_id: "fl-named", attempt_number: 1, error_code: "TIMEOUT" } });
    expect(res.status).toBe(201);
    expect(res.data.agent_id).toBe("fl-named");
    // agent_id names the acting agent: it must be bound to the calling key, like X-Agent-ID.
    const unbound = cluster.sdk("operator").ops.retriesRecordFailure({ intent_id: intent.id, body: { agent_id: "fl-named", attempt_number: 2, error_code: "TIMEOUT" } });
    await expect(unbound).rejects.toMatchObject({ status: 403 });
    await actingAgent("fl-someone-else");
    await expectRejected(fail(intent.id, await actingAgent("fl-actor"), { agent_id: "fl-someone-else", attempt_number: 1 }), 400, "AGENT_MISMATCH");
  });

  it.each([
    ["attempt_number 0", typed<FailureFields>({ attempt_number: 0 }), "attempt_number"],
    ["a fractional attempt_number", typed<FailureFields>({ attempt_number: 1.5 }), "attempt_number"],
    ["a missing attempt_number", raw({}), "attempt_number"],
    ["an empty error_code", typed<FailureFields>({ attempt_number: 1, error_code: "" }), "error_code"],
    ["a retry_scheduled_at that is not a timestamp", typed<FailureFields>({ attempt_number: 1, retry_scheduled_at: "tomorrow" }), "retry_scheduled_at"],
    ["metadata that is not an object", raw({ attempt_number: 1, metadata: "x" }), "metadata"],
    ["an unknown field", raw({ attempt_number: 1, severity: "high" }), ""],
  ])("refuses %s (400) and records nothing", async (_what, sent, field) => {
    const intent = await createIntent(cluster);
    let message: string;
    if ("typed" in sent) {
      message = (await expectRejected(fail(intent.id, await actingAgent("fl-invalid"), sent.typed), 400, "VALIDATION_FAILED")).message;
    } else {
      const body = { error_code: "TIMEOUT", error_message: "the model did not answer", ...(sent.raw as object) };
      const res = await cluster.api(`/intents/${intent.id}/failures`, { body, headers: await agentHeaders(cluster, "fl-invalid"), key: null });
      expectError(res, 400, "VALIDATION_FAILED");
      message = res.body.message;
    }
    expect(message).toContain(field);
    expect((await failures(intent.id)).data.failures).toEqual([]);
  });

  it("answers 404 for an unknown intent", async () => {
    await expectRejected(fail(UNKNOWN_ID, await actingAgent("fl-unknown"), { attempt_number: 1 }), 404, "INTENT_NOT_FOUND");
  });
});

describe("retry scheduling", () => {
  it("computes retry_scheduled_at from the policy when the failure names none (exponential, capped at max_delay_ms)", async () => {
    const intent = await createIntent(cluster);
    await putPolicy(intent.id, { strategy: "exponential", max_retries: 5, base_delay_ms: 1000, max_delay_ms: 3000 });
    const agent = await actingAgent("fl-exp");
    const scheduled: number[] = [];
    for (const attempt of [1, 2, 3, 4]) {
      const res = await fail(intent.id, agent, { attempt_number: attempt });
      expect(res.status).toBe(201);
      expect(res.data.retries_exhausted).toBe(false);
      scheduled.push(msOf(res.data.retry_scheduled_at) - clock().now().getTime());
    }
    expect(scheduled).toEqual([1000, 2000, 3000, 3000]);
  });

  it.each([
    ["fixed", [500, 500, 500]] as const,
    ["linear", [500, 1000, 1500]] as const,
  ])("follows the %s pattern", async (strategy, expected) => {
    const intent = await createIntent(cluster);
    await putPolicy(intent.id, { strategy, max_retries: 5, base_delay_ms: 500, max_delay_ms: 10_000 });
    const agent = await actingAgent(`fl-${strategy}`);
    const delays: number[] = [];
    for (const attempt of [1, 2, 3]) delays.push(msOf((await fail(intent.id, agent, { attempt_number: attempt })).data.retry_scheduled_at) - clock().now().getTime());
    expect(delays).toEqual(expected);
  });

  it("keeps a retry_scheduled_at the client sends, and null when it sends null", async () => {
    const intent = await createIntent(cluster);
    await putPolicy(intent.id, { max_retries: 5 });
    const agent = await actingAgent("fl-client-time");
    const when = at(42_000);
    expect((await fail(intent.id, agent, { attempt_number: 1, retry_scheduled_at: when })).data.retry_scheduled_at).toBe(when);
    expect((await fail(intent.id, agent, { attempt_number: 2, retry_scheduled_at: null })).data.retry_scheduled_at).toBeNull();
  });

  it("without a policy schedules nothing itself but keeps the client's time", async () => {
    const intent = await createIntent(cluster);
    const agent = await actingAgent("fl-no-policy");
    const none = await fail(intent.id, agent, { attempt_number: 50 });
    expect(none.data).toMatchObject({ retry_scheduled_at: null, retries_exhausted: false });
    const when = at(1000);
    expect((await fail(intent.id, agent, { attempt_number: 51, retry_scheduled_at: when })).data.retry_scheduled_at).toBe(when);
  });

  it.each(["BUDGET_EXCEEDED", "PERMISSION_DENIED"])("never schedules a retry for %s, with or without a policy", async (code) => {
    const intent = await createIntent(cluster);
    const agent = await actingAgent(`fl-nr-${code.toLowerCase()}`);
    expect((await fail(intent.id, agent, { attempt_number: 1, error_code: code })).data).toMatchObject({ retry_scheduled_at: null, retries_exhausted: true });
    await putPolicy(intent.id, { strategy: "fixed", max_retries: 10 });
    expect((await fail(intent.id, agent, { attempt_number: 1, error_code: code })).data).toMatchObject({ retry_scheduled_at: null, retries_exhausted: true });
    const refused = await expectRejected(fail(intent.id, agent, { attempt_number: 1, error_code: code, retry_scheduled_at: at(1000) }), 400, "VALIDATION_FAILED");
    expect(refused.message).toContain("retry_scheduled_at");
    expect((await failures(intent.id)).data.failures).toHaveLength(2);
  });

  it("exhausts the retries exactly when attempt_number exceeds max_retries", async () => {
    const intent = await createIntent(cluster);
    await putPolicy(intent.id, { strategy: "fixed", max_retries: 2, base_delay_ms: 100, failure_threshold: 100 });
    const agent = await actingAgent("fl-boundary");
    const second = await fail(intent.id, agent, { attempt_number: 2 });
    expect(second.data).toMatchObject({ retries_exhausted: false, retry_scheduled_at: at(100) });
    const third = await fail(intent.id, agent, { attempt_number: 3 });
    expect(third.data).toMatchObject({ retries_exhausted: true, retry_scheduled_at: null });
  });

  it("refuses a client's retry time once no retry is allowed (409 RETRY_NOT_ALLOWED), recording nothing", async () => {
    const intent = await createIntent(cluster);
    await putPolicy(intent.id, { strategy: "fixed", max_retries: 1 });
    const agent = await actingAgent("fl-too-late");
    const res = await expectRejected(fail(intent.id, agent, { attempt_number: 2, retry_scheduled_at: at(5000) }), 409, "RETRY_NOT_ALLOWED");
    expect(res.details).toMatchObject({ reason: "retries_exhausted", attempt_number: 2, max_retries: 1 });
    expect((await failures(intent.id)).data.failures).toEqual([]);
  });

  it("under strategy none, the first failure exhausts the retries", async () => {
    const intent = await createIntent(cluster);
    await putPolicy(intent.id, { strategy: "none", max_retries: 5 });
    expect((await fail(intent.id, await actingAgent("fl-none"), { attempt_number: 1 })).data).toMatchObject({ retries_exhausted: true, retry_scheduled_at: null });
  });
});

describe("fallback agents", () => {
  /** An intent whose policy hands over to `fallback`, with `failing` holding leases on `scopes`. */
  async function setUp(name: string, policy: Record<string, unknown>, scopes = ["research"]) {
    const intent = await createIntent(cluster, { state: { research: { notes: "draft by the first agent" }, summary: null } });
    const failing = await actingAgent(`${name}-a`, "agent");
    const fallback = await actingAgent(`${name}-b`, "other");
    const policyRes = await putPolicy(intent.id, { strategy: "fixed", base_delay_ms: 1000, fallback_agent_id: `${name}-b`, ...policy });
    expect(policyRes.status).toBe(200);
    const leases = [];
    for (const scope of scopes) {
      const lease = await acquire(intent.id, failing, scope);
      expect(lease.status).toBe(201);
      leases.push(lease.data);
    }
    return { intent, failing, fallback, leases, failingId: `${name}-a`, fallbackId: `${name}-b` };
  }

  it("hands over when retries are exhausted: lease released and re-granted to the fallback, fallback_triggered recorded", async () => {
    const { intent, failing, fallback, leases, failingId, fallbackId } = await setUp("fb-main", { max_retries: 1 }, ["research", "summary"]);
    const first = await fail(intent.id, failing, { attempt_number: 1 });
    expect(first.data).toMatchObject({ retries_exhausted: false, fallback_agent_id: null, resolved_at: null });
    expect((await activeLeases(intent.id)).map((l) => l.agent_id)).toEqual([failingId, failingId]);

    clock().advance(30_000);
    const now = clock().now().getTime();
    const second = await fail(intent.id, failing, { attempt_number: 2, error_code: "INVALID_OUTPUT" });
    expect(second.status, JSON.stringify(second.data)).toBe(201);
    expect(second.data).toMatchObject({ retries_exhausted: true, retry_scheduled_at: null, fallback_agent_id: fallbackId });
    expect(msOf(second.data.resolved_at)).toBe(now);

    // The failing agent's leases ended; the fallback holds the same scopes for the term the failing leases were granted (120 s).
    const all = await allLeases(intent.id);
    for (const old of leases) expect(all.find((l) => l.id === old.id)?.released_at).not.toBeNull();
    const active = await activeLeases(intent.id);
    expect(active.map((l) => [l.agent_id, l.scope])).toEqual([
      [fallbackId, "research"],
      [fallbackId, "summary"],
    ]);
    for (const lease of active) expect(Date.parse(lease.expires_at) - now).toBe(120_000);

    const events = await allEvents(cluster, intent.id);
    const handover = events.slice(-5);
    expect(handover.map((e) => e.event_type)).toEqual(["lease_released", "lease_released", "lease_acquired", "lease_acquired", "fallback_triggered"]);
    expect(new Set(handover.map((e) => e.created_at)).size).toBe(1);
    expect(handover[0]!.payload).toEqual({ lease_id: leases[0]!.id, agent_id: failingId, scope: "research", reason: "fallback" });
    expect(handover[2]!.payload).toEqual({ lease_id: active[0]!.id, agent_id: fallbackId, scope: "research", expires_at: active[0]!.expires_at });
    expect(handover[4]!.payload).toEqual({
      failed_agent_id: failingId,
      fallback_agent_id: fallbackId,
      failure_id: second.data.id,
      attempt_number: 2,
      error_code: "INVALID_OUTPUT",
      reason: "retries_exhausted",
      scopes: ["research", "summary"],
      leases: [
        { scope: "research", released_lease_id: leases[0]!.id, lease_id: active[0]!.id, expires_at: active[0]!.expires_at },
        { scope: "summary", released_lease_id: leases[1]!.id, lease_id: active[1]!.id, expires_at: active[1]!.expires_at },
      ],
    });

    // Every unresolved failure of the failing agent is resolved by the handover.
    const history = (await failures(intent.id, fallback)).data.failures;
    expect(history.map((f) => [f.attempt_number, f.resolved_at !== null])).toEqual([
      [1, true],
      [2, true],
    ]);
  });

  it("lets the fallback agent, with its own key, read the previous agent's state and failure history and write the scope", async () => {
    const { intent, failing, fallback, failingId } = await setUp("fb-read", { max_retries: 0 });
    const patched = await patchAs(intent.id, failing, 1, [{ op: "set", path: "/research/notes", value: "second draft" }]);
    expect(patched.status).toBe(200);
    await fail(intent.id, failing, { attempt_number: 1, error_message: "gave up", metadata: { step: "outline" } });

    const read = await fallback.send("intentsGet", { intent_id: intent.id });
    expect(read.status).toBe(200);
    expect(read.data.state.research).toEqual({ notes: "second draft" });
    const history = await failures(intent.id, fallback);
    expect(history.status).toBe(200);
    expect(history.data.failures).toEqual([expect.objectContaining({ agent_id: failingId, error_message: "gave up", metadata: { step: "outline" } })]);

    const version = read.data.version;
    const byFallback = await patchAs(intent.id, fallback, version, [{ op: "set", path: "/research/notes", value: "third draft" }]);
    expect(byFallback.status).toBe(200);
    await expectRejected(patchAs(intent.id, failing, version + 1, [{ op: "set", path: "/research/notes", value: "late write" }]), 409, "LEASE_HELD");
  });

  it("hands over when the agent's unresolved failures reach failure_threshold", async () => {
    const { intent, failing, fallbackId } = await setUp("fb-threshold", { max_retries: 10, failure_threshold: 2 });
    expect((await fail(intent.id, failing, { attempt_number: 1 })).data.fallback_agent_id).toBeNull();
    const second = await fail(intent.id, failing, { attempt_number: 2 });
    expect(second.data).toMatchObject({ fallback_agent_id: fallbackId, retries_exhausted: true });
    expect((await allEvents(cluster, intent.id)).at(-1)).toMatchObject({ event_type: "fallback_triggered", payload: { reason: "failure_threshold" } });
  });

  it("hands a PERMISSION_DENIED over at once, but not a BUDGET_EXCEEDED (it needs a human)", async () => {
    const budget = await setUp("fb-budget", { max_retries: 5 });
    expect((await fail(budget.intent.id, budget.failing, { attempt_number: 1, error_code: "BUDGET_EXCEEDED" })).data).toMatchObject({ retries_exhausted: true, fallback_agent_id: null });
    expect((await activeLeases(budget.intent.id)).map((l) => l.agent_id)).toEqual([budget.failingId]);

    const denied = await setUp("fb-denied", { max_retries: 5 });
    expect((await fail(denied.intent.id, denied.failing, { attempt_number: 1, error_code: "PERMISSION_DENIED" })).data).toMatchObject({ fallback_agent_id: denied.fallbackId });
    expect((await activeLeases(denied.intent.id)).map((l) => l.agent_id)).toEqual([denied.fallbackId]);
    expect((await allEvents(cluster, denied.intent.id)).at(-1)!.payload.reason).toBe("not_retryable");
  });

  it("hands over exactly once under two concurrent exhausting failures", async () => {
    const { intent, failing, leases, fallbackId } = await setUp("fb-race", { max_retries: 1 });
    const results = await Promise.all([
      fail(intent.id, failing, { attempt_number: 2, error_message: "first" }),
      fail(intent.id, failing, { attempt_number: 2, error_message: "second" }),
    ]);
    expect(results.map((r) => r.status)).toEqual([201, 201]);
    expect(results.filter((r) => r.data.fallback_agent_id === fallbackId)).toHaveLength(1);
    expect(results.every((r) => r.data.retries_exhausted)).toBe(true);

    const events = await allEvents(cluster, intent.id);
    expect(events.filter((e) => e.event_type === "fallback_triggered")).toHaveLength(1);
    expect(events.filter((e) => e.event_type === "lease_released")).toHaveLength(1);
    expect(events.filter((e) => e.event_type === "lease_acquired").map((e) => e.payload.agent_id)).toEqual([leases[0]!.agent_id, fallbackId]);
    const active = await activeLeases(intent.id);
    expect(active.map((l) => [l.agent_id, l.scope])).toEqual([[fallbackId, "research"]]);
    expect((await failures(intent.id)).data.failures).toHaveLength(2);
    // The sequence numbers of the log stay gapless through the race.
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  });

  it("hands nothing over when the failing agent holds no live lease", async () => {
    const { intent, failing, failingId } = await setUp("fb-lapsed", { max_retries: 0 });
    clock().advance(121_000); // the 120 s lease lapsed (not yet swept)
    const res = await fail(intent.id, failing, { attempt_number: 1 });
    expect(res.data).toMatchObject({ retries_exhausted: true, fallback_agent_id: null, resolved_at: null });
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type)).not.toContain("fallback_triggered");
    expect((await allLeases(intent.id)).map((l) => l.agent_id)).toEqual([failingId]);
  });

  it("does not hand over from the fallback agent to itself, nor without a fallback agent", async () => {
    const { intent, fallback, fallbackId } = await setUp("fb-self", { max_retries: 0 }, []);
    expect((await acquire(intent.id, fallback, "summary")).status).toBe(201);
    const res = await fail(intent.id, fallback, { attempt_number: 1 });
    expect(res.data).toMatchObject({ retries_exhausted: true, fallback_agent_id: null });
    expect((await activeLeases(intent.id)).map((l) => l.agent_id)).toEqual([fallbackId]);

    const plain = await setUp("fb-nofallback", { max_retries: 0, fallback_agent_id: null });
    expect((await fail(plain.intent.id, plain.failing, { attempt_number: 1 })).data).toMatchObject({ retries_exhausted: true, fallback_agent_id: null });
    expect((await activeLeases(plain.intent.id)).map((l) => l.agent_id)).toEqual([plain.failingId]);
  });

  it("hands nothing over to a fallback agent that is draining, dead or deregistered", async () => {
    const { intent, failing, failingId, fallbackId } = await setUp("fb-gone", { max_retries: 0 });
    expect((await cluster.sdk("other").send("agentsDeregister", { agent_id: fallbackId })).status).toBe(200);
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, fallbackId)).toBe("deregistered"));
    const res = await fail(intent.id, failing, { attempt_number: 1 });
    expect(res.data).toMatchObject({ retries_exhausted: true, fallback_agent_id: null });
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type)).not.toContain("fallback_triggered");
    expect((await activeLeases(intent.id)).map((l) => l.agent_id)).toEqual([failingId]);
  });

  it("records failures on a completed intent but hands nothing over (closed intents take no leases)", async () => {
    const { intent, failing, failingId } = await setUp("fb-closed", { max_retries: 0 });
    const done = await admin().send("intentsTransition", { intent_id: intent.id, ifMatch: 1, body: { status: "completed" } });
    expect(done.status).toBe(200);
    const res = await fail(intent.id, failing, { attempt_number: 1 });
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ retries_exhausted: true, fallback_agent_id: null });
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type)).not.toContain("fallback_triggered");
    expect((await allLeases(intent.id)).map((l) => l.agent_id)).toEqual([failingId]);
  });
});

describe("costs of failed attempts", () => {
  const costs = (intentId: string) => admin().ops.costsList({ intent_id: intentId });

  it("records the cost of the failed attempt for the failing agent, in the failure's transaction", async () => {
    const intent = await createIntent(cluster);
    const agent = await actingAgent("fl-cost-a");
    const res = await fail(intent.id, agent, {
      attempt_number: 1,
      cost: { cost_type: "tokens", amount: 1200, unit: "tokens", provider: "openai", metadata: { model: "m" } },
    });
    expect(res.status, JSON.stringify(res.data)).toBe(201);
    expect(res.data.cost_id).toEqual(expect.any(String));
    const page = await costs(intent.id);
    expect(page.costs).toEqual([
      expect.objectContaining({ id: res.data.cost_id, agent_id: "fl-cost-a", cost_type: "tokens", amount: 1200, unit: "tokens", provider: "openai", metadata: { model: "m" } }),
    ]);
    expect(page.summary.by_agent).toEqual({ "fl-cost-a": 1200 });
    const plain = await fail(intent.id, agent, { attempt_number: 2 });
    expect(plain.data.cost_id).toBeNull();
  });

  it("records the cost of a failure that hands over too", async () => {
    const intent = await createIntent(cluster);
    const failing = await actingAgent("fl-cost-ho-a");
    await actingAgent("fl-cost-ho-b", "other");
    await putPolicy(intent.id, { max_retries: 0, fallback_agent_id: "fl-cost-ho-b" });
    expect((await acquire(intent.id, failing, "*")).status).toBe(201);
    const res = await fail(intent.id, failing, { attempt_number: 1, cost: { cost_type: "api_call", amount: 3, unit: "cents" } });
    expect(res.data).toMatchObject({ fallback_agent_id: "fl-cost-ho-b", cost_id: expect.any(String) });
    expect((await costs(intent.id)).summary.total_cents).toBe(3);
  });

  it("applies the budget rules of POST /costs: a failed attempt's cost can block the intent", async () => {
    const intent = await createIntent(cluster, { constraints: { budget: { max_total_cents: 100 } } });
    const agent = await actingAgent("fl-cost-budget");
    const res = await fail(intent.id, agent, { attempt_number: 1, cost: { cost_type: "api_call", amount: 150, unit: "cents" } });
    expect(res.status).toBe(201);
    expect((await admin().ops.intentsGet({ intent_id: intent.id })).status).toBe("blocked");
    expect((await costs(intent.id)).budget.blocked).toBe(true);
  });

  it("hands nothing over on an intent its budget blocked (also when this failure's cost blocks it), until an operator lifts the block", async () => {
    const intent = await createIntent(cluster, { constraints: { budget: { max_total_cents: 100 } } });
    const failing = await actingAgent("fl-cost-block-a");
    await actingAgent("fl-cost-block-b", "other");
    await putPolicy(intent.id, { max_retries: 0, fallback_agent_id: "fl-cost-block-b" });
    expect((await acquire(intent.id, failing, "*")).status).toBe(201);

    // The failed attempt's cost passes max_total_cents: the intent is blocked, and the blocked intent grants the fallback no lease.
    const blocking = await fail(intent.id, failing, { attempt_number: 1, cost: { cost_type: "api_call", amount: 150, unit: "cents" } });
    expect(blocking.status, JSON.stringify(blocking.data)).toBe(201);
    expect(blocking.data).toMatchObject({ retries_exhausted: true, fallback_agent_id: null, resolved_at: null, cost_id: expect.any(String) });
    expect(await admin().ops.intentsGet({ intent_id: intent.id })).toMatchObject({ status: "blocked", version: 2 });
    // Already blocked: a later exhausting failure without a cost hands nothing over either.
    expect((await fail(intent.id, failing, { attempt_number: 2 })).data).toMatchObject({ fallback_agent_id: null });
    expect((await activeLeases(intent.id)).map((l) => l.agent_id)).toEqual(["fl-cost-block-a"]);
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type)).not.toContain("fallback_triggered");

    // An operator accepts the overrun: the next exhausting failure hands over.
    const resumed = await cluster.sdk("operator").send("intentsTransition", { intent_id: intent.id, ifMatch: 2, body: { status: "active" } });
    expect(resumed.status).toBe(200);
    expect((await fail(intent.id, failing, { attempt_number: 3 })).data).toMatchObject({ fallback_agent_id: "fl-cost-block-b" });
    expect((await activeLeases(intent.id)).map((l) => l.agent_id)).toEqual(["fl-cost-block-b"]);
  });

  it("writes neither the failure nor the cost when either is refused", async () => {
    const intent = await createIntent(cluster);
    const agent = await actingAgent("fl-cost-refused");
    const badCost = await expectRejected(fail(intent.id, agent, { attempt_number: 1, cost: { cost_type: "tokens", amount: -5, unit: "tokens" } }), 400, "VALIDATION_FAILED");
    expect(badCost.message).toContain("cost.amount");
    await expectRejected(fail(intent.id, agent, { attempt_number: 1, cost: { agent_id: "fl-cost-other", cost_type: "tokens", amount: 5, unit: "tokens" } }), 400, "AGENT_MISMATCH");
    await putPolicy(intent.id, { max_retries: 0 });
    await expectRejected(fail(intent.id, agent, { attempt_number: 1, retry_scheduled_at: at(1000), cost: { cost_type: "tokens", amount: 5, unit: "tokens" } }), 409, "RETRY_NOT_ALLOWED");
    expect((await failures(intent.id)).data.failures).toEqual([]);
    expect((await costs(intent.id)).costs).toEqual([]);
  });
});
