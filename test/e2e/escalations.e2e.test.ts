import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import type { BodyOf, QueryOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectRejected, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";

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

const escalate = (intentId: string, agent: string, extra: Partial<BodyOf<"escalationsCreate">> = {}) =>
  cluster.sdk("agent", agent).send("escalationsCreate", { intent_id: intentId, body: { reason: "budget nearly spent", priority: "high", urgency: "critical", context: { spent: 48 }, escalated_by: agent, ...extra } });
const resolve = (id: string, key: "operator" | "agent" | "admin" = "operator", body: BodyOf<"escalationsResolve"> = { resolution: "raise the budget", notes: "one time", resolved_by: "lead" }) =>
  cluster.sdk(key).send("escalationsResolve", { escalation_id: id, body });
const escalations = (query: QueryOf<"escalationsList"> = {}, key: "admin" | "agent" | "coordinator" = "admin") =>
  cluster.sdk(key).ops.escalationsList({ query }).then((list) => list.escalations);
const approvalsOf = async (intentId: string) => (await cluster.sdk().ops.governanceListApprovals({ intent_id: intentId })).approvals;

describe("escalations", () => {
  it("escalate_to_human, list_escalations, resolve_escalation: one approval request, resolved once by a human", async () => {
    const intent = await createIntent(cluster);
    const agent = uniqueTag("coord");
    const created = await escalate(intent.id, agent);
    expect(created.status).toBe(201);
    const escalation = created.data;
    // Escalation.from_dict reads id, intent_id, escalated_by, reason, priority, urgency, context, status, created_at.
    expect(escalation).toMatchObject({ intent_id: intent.id, escalated_by: agent, reason: "budget nearly spent", priority: "high", urgency: "critical", context: { spent: 48 }, status: "pending", resolved_at: null, resolution: null });
    expect(escalation.created_at).toMatch(/\+00:00$/);
    // It is an approval request of the intent.
    const approvals = await approvalsOf(intent.id);
    expect(approvals).toEqual([expect.objectContaining({ id: escalation.id, action: "escalation", status: "pending", requested_by: agent })]);

    const listed = await escalations({ intent_id: intent.id, status: "pending" });
    expect(listed.map((e) => e.id)).toEqual([escalation.id]);
    expect(await escalations({ intent_id: intent.id, status: "resolved" })).toEqual([]);
    expect((await escalations({ limit: 500 })).map((e) => e.id)).toContain(escalation.id);

    await expectRejected(resolve(escalation.id, "agent"), 403, "FORBIDDEN");
    const done = await resolve(escalation.id);
    expect(done.status).toBe(200);
    expect(done.data).toMatchObject({ id: escalation.id, status: "resolved", resolution: "raise the budget", resolution_notes: "one time", resolved_by: "operator" });
    expect(done.data.resolved_at).toMatch(/\+00:00$/);
    await expectRejected(resolve(escalation.id, "admin"), 409, "APPROVAL_NOT_PENDING");
    expect((await escalations({ intent_id: intent.id, status: "resolved" })).map((e) => e.id)).toEqual([escalation.id]);
    await vi.waitFor(async () => {
      const granted = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "governance.approval_granted");
      expect(granted.map((e) => e.payload)).toEqual([expect.objectContaining({ approval_id: escalation.id, action: "escalation", decided_by: "operator" })]);
    });
  });

  it("refuses a resolution by its escalator, an unknown escalation, an escalated_by that is not the caller, an unknown intent", async () => {
    const intent = await createIntent(cluster);
    const mine = await cluster.sdk("operator").send("escalationsCreate", { intent_id: intent.id, body: { reason: "self" } });
    expect(mine.status).toBe(201);
    await expectRejected(resolve(mine.data.id, "operator"), 403, "SELF_APPROVAL");
    await expectRejected(resolve(UNKNOWN_ID), 404, "ESCALATION_NOT_FOUND");
    await expectRejected(escalate(intent.id, uniqueTag("a"), { escalated_by: "someone-else" }), 400, "AGENT_MISMATCH");
    await expectRejected(escalate(UNKNOWN_ID, uniqueTag("a")), 404, "INTENT_NOT_FOUND");
    // An approval that is not an escalation is not resolvable here.
    const approval = await cluster.sdk("agent", uniqueTag("a")).ops.governanceCreateApproval({ intent_id: intent.id, body: { action: "deploy" } });
    await expectRejected(resolve(approval.id), 404, "ESCALATION_NOT_FOUND");
  });

  it("denying its approval dismisses the escalation", async () => {
    const intent = await createIntent(cluster);
    const escalation = (await escalate(intent.id, uniqueTag("coord"))).data;
    const denied = await cluster.sdk("operator").send("governanceDeny", { intent_id: intent.id, approval_id: escalation.id, body: { reason: "not needed" } });
    expect(denied.status).toBe(200);
    const [listed] = await escalations({ intent_id: intent.id });
    expect(listed).toMatchObject({ status: "dismissed", resolution: null, resolution_notes: "not needed" });
    expect(await escalations({ intent_id: intent.id, status: "dismissed" })).toHaveLength(1);
  });

  it("lists, without intent_id, only the escalations of intents the caller may read (RFC-0011)", async () => {
    const open = await createIntent(cluster, { title: "open" });
    const closed = await createIntent(cluster, { title: "closed", acl: { default_policy: "closed" } }, "coordinator");
    const a = (await escalate(open.id, uniqueTag("c"))).data;
    const b = await cluster.sdk("coordinator").ops.escalationsCreate({ intent_id: closed.id, body: { reason: "private" } });
    const seen = (await escalations({ limit: 500 }, "agent")).map((e) => e.id);
    expect(seen).toContain(a.id);
    expect(seen).not.toContain(b.id);
    expect((await escalations({ limit: 500 }, "coordinator")).map((e) => e.id)).toContain(b.id);
    await expectRejected(escalations({ intent_id: closed.id }, "agent"), 403, "INTENT_ACCESS_DENIED");
  });
});

describe("arbitration", () => {
  it("request_arbitration: an approval request with action arbitration, answered as the client's ArbitrationRequest", async () => {
    const intent = await createIntent(cluster);
    const agent = uniqueTag("coord");
    const res = await cluster.sdk("agent", agent).send("arbitrationRequest", { intent_id: intent.id, body: { reason: "two agents disagree", context: { options: ["a", "b"] } } });
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ intent_id: intent.id, requester_id: agent, reason: "two agents disagree", context: { options: ["a", "b"] }, status: "pending" });
    expect(res.data.created_at).toMatch(/\+00:00$/);
    const approvals = await approvalsOf(intent.id);
    expect(approvals).toEqual([expect.objectContaining({ id: res.data.id, action: "arbitration", status: "pending" })]);
    await expectRejected(cluster.sdk().send("arbitrationRequest", { intent_id: UNKNOWN_ID, body: { reason: "x" } }), 404, "INTENT_NOT_FOUND");
  });

  it("get_arbitration (the MCP server's GET /intents/{id}/arbitration): the intent's arbitration requests with their status, escalations left out", async () => {
    const intent = await createIntent(cluster);
    const agent = uniqueTag("coord");
    const ask = (reason: string) => cluster.sdk("agent", agent).ops.arbitrationRequest({ intent_id: intent.id, body: { reason } });
    const first = await ask("first");
    // Oldest first: on the test's manual clock two requests of one instant would be ordered by id.
    (cluster.clock as ManualClock).advance(1000);
    const second = await ask("second");
    expect((await escalate(intent.id, agent)).status).toBe(201);
    const denied = await cluster.sdk("operator").send("governanceDeny", { intent_id: intent.id, approval_id: first.id, body: { reason: "no" } });
    expect(denied.status).toBe(200);
    const history = await cluster.sdk("agent", agent).send("arbitrationHistory", { intent_id: intent.id });
    expect(history.status).toBe(200);
    expect(history.data).toMatchObject({ intent_id: intent.id, pending: 1, has_more: false });
    expect(history.data.requests.map((r) => [r.id, r.status])).toEqual([
      [first.id, "denied"],
      [second.id, "pending"],
    ]);
    expect(await cluster.sdk().ops.arbitrationHistory({ intent_id: intent.id, query: { limit: 1 } })).toMatchObject({ has_more: true, requests: [{ id: first.id }] });
    await expectRejected(cluster.sdk().send("arbitrationHistory", { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
  });
});
