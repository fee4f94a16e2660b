import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, keyHeader, UNKNOWN_ID } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const request = (intentId: string, body: Record<string, unknown> = { action: "complete", reason: "done", context: { pr: 7 } }, key: "agent" | "operator" | "admin" = "agent") =>
  cluster.api(`/intents/${intentId}/approvals`, { body, key, headers: key === "agent" ? { "X-Agent-ID": "writer" } : {} });
const decide = (intentId: string, approvalId: string, verb: "approve" | "deny", key: "operator" | "coordinator" | "admin" | "agent" = "operator", body?: unknown) =>
  cluster.api(`/intents/${intentId}/approvals/${approvalId}/${verb}`, { method: "POST", key, ...(body === undefined ? { rawBody: "", headers: { "Content-Type": "application/json" } } : { body }) });

describe("approvals (4.6)", () => {
  it("creates a pending approval, reads it and lists it; unknown intents and approvals are 404; bad bodies 400", async () => {
    const intent = await createIntent(cluster);
    const created = await request(intent.id);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ intent_id: intent.id, action: "complete", reason: "done", context: { pr: 7 }, requested_by: "writer", status: "pending", decided_by: null });
    expect((await cluster.api(`/intents/${intent.id}/approvals/${created.body.id}`)).body).toEqual(created.body);
    expect((await cluster.api(`/intents/${intent.id}/approvals`)).body.approvals).toEqual([created.body]);
    expect((await cluster.api(`/intents/${intent.id}/approvals?status=approved`)).body.approvals).toEqual([]);
    expectError(await cluster.api(`/intents/${intent.id}/approvals/${UNKNOWN_ID}`), 404, "APPROVAL_NOT_FOUND");
    expectError(await cluster.api(`/intents/${intent.id}/approvals/nope`), 404, "APPROVAL_NOT_FOUND");
    expectError(await request(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
    expectError(await cluster.api(`/intents/${UNKNOWN_ID}/approvals`), 404, "INTENT_NOT_FOUND");
    expectError(await request(intent.id, { reason: "no action" }), 400, "VALIDATION_FAILED");
    expectError(await request(intent.id, { action: "complete", extra: 1 }), 400, "VALIDATION_FAILED");
  });

  it("approve: decided_by is the key's principal (never a body field), governance.approval_granted over SSE, then 409 when not pending", async () => {
    const intent = await createIntent(cluster);
    const approval = (await request(intent.id)).body;
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader("admin"));
    const res = await decide(intent.id, approval.id, "approve", "operator", { notes: "fine", approved_by: "mallory" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ status: "approved", decided_by: "operator", decision_notes: "fine" });
    await sse.waitFor((c) => c.events.some((e) => e.event === "governance.approval_granted"));
    await sse.close();
    const event = (await allEvents(cluster, intent.id)).find((e) => e.event_type === "governance.approval_granted");
    expect(event.payload).toMatchObject({ approval_id: approval.id, action: "complete", decision: "approved", requested_by: "writer", decided_by: "operator" });
    expectError(await decide(intent.id, approval.id, "deny"), 409, "APPROVAL_NOT_PENDING");
    expectError(await decide(intent.id, approval.id, "approve"), 409, "APPROVAL_NOT_PENDING");
  });

  it("deny with an optional reason, or with no body at all (the Python client)", async () => {
    const intent = await createIntent(cluster);
    const a = (await request(intent.id)).body;
    const denied = await decide(intent.id, a.id, "deny", "coordinator", { reason: "not yet" });
    expect(denied.body).toMatchObject({ status: "denied", decided_by: "coordinator", decision_notes: "not yet" });
    const b = (await request(intent.id)).body;
    expect((await decide(intent.id, b.id, "deny", "admin")).body).toMatchObject({ status: "denied", decided_by: "admin", decision_notes: null });
    await vi.waitFor(async () => expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "governance.approval_denied")).toHaveLength(2));
  });

  it("agents never decide; neither does the requester, even with an operator key", async () => {
    const intent = await createIntent(cluster);
    const a = (await request(intent.id)).body;
    expectError(await decide(intent.id, a.id, "approve", "agent"), 403, "FORBIDDEN");
    const own = (await request(intent.id, { action: "complete" }, "operator")).body;
    expectError(await decide(intent.id, own.id, "approve", "operator"), 403, "SELF_APPROVAL");
    expect((await cluster.api(`/intents/${intent.id}/approvals/${own.id}`)).body.status).toBe("pending");
  });

  it("concurrent approve and deny: exactly one decision, one event", async () => {
    const intent = await createIntent(cluster);
    const a = (await request(intent.id)).body;
    const verbs = ["approve", "deny", "approve", "deny", "approve", "deny", "approve", "deny"] as const;
    const keys = ["operator", "coordinator", "admin"] as const;
    const results = await Promise.all(verbs.map((verb, i) => decide(intent.id, a.id, verb, keys[i % 3])));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(verbs.length - 1);
    const winner = results.find((r) => r.status === 200)!.body;
    expect((await cluster.api(`/intents/${intent.id}/approvals/${a.id}`)).body).toMatchObject({ status: winner.status, decided_by: winner.decided_by });
    await new Promise((r) => setTimeout(r, 300));
    const decisions = (await allEvents(cluster, intent.id)).filter((e) => e.event_type.startsWith("governance.approval_"));
    expect(decisions).toHaveLength(1);
  });
});

describe("engagement decisions (4.5)", () => {
  it("answers the decision and logs engagement.decision with it; signals take the spec's defaults; out-of-range is 400", async () => {
    const intent = await createIntent(cluster);
    const res = await cluster.api(`/intents/${intent.id}/engagement`, { body: { risk: 0.9, confidence: 0.2 }, key: "agent" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ mode: "defer", should_ask: false, signals: { confidence: 0.2, risk: 0.9, reversibility: 1, context: {} } });
    expect(typeof res.body.rationale).toBe("string");
    expect((await cluster.api(`/intents/${intent.id}/engagement`, { body: {} })).body).toMatchObject({ mode: "autonomous", should_ask: false });
    await vi.waitFor(async () => expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "engagement.decision")).toHaveLength(2));
    const logged = (await allEvents(cluster, intent.id)).find((e) => e.event_type === "engagement.decision");
    expect(logged.payload).toMatchObject({ mode: "defer", should_ask: false, signals: { risk: 0.9 } });
    expectError(await cluster.api(`/intents/${intent.id}/engagement`, { body: { risk: 1.5 } }), 400, "VALIDATION_FAILED");
    expectError(await cluster.api(`/intents/${UNKNOWN_ID}/engagement`, { body: {} }), 404, "INTENT_NOT_FOUND");
  });
});
