import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import type { BodyOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectRejected, keyHeader } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";

/**
 * An approval's decision across the gateway's live stream: governance.approval_granted reaches
 * the intent's SSE subscribers. The approval rules themselves are tested in the governance
 * service's lane (services/governance/test/approvals.service.test.ts).
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const request = (intentId: string, body: BodyOf<"governanceCreateApproval"> = { action: "complete", reason: "done", context: { pr: 7 } }, key: "agent" | "operator" | "admin" = "agent") =>
  cluster.sdk(key, key === "agent" ? "writer" : undefined).send("governanceCreateApproval", { intent_id: intentId, body });
const decide = (intentId: string, approvalId: string, verb: "approve" | "deny", key: "operator" | "coordinator" | "admin" | "agent" = "operator", body: BodyOf<"governanceApprove"> = {}) =>
  cluster.sdk(key).send(verb === "approve" ? "governanceApprove" : "governanceDeny", { intent_id: intentId, approval_id: approvalId, body });

describe("approvals (4.6)", () => {
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

});
