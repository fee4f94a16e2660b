import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { IntentmeshError, type BodyOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected, keyHeader, UNKNOWN_ID } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const request = (intentId: string, body: BodyOf<"governanceCreateApproval"> = { action: "complete", reason: "done", context: { pr: 7 } }, key: "agent" | "operator" | "admin" = "agent") =>
  cluster.sdk(key, key === "agent" ? "writer" : undefined).send("governanceCreateApproval", { intent_id: intentId, body });
/** Raw on purpose: bodies the typed request forbids. */
const requestRaw = (intentId: string, body: unknown) => cluster.api(`/intents/${intentId}/approvals`, { body, key: "agent", headers: { "X-Agent-ID": "writer" } });
const decide = (intentId: string, approvalId: string, verb: "approve" | "deny", key: "operator" | "coordinator" | "admin" | "agent" = "operator", body: BodyOf<"governanceApprove"> = {}) =>
  cluster.sdk(key).send(verb === "approve" ? "governanceApprove" : "governanceDeny", { intent_id: intentId, approval_id: approvalId, body });
/** Raw on purpose: a decision with no body at all, as the Python client sends it. */
const decideWithoutBody = (intentId: string, approvalId: string, verb: "approve" | "deny", key: "operator" | "coordinator" | "admin") =>
  cluster.api(`/intents/${intentId}/approvals/${approvalId}/${verb}`, { method: "POST", key, rawBody: "", headers: { "Content-Type": "application/json" } });
const getApproval = (intentId: string, approvalId: string) => cluster.sdk().ops.governanceGetApproval({ intent_id: intentId, approval_id: approvalId });
const listApprovals = (intentId: string, query: { status?: "pending" | "approved" | "denied" } = {}) => cluster.sdk().ops.governanceListApprovals({ intent_id: intentId, query });
/** The status (and error code) of a decision that may lose the race. */
const settle = (call: Promise<{ status: number; data: { status: string; decided_by: string | null } }>) =>
  call.then(
    (res) => ({ status: res.status, decision: res.data }),
    (error: unknown) => (error instanceof IntentmeshError ? { status: error.status, decision: undefined } : Promise.reject(error)),
  );

describe("approvals (4.6)", () => {
  it("creates a pending approval, reads it and lists it; unknown intents and approvals are 404; bad bodies 400", async () => {
    const intent = await createIntent(cluster);
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

  it("approve: decided_by is the key's principal (never a body field), governance.approval_granted over SSE, then 409 when not pending", async () => {
    const intent = await createIntent(cluster);
    const approval = (await request(intent.id)).data;
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader("admin"));
    const res = await decide(intent.id, approval.id, "approve", "operator", { notes: "fine", approved_by: "mallory" });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ status: "approved", decided_by: "operator", decision_notes: "fine" });
    await sse.waitFor((c) => c.events.some((e) => e.event === "governance.approval_granted"));
    await sse.close();
    const event = (await allEvents(cluster, intent.id)).find((e) => e.event_type === "governance.approval_granted")!;
    expect(event.payload).toMatchObject({ approval_id: approval.id, action: "complete", decision: "approved", requested_by: "writer", decided_by: "operator" });
    await expectRejected(decide(intent.id, approval.id, "deny"), 409, "APPROVAL_NOT_PENDING");
    await expectRejected(decide(intent.id, approval.id, "approve"), 409, "APPROVAL_NOT_PENDING");
  });

  it("deny with an optional reason, or with no body at all (the Python client)", async () => {
    const intent = await createIntent(cluster);
    const a = (await request(intent.id)).data;
    const denied = await decide(intent.id, a.id, "deny", "coordinator", { reason: "not yet" });
    expect(denied.data).toMatchObject({ status: "denied", decided_by: "coordinator", decision_notes: "not yet" });
    const b = (await request(intent.id)).data;
    expect((await decideWithoutBody(intent.id, b.id, "deny", "admin")).body).toMatchObject({ status: "denied", decided_by: "admin", decision_notes: null });
    await vi.waitFor(async () => expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "governance.approval_denied")).toHaveLength(2));
  });

  it("agents never decide; neither does the requester, even with an operator key", async () => {
    const intent = await createIntent(cluster);
    const a = (await request(intent.id)).data;
    await expectRejected(decide(intent.id, a.id, "approve", "agent"), 403, "FORBIDDEN");
    const own = (await request(intent.id, { action: "complete" }, "operator")).data;
    await expectRejected(decide(intent.id, own.id, "approve", "operator"), 403, "SELF_APPROVAL");
    expect((await getApproval(intent.id, own.id)).status).toBe("pending");
  });

  it("concurrent approve and deny: exactly one decision, one event", async () => {
    const intent = await createIntent(cluster);
    const a = (await request(intent.id)).data;
    const verbs = ["approve", "deny", "approve", "deny", "approve", "deny", "approve", "deny"] as const;
    const keys = ["operator", "coordinator", "admin"] as const;
    const results = await Promise.all(verbs.map((verb, i) => settle(decide(intent.id, a.id, verb, keys[i % 3]))));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(verbs.length - 1);
    const winner = results.find((r) => r.status === 200)!.decision!;
    expect(await getApproval(intent.id, a.id)).toMatchObject({ status: winner.status, decided_by: winner.decided_by });
    await new Promise((r) => setTimeout(r, 300));
    const decisions = (await allEvents(cluster, intent.id)).filter((e) => e.event_type.startsWith("governance.approval_"));
    expect(decisions).toHaveLength(1);
  });
});

describe("engagement decisions (4.5)", () => {
  it("answers the decision and logs engagement.decision with it; signals take the spec's defaults; out-of-range is 400", async () => {
    const intent = await createIntent(cluster);
    const engage = (intentId: string, body: BodyOf<"governanceDecideEngagement">, key: "agent" | "admin" = "admin") =>
      cluster.sdk(key).send("governanceDecideEngagement", { intent_id: intentId, body });
    const res = await engage(intent.id, { risk: 0.9, confidence: 0.2 }, "agent");
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ mode: "defer", should_ask: false, signals: { confidence: 0.2, risk: 0.9, reversibility: 1, context: {} } });
    expect(typeof res.data.rationale).toBe("string");
    expect((await engage(intent.id, {})).data).toMatchObject({ mode: "autonomous", should_ask: false });
    await vi.waitFor(async () => expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "engagement.decision")).toHaveLength(2));
    const logged = (await allEvents(cluster, intent.id)).find((e) => e.event_type === "engagement.decision")!;
    expect(logged.payload).toMatchObject({ mode: "defer", should_ask: false, signals: { risk: 0.9 } });
    await expectRejected(engage(intent.id, { risk: 1.5 }), 400, "VALIDATION_FAILED");
    await expectRejected(engage(UNKNOWN_ID, {}), 404, "INTENT_NOT_FOUND");
  });
});
