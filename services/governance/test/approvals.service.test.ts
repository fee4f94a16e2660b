import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { IntentmeshError, type BodyOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected, UNKNOWN_ID } from "../../../test/support/e2e-helpers";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { IntentsService } from "../../intents/src/service";
import type { GovernanceService } from "../src/service";

/**
 * The governance service's own rules for approvals (4.6) and engagement decisions (4.5): create,
 * read, list, decide (who may, self-approval, exactly one decision under concurrency) and the
 * decision an engagement answers, through the typed client of the route catalogue. Approvals live
 * in an intent, so the intents service runs beside it (the intent must exist; the decisions are
 * logged in its log), and the registry, because the gateway asks it whom an X-Agent-ID is bound
 * to; sweeps and timers run only when a test calls them. The decision's event over SSE stays in
 * test/e2e/approvals.e2e.test.ts.
 */
let harness: ServiceHarness<{ intents: IntentsService; governance: GovernanceService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({
      registry: QUIET.registry,
      intents: QUIET.intents,
      governance: QUIET.governance,
    }),
  );
});
afterAll(async () => {
  await harness?.stop();
});

const request = (intentId: string, body: BodyOf<"governanceCreateApproval"> = { action: "complete", reason: "done", context: { pr: 7 } }, key: "agent" | "operator" | "admin" = "agent") =>
  harness.sdk(key, key === "agent" ? "writer" : undefined).send("governanceCreateApproval", { intent_id: intentId, body });
/** Raw on purpose: bodies the typed request forbids. */
const requestRaw = (intentId: string, body: unknown) => harness.rawApi(`/intents/${intentId}/approvals`, { body, key: "agent", headers: { "X-Agent-ID": "writer" } });
const decide = (intentId: string, approvalId: string, verb: "approve" | "deny", key: "operator" | "coordinator" | "admin" | "agent" = "operator", body: BodyOf<"governanceApprove"> = {}) =>
  harness.sdk(key).send(verb === "approve" ? "governanceApprove" : "governanceDeny", { intent_id: intentId, approval_id: approvalId, body });
/** Raw on purpose: a decision with no body at all, as the Python client sends it. */
const decideWithoutBody = (intentId: string, approvalId: string, verb: "approve" | "deny", key: "operator" | "coordinator" | "admin") =>
  harness.rawApi(`/intents/${intentId}/approvals/${approvalId}/${verb}`, { method: "POST", key, rawBody: "", headers: { "Content-Type": "application/json" } });
const getApproval = (intentId: string, approvalId: string) => harness.sdk().ops.governanceGetApproval({ intent_id: intentId, approval_id: approvalId });
const listApprovals = (intentId: string, query: { status?: "pending" | "approved" | "denied" } = {}) => harness.sdk().ops.governanceListApprovals({ intent_id: intentId, query });
/** The status (and error code) of a decision that may lose the race. */
const settle = (call: Promise<{ status: number; data: { status: string; decided_by: string | null } }>) =>
  call.then(
    (res) => ({ status: res.status, decision: res.data }),
    (error: unknown) => (error instanceof IntentmeshError ? { status: error.status, decision: undefined } : Promise.reject(error)),
  );

describe("approvals (4.6)", () => {
  it("creates a pending approval, reads it and lists it; unknown intents and approvals are 404; bad bodies 400", async () => {
    const intent = await createIntent(harness);
    const created = await request(intent.id);
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({ intent_id: intent.id, action: "complete", reason: "done", context: { pr: 7 }, requested_by: "writer", status: "pending", decided_by: null });
    expect(await getApproval(intent.id, created.data.id)).toEqual(created.data);
    expect((await listApprovals(intent.id)).approvals).toEqual([created.data]);
    expect((await listApprovals(intent.id, { status: "approved" })).approvals).toEqual([]);
    await expectRejected(getApproval(intent.id, UNKNOWN_ID), 404, "APPROVAL_NOT_FOUND");
    await expectRejected(getApproval(intent.id, "nope"), 404, "APPROVAL_NOT_FOUND");
    await expectRejected(request(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
    await expectRejected(listApprovals(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
    expectError(await requestRaw(intent.id, { reason: "no action" }), 400, "VALIDATION_FAILED");
    expectError(await requestRaw(intent.id, { action: "complete", extra: 1 }), 400, "VALIDATION_FAILED");
  });

  it("deny with an optional reason, or with no body at all (the Python client)", async () => {
    const intent = await createIntent(harness);
    const a = (await request(intent.id)).data;
    const denied = await decide(intent.id, a.id, "deny", "coordinator", { reason: "not yet" });
    expect(denied.data).toMatchObject({ status: "denied", decided_by: "coordinator", decision_notes: "not yet" });
    const b = (await request(intent.id)).data;
    expect((await decideWithoutBody(intent.id, b.id, "deny", "admin")).body).toMatchObject({ status: "denied", decided_by: "admin", decision_notes: null });
    await vi.waitFor(async () => expect((await allEvents(harness, intent.id)).filter((e) => e.event_type === "governance.approval_denied")).toHaveLength(2));
  });

  it("agents never decide; neither does the requester, even with an operator key", async () => {
    const intent = await createIntent(harness);
    const a = (await request(intent.id)).data;
    await expectRejected(decide(intent.id, a.id, "approve", "agent"), 403, "FORBIDDEN");
    const own = (await request(intent.id, { action: "complete" }, "operator")).data;
    await expectRejected(decide(intent.id, own.id, "approve", "operator"), 403, "SELF_APPROVAL");
    expect((await getApproval(intent.id, own.id)).status).toBe("pending");
  });

  it("concurrent approve and deny: exactly one decision, one event", async () => {
    const intent = await createIntent(harness);
    const a = (await request(intent.id)).data;
    const verbs = ["approve", "deny", "approve", "deny", "approve", "deny", "approve", "deny"] as const;
    const keys = ["operator", "coordinator", "admin"] as const;
    const results = await Promise.all(verbs.map((verb, i) => settle(decide(intent.id, a.id, verb, keys[i % 3]))));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(verbs.length - 1);
    const winner = results.find((r) => r.status === 200)!.decision!;
    expect(await getApproval(intent.id, a.id)).toMatchObject({ status: winner.status, decided_by: winner.decided_by });
    await new Promise((r) => setTimeout(r, 300));
    const decisions = (await allEvents(harness, intent.id)).filter((e) => e.event_type.startsWith("governance.approval_"));
    expect(decisions).toHaveLength(1);
  });
});

describe("engagement decisions (4.5)", () => {
  it("answers the decision and logs engagement.decision with it; signals take the spec's defaults; out-of-range is 400", async () => {
    const intent = await createIntent(harness);
    const engage = (intentId: string, body: BodyOf<"governanceDecideEngagement">, key: "agent" | "admin" = "admin") =>
      harness.sdk(key).send("governanceDecideEngagement", { intent_id: intentId, body });
    const res = await engage(intent.id, { risk: 0.9, confidence: 0.2 }, "agent");
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ mode: "defer", should_ask: false, signals: { confidence: 0.2, risk: 0.9, reversibility: 1, context: {} } });
    expect(typeof res.data.rationale).toBe("string");
    expect((await engage(intent.id, {})).data).toMatchObject({ mode: "autonomous", should_ask: false });
    await vi.waitFor(async () => expect((await allEvents(harness, intent.id)).filter((e) => e.event_type === "engagement.decision")).toHaveLength(2));
    const logged = (await allEvents(harness, intent.id)).find((e) => e.event_type === "engagement.decision")!;
    expect(logged.payload).toMatchObject({ mode: "defer", should_ask: false, signals: { risk: 0.9 } });
    await expectRejected(engage(intent.id, { risk: 1.5 }), 400, "VALIDATION_FAILED");
    await expectRejected(engage(UNKNOWN_ID, {}), 404, "INTENT_NOT_FOUND");
  });
});
