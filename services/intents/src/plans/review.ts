import { and, eq, inArray } from "drizzle-orm";
import { appError, type Caller, type Plan, type PlanState, type TaskStatus } from "@intentmesh/contracts";
import type { IntentsContext } from "../kernel/context";
import { coordinatorLeases } from "../db/schema-coordinators";
import { tasks } from "../db/schema-tasks";
import { appendToLog, lockIntentRow } from "../kernel/event-log";
import { assertSupervises } from "../coordinators/supervision";
import { advancePlan } from "./effects";
import { assertPlanTransition } from "./rules";
import { planEvent, readPlan, stateEvent, tasksOfPlan, toPlan, updatePlanRow } from "./statements";

type Review = { kind: "approve"; comment: string | null } | { kind: "reject"; reason: string };

/**
 * POST /plans/{id}/approve and /reject (RFC-0013 2.1 "approve plan: sign off on a plan at a review
 * gate", "reject plan: reject a plan with feedback"; docs/coordinators.md). The review gate is "a
 * checkpoint requiring supervisor approval before a plan is activated" (RFC-0013 glossary): a plan
 * in `draft` waits at it. Whoever supervises the holding coordinator lease of the plan's intent
 * (its supervisor, admin and coordinator keys; never its holder) decides, with write on the
 * intent (the route's rule); 404 COORDINATOR_LEASE_NOT_FOUND without a coordinator, 409
 * INVALID_PLAN_TRANSITION unless the plan is a draft. Approving activates the plan (it follows
 * its tasks at once, as PATCH state active does), rejecting cancels it; plan.approved_by_supervisor
 * or plan.rejected_by_supervisor commits with the move, under the intent's row lock, so of two
 * decisions one applies and the other finds the plan no longer a draft.
 */
export async function supervisorReviewPlan(ctx: IntentsContext, planId: string, review: Review, caller: Caller): Promise<Plan> {
  const now = ctx.clock.now();
  const before = await readPlan(ctx.db, planId);
  const row = await ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, before.intentId, null);
    const plan = await readPlan(tx, planId);
    const [lease] = await tx
      .select()
      .from(coordinatorLeases)
      .where(and(eq(coordinatorLeases.intentId, plan.intentId), eq(coordinatorLeases.holds, true)))
      .for("update");
    if (!lease) throw appError("COORDINATOR_LEASE_NOT_FOUND", `intent ${plan.intentId} has no coordinator, so plan ${plan.id} has no supervisor's review gate; PATCH /plans/${plan.id} moves it`, { intent_id: plan.intentId, plan_id: plan.id });
    assertSupervises(lease, caller, review.kind === "approve" ? "approve the plans of" : "reject the plans of");
    const from = plan.state as PlanState;
    const to: PlanState = review.kind === "approve" ? "active" : "cancelled";
    if (from !== "draft") {
      throw appError("INVALID_PLAN_TRANSITION", `plan ${plan.id} is ${from}: only a draft plan waits at the supervisor's review gate`, { plan_id: plan.id, from, to, allowed: [] });
    }
    const statuses = plan.taskIds.length ? (await tx.select({ status: tasks.status }).from(tasks).where(inArray(tasks.id, plan.taskIds))).map((r) => r.status as TaskStatus) : [];
    assertPlanTransition(plan.id, from, to, statuses);
    const moved = await updatePlanRow(tx, plan, { state: to, ...(to === "active" ? { activatedAt: now } : {}) }, now);
    const base = { plan_id: moved.id, state: moved.state as PlanState, version: moved.version };
    const events = [
      review.kind === "approve"
        ? planEvent("approvedBySupervisor", caller.actor, { ...base, approved_by: caller.actor, comment: review.comment })
        : planEvent("rejectedBySupervisor", caller.actor, { ...base, rejected_by: caller.actor, reason: review.reason }),
      await stateEvent(tx, moved, from, to, caller.actor, { reason: "requested", taskId: null, error: null }, now),
    ];
    const followed = await advancePlan(tx, moved, null, now);
    await appendToLog(tx, plan.intentId, [...events, ...followed.events], now);
    return followed.row;
  });
  ctx.published();
  return toPlan(row, await tasksOfPlan(ctx.db, row));
}
