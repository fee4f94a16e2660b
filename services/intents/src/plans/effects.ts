import { eq, inArray } from "drizzle-orm";
import { appError, type PlanFailureAction, type PlanState, type TaskStatus } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { plans } from "../db/schema-plans";
import { tasks } from "../db/schema-tasks";
import type { NewEvent } from "../kernel/event-log";
import type { TaskRow } from "../tasks/store";
import { PLAN_FINAL_STATES, planAfterTaskChange } from "./rules";
import { stateEvent } from "./handlers";
import { planEvent, updatePlanRow } from "./statements";

/**
 * Called in the transaction of every task change (tasks/moves.ts changeTask), under the intent's
 * lock: an active plan whose tasks are now all completed or skipped completes; one whose task
 * failed for good follows its on_failure. Answers the plan's events (none when nothing changes).
 */
export async function planEffectsOfTaskChange(tx: Tx, changed: TaskRow, now: Date): Promise<NewEvent[]> {
  if (!changed.planId) return [];
  const [plan] = await tx.select().from(plans).where(eq(plans.id, changed.planId));
  if (!plan || plan.state !== "active") return [];
  const statuses = plan.taskIds.length ? (await tx.select({ status: tasks.status }).from(tasks).where(inArray(tasks.id, plan.taskIds))).map((r) => r.status as TaskStatus) : [];
  const next = planAfterTaskChange({ state: plan.state as PlanState, onFailure: plan.onFailure as PlanFailureAction }, { status: changed.status as TaskStatus }, statuses);
  if (!next) return [];
  const row = await updatePlanRow(tx, plan, { state: next.to }, now);
  return [await stateEvent(tx, row, "active", next.to, "system", { reason: next.reason, taskId: changed.id, error: changed.error }, now)];
}

/**
 * A task created with plan_id (POST /tasks, the client's create_task): the plan must be a plan
 * of the same intent (422 UNKNOWN_PLAN_REFERENCE) that is not finished (409
 * INVALID_PLAN_TRANSITION). Locks the plan row for the insert that follows.
 */
export async function planTakingTask(tx: Tx, intentId: string, planId: string) {
  const [plan] = await tx.select().from(plans).where(eq(plans.id, planId)).for("update");
  if (!plan || plan.intentId !== intentId) {
    throw appError("UNKNOWN_PLAN_REFERENCE", `plan_id must name a plan of intent ${intentId}; ${planId} is not one`, { plan_id: planId });
  }
  if (PLAN_FINAL_STATES.includes(plan.state as PlanState)) {
    throw appError("INVALID_PLAN_TRANSITION", `plan ${planId} is ${plan.state}; a finished plan takes no more tasks`, { plan_id: planId, from: plan.state, to: plan.state, allowed: [] });
  }
  return plan;
}

/** The task joins the end of its plan's list: plan version + 1 and plan.updated (changed: tasks). */
export async function appendTaskToPlan(tx: Tx, plan: typeof plans.$inferSelect, taskId: string, actor: string, now: Date): Promise<NewEvent[]> {
  const row = await updatePlanRow(tx, plan, { taskIds: [...plan.taskIds, taskId] }, now);
  return [planEvent("updated", actor, { plan_id: row.id, state: row.state as PlanState, version: row.version, changed: ["tasks"] })];
}
