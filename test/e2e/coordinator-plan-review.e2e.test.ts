import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectRejected, uniqueTag } from "../support/e2e-helpers";

/**
 * RFC-0013 3.4 on the lease holder's own plan acts (docs/coordinators.md, "Plan review gate"):
 * under requires_plan_review the coordinator's plans start only after its supervisor's review,
 * under requires_replan_review it does not change an active plan alone. Its decision records are
 * held to the same guardrails elsewhere (coordinators.e2e, "guardrails").
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

/** The coordinator key acting as the agent: coordinators create and change plans with it. */
const coordinatorKey = (agentId: string) => cluster.sdk("coordinator", agentId);
const agentKey = (agentId: string) => cluster.sdk("agent", agentId);

async function holding(guardrails: Record<string, unknown>) {
  const intent = await createIntent(cluster);
  const holder = uniqueTag("coord");
  const lead = uniqueTag("lead");
  const lease = await agentKey(holder).ops.coordinatorsCreateLease({ body: { agent_id: holder, intent_id: intent.id, supervisor_id: lead, heartbeat_interval_seconds: 3600, guardrails } });
  return { intent, holder, lead, lease };
}
const violations = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type === "coordinator.guardrail_violation").map((e) => e.payload);

describe("the review gate on the holder's own plans", () => {
  it("requires_plan_review: the holder's plan is not created active nor activated by it (403, logged, nothing written); its supervisor activates the draft", async () => {
    const { intent, holder, lead, lease } = await holding({ review: { requires_plan_review: true } });
    const holderClient = coordinatorKey(holder);
    const refused = await expectRejected(holderClient.ops.plansCreateForIntent({ intent_id: intent.id, body: { title: "straight to work", steps: [{ title: "gather" }] } }), 403, "GUARDRAIL_VIOLATION");
    expect(refused.details).toMatchObject({ guardrail: "requires_plan_review", attempted_value: true, limit: true });
    await expectRejected(holderClient.ops.plansDecompose({ intent_id: intent.id, body: { task_description: "Launch\n- draft\n- publish" } }), 403, "GUARDRAIL_VIOLATION");
    expect(await holderClient.ops.plansList({ intent_id: intent.id })).toEqual([]);
    expect(await holderClient.ops.tasksList({ intent_id: intent.id })).toMatchObject({ tasks: [] });

    const draft = await holderClient.ops.plansCreateForIntent({ intent_id: intent.id, body: { title: "proposed", state: "draft", steps: [{ title: "gather" }] } });
    expect(draft.state).toBe("draft");
    await expectRejected(holderClient.ops.plansUpdate({ plan_id: draft.id, ifMatch: draft.version, body: { state: "active" } }), 403, "GUARDRAIL_VIOLATION");
    expect((await holderClient.ops.plansGet({ plan_id: draft.id })).state).toBe("draft");
    expect(await violations(intent.id)).toEqual([
      expect.objectContaining({ lease_id: lease.id, coordinator_id: holder, guardrail: "requires_plan_review", action: "plan_activated", decision_type: null }),
      expect.objectContaining({ guardrail: "requires_plan_review", action: "plan_activated" }),
      expect.objectContaining({ guardrail: "requires_plan_review", action: "plan_activated" }),
    ]);

    const approved = await agentKey(lead).ops.plansSupervisorApprove({ plan_id: draft.id, body: { comment: "go" } });
    expect(approved.state).toBe("active");
  });

  it("requires_replan_review: the holder does not change an active plan's tasks, conditions or checkpoints; its title it may, and its supervisor may change the plan", async () => {
    const { intent, holder, lead } = await holding({ requires_replan_review: true });
    const holderClient = coordinatorKey(holder);
    // Without requires_plan_review the holder's plan starts active at once.
    const plan = await holderClient.ops.plansCreateForIntent({ intent_id: intent.id, body: { title: "v1", steps: [{ title: "gather" }] } });
    expect(plan.state).toBe("active");
    const refused = await expectRejected(
      holderClient.ops.plansUpdate({ plan_id: plan.id, ifMatch: plan.version, body: { conditions: [{ task_id: plan.tasks[0]!, when: "true" }] } }),
      403,
      "GUARDRAIL_VIOLATION",
    );
    expect(refused.details).toMatchObject({ guardrail: "requires_replan_review" });
    const unchanged = await holderClient.ops.plansGet({ plan_id: plan.id });
    expect(unchanged.version).toBe(plan.version);
    expect(unchanged.conditions).toEqual([]);
    const renamed = await holderClient.ops.plansUpdate({ plan_id: plan.id, ifMatch: plan.version, body: { title: "v1, renamed" } });
    expect(renamed.title).toBe("v1, renamed");
    const overridden = await cluster.sdk("coordinator", lead).ops.plansUpdate({ plan_id: plan.id, ifMatch: renamed.version, body: { conditions: [{ task_id: plan.tasks[0]!, when: "true" }] } });
    expect(overridden.conditions).toHaveLength(1);
  });

  it("another caller's plans are not the coordinator's: an admin creates and activates plans on the same intent", async () => {
    const { intent } = await holding({ requires_plan_review: true, requires_replan_review: true });
    const admin = cluster.sdk("admin");
    const plan = await admin.ops.plansCreateForIntent({ intent_id: intent.id, body: { title: "the operator's", steps: [{ title: "gather" }] } });
    expect(plan.state).toBe("active");
    expect(await violations(intent.id)).toEqual([]);
  });
});
