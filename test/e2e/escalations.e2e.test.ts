import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";

/**
 * Escalations to a human and arbitration requests (docs/coordinators.md "Escalations"), as the
 * official Python client sends them (escalate_to_human, list_escalations, resolve_escalation,
 * request_arbitration): approval requests of the governance service, decided once by a human key.
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const escalate = (intentId: string, agent: string, extra: Record<string, unknown> = {}) =>
  cluster.api(`/intents/${intentId}/escalations`, { key: "agent", headers: { "X-Agent-ID": agent }, body: { reason: "budget nearly spent", priority: "high", urgency: "critical", context: { spent: 48 }, escalated_by: agent, ...extra } });
const resolve = (id: string, key: "operator" | "agent" | "admin" = "operator", body: Record<string, unknown> = { resolution: "raise the budget", notes: "one time", resolved_by: "lead" }) =>
  cluster.api(`/escalations/${id}/resolve`, { key, body });

describe("escalations", () => {
  it("escalate_to_human, list_escalations, resolve_escalation: one approval request, resolved once by a human", async () => {
    const intent = await createIntent(cluster);
    const agent = uniqueTag("coord");
    const created = await escalate(intent.id, agent);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const escalation = created.body;
    // Escalation.from_dict reads id, intent_id, escalated_by, reason, priority, urgency, context, status, created_at.
    expect(escalation).toMatchObject({ intent_id: intent.id, escalated_by: agent, reason: "budget nearly spent", priority: "high", urgency: "critical", context: { spent: 48 }, status: "pending", resolved_at: null, resolution: null });
    expect(escalation.created_at).toMatch(/\+00:00$/);
    // It is an approval request of the intent.
    const approvals = (await cluster.api(`/intents/${intent.id}/approvals`)).body.approvals;
    expect(approvals).toEqual([expect.objectContaining({ id: escalation.id, action: "escalation", status: "pending", requested_by: agent })]);

    const listed = await cluster.api(`/escalations?intent_id=${intent.id}&status=pending`);
    expect(listed.body.escalations.map((e: any) => e.id)).toEqual([escalation.id]);
    expect((await cluster.api(`/escalations?intent_id=${intent.id}&status=resolved`)).body.escalations).toEqual([]);
    expect((await cluster.api("/escalations?limit=500")).body.escalations.map((e: any) => e.id)).toContain(escalation.id);

    expectError(await resolve(escalation.id, "agent"), 403, "FORBIDDEN");
    const done = await resolve(escalation.id);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ id: escalation.id, status: "resolved", resolution: "raise the budget", resolution_notes: "one time", resolved_by: "operator" });
    expect(done.body.resolved_at).toMatch(/\+00:00$/);
    expectError(await resolve(escalation.id, "admin"), 409, "APPROVAL_NOT_PENDING");
    expect((await cluster.api(`/escalations?intent_id=${intent.id}&status=resolved`)).body.escalations.map((e: any) => e.id)).toEqual([escalation.id]);
    await vi.waitFor(async () => {
      const granted = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "governance.approval_granted");
      expect(granted.map((e) => e.payload)).toEqual([expect.objectContaining({ approval_id: escalation.id, action: "escalation", decided_by: "operator" })]);
    });
  });

  it("refuses a resolution by its escalator, an unknown escalation, an escalated_by that is not the caller, an unknown intent", async () => {
    const intent = await createIntent(cluster);
    const mine = await cluster.api(`/intents/${intent.id}/escalations`, { key: "operator", body: { reason: "self" } });
    expect(mine.status).toBe(201);
    expectError(await resolve(mine.body.id, "operator"), 403, "SELF_APPROVAL");
    expectError(await resolve(UNKNOWN_ID), 404, "ESCALATION_NOT_FOUND");
    expectError(await escalate(intent.id, uniqueTag("a"), { escalated_by: "someone-else" }), 400, "AGENT_MISMATCH");
    expectError(await escalate(UNKNOWN_ID, uniqueTag("a")), 404, "INTENT_NOT_FOUND");
    // An approval that is not an escalation is not resolvable here.
    const approval = await cluster.api(`/intents/${intent.id}/approvals`, { key: "agent", headers: { "X-Agent-ID": uniqueTag("a") }, body: { action: "deploy" } });
    expectError(await resolve(approval.body.id), 404, "ESCALATION_NOT_FOUND");
  });

  it("denying its approval dismisses the escalation", async () => {
    const intent = await createIntent(cluster);
    const escalation = (await escalate(intent.id, uniqueTag("coord"))).body;
    const denied = await cluster.api(`/intents/${intent.id}/approvals/${escalation.id}/deny`, { key: "operator", body: { reason: "not needed" } });
    expect(denied.status, JSON.stringify(denied.body)).toBe(200);
    const [listed] = (await cluster.api(`/escalations?intent_id=${intent.id}`)).body.escalations;
    expect(listed).toMatchObject({ status: "dismissed", resolution: null, resolution_notes: "not needed" });
    expect((await cluster.api(`/escalations?intent_id=${intent.id}&status=dismissed`)).body.escalations).toHaveLength(1);
  });

  it("lists, without intent_id, only the escalations of intents the caller may read (RFC-0011)", async () => {
    const open = await createIntent(cluster, { title: "open" });
    const closed = await createIntent(cluster, { title: "closed", acl: { default_policy: "closed" } }, "coordinator");
    const a = (await escalate(open.id, uniqueTag("c"))).body;
    const b = (await cluster.api(`/intents/${closed.id}/escalations`, { key: "coordinator", body: { reason: "private" } })).body;
    const seen = (await cluster.api("/escalations?limit=500", { key: "agent" })).body.escalations.map((e: any) => e.id);
    expect(seen).toContain(a.id);
    expect(seen).not.toContain(b.id);
    expect((await cluster.api("/escalations?limit=500", { key: "coordinator" })).body.escalations.map((e: any) => e.id)).toContain(b.id);
    expectError(await cluster.api(`/escalations?intent_id=${closed.id}`, { key: "agent" }), 403, "INTENT_ACCESS_DENIED");
  });
});

describe("arbitration", () => {
  it("request_arbitration: an approval request with action arbitration, answered as the client's ArbitrationRequest", async () => {
    const intent = await createIntent(cluster);
    const agent = uniqueTag("coord");
    const res = await cluster.api(`/intents/${intent.id}/arbitrate`, { key: "agent", headers: { "X-Agent-ID": agent }, body: { reason: "two agents disagree", context: { options: ["a", "b"] } } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ intent_id: intent.id, requester_id: agent, reason: "two agents disagree", context: { options: ["a", "b"] }, status: "pending" });
    expect(res.body.created_at).toMatch(/\+00:00$/);
    const approvals = (await cluster.api(`/intents/${intent.id}/approvals`)).body.approvals;
    expect(approvals).toEqual([expect.objectContaining({ id: res.body.id, action: "arbitration", status: "pending" })]);
    expectError(await cluster.api(`/intents/${UNKNOWN_ID}/arbitrate`, { body: { reason: "x" } }), 404, "INTENT_NOT_FOUND");
  });

  it("get_arbitration (the MCP server's GET /intents/{id}/arbitration): the intent's arbitration requests with their status, escalations left out", async () => {
    const intent = await createIntent(cluster);
    const agent = uniqueTag("coord");
    const ask = (reason: string) => cluster.api(`/intents/${intent.id}/arbitrate`, { key: "agent", headers: { "X-Agent-ID": agent }, body: { reason } });
    const first = (await ask("first")).body;
    // Oldest first: on the test's manual clock two requests of one instant would be ordered by id.
    (cluster.clock as ManualClock).advance(1000);
    const second = (await ask("second")).body;
    expect((await escalate(intent.id, agent)).status).toBe(201);
    const denied = await cluster.api(`/intents/${intent.id}/approvals/${first.id}/deny`, { key: "operator", body: { reason: "no" } });
    expect(denied.status, JSON.stringify(denied.body)).toBe(200);
    const history = await cluster.api(`/intents/${intent.id}/arbitration`, { key: "agent", headers: { "X-Agent-ID": agent } });
    expect(history.status, JSON.stringify(history.body)).toBe(200);
    expect(history.body).toMatchObject({ intent_id: intent.id, pending: 1, has_more: false });
    expect(history.body.requests.map((r: any) => [r.id, r.status])).toEqual([
      [first.id, "denied"],
      [second.id, "pending"],
    ]);
    expect((await cluster.api(`/intents/${intent.id}/arbitration?limit=1`)).body).toMatchObject({ has_more: true, requests: [{ id: first.id }] });
    expectError(await cluster.api(`/intents/${UNKNOWN_ID}/arbitration`), 404, "INTENT_NOT_FOUND");
  });
});
