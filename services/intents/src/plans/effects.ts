import { eq, inArray } from "drizzle-orm";
import { appError, isoTimestamp, type PlanFailureAction, type PlanState, type TaskStatus } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { plans } from "../db/schema-plans";
import { tasks } from "../db/schema-tasks";
import type { NewEvent } from "../kernel/event-log";
import type { TaskRow } from "../tasks/store";
import { intents } from "../db/schema";
import { readyDependents } from "../tasks/dependents";
import { taskEvent, unblocked, updateTask } from "../tasks/store";
import { PLAN_FINAL_STATES } from "./rules";
import { awaitsApproval, checkpointDueAt, followPlan, pendingConditionOf } from "./follow";
import { planEvent, stateEvent, updatePlanRow, type PlanRow } from "./statements";

/**
 * Called in the transaction of every task change (tasks/moves.ts changeTask), under the intent's
 * lock: the task's plan follows it (follow.ts: conditions, checkpoints, completion, on_failure).
 * Answers the events (none when nothing changes).
 */
export async function planEffectsOfTaskChange(tx: Tx, changed: TaskRow, now: Date): Promise<NewEvent[]> {
  if (!changed.planId) return [];
  const [plan] = await tx.select().from(plans).where(eq(plans.id, changed.planId));
  if (!plan || plan.state !== "active") return [];
  return (await advancePlan(tx, plan, { id: changed.id, status: changed.status as TaskStatus, error: changed.error }, now)).events;
}

/**
 * Runs follow.ts on an active plan and writes what it decides, in the caller's transaction (which
 * holds the intent's lock): skipped tasks (task.skipped, their dependents readied), the
 * conditions and checkpoints with their new status, the plan's new state, and the events in
 * order. Answers the plan row after it and the events, which the caller appends to the log.
 */
export async function advancePlan(tx: Tx, plan: PlanRow, changed: { id: string; status: TaskStatus; error: string | null } | null, now: Date): Promise<{ row: PlanRow; events: NewEvent[] }> {
  if (plan.state !== "active") return { row: plan, events: [] };
  const planTasks = plan.taskIds.length ? await tx.select().from(tasks).where(inArray(tasks.id, plan.taskIds)) : [];
  const byId = new Map(planTasks.map((t) => [t.id, t]));
  const ordered = plan.taskIds.map((id) => byId.get(id)).filter((t) => t !== undefined);
  const [intent] = await tx.select({ id: intents.id, status: intents.status, title: intents.title, state: intents.state }).from(intents).where(eq(intents.id, plan.intentId));
  const outcome = followPlan({
    plan: { id: plan.id, state: plan.state as PlanState, title: plan.title, metadata: plan.metadata, onFailure: plan.onFailure as PlanFailureAction, checkpoints: plan.checkpoints, conditions: plan.conditions },
    tasks: ordered.map((t) => ({ id: t.id, title: t.title, status: t.status as TaskStatus, output: t.output })),
    intent: { id: plan.intentId, status: intent?.status ?? "unknown", title: intent?.title ?? "", state: intent?.state ?? {} },
    changed,
    now,
  });
  if (!outcome.evaluated.length && !outcome.reached.length && !outcome.to) return { row: plan, events: [] };
  const taskEvents: NewEvent[] = [];
  for (const id of outcome.skip) {
    const row = await updateTask(tx, byId.get(id)!, { status: "skipped", completedAt: now, ...unblocked }, now);
    taskEvents.push(taskEvent("skipped", "system", { task_id: row.id, status: "skipped", version: row.version, from: byId.get(id)!.status as TaskStatus, reason: "condition_false" }));
    taskEvents.push(...(await readyDependents(tx, row, now)));
  }
  const row = await updatePlanRow(
    tx,
    plan,
    { checkpoints: outcome.checkpoints, conditions: outcome.conditions, checkpointDueAt: checkpointDueAt(outcome.checkpoints), ...(outcome.to ? { state: outcome.to.state } : {}) },
    now,
  );
  const base = { plan_id: row.id, state: row.state as PlanState, version: row.version };
  const events: NewEvent[] = [
    ...outcome.evaluated.map((e) => planEvent("conditionEvaluated", "system", { ...base, condition_id: e.conditionId, task_id: e.taskId, result: e.result, skipped: e.skipped })),
    ...taskEvents,
    ...outcome.reached.map((r) =>
      planEvent("checkpointReached", "system", { ...base, checkpoint_id: r.checkpointId, task_id: r.taskId, requires_approval: r.requiresApproval, due_at: r.dueAt ? isoTimestamp(r.dueAt) : null }),
    ),
  ];
  if (outcome.to) {
    const error = outcome.to.reason === "task_failed" ? (changed?.error ?? null) : null;
    events.push(await stateEvent(tx, row, "active", outcome.to.state, "system", { reason: outcome.to.reason, taskId: outcome.to.taskId, error, checkpointId: outcome.to.checkpointId }, now));
  }
  return { row, events };
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

/**
 * A task of a plan is not claimed or started (from pending or ready) while its plan is paused
 * (409 PLAN_PAUSED: at a checkpoint, after a failure, or on request), nor, while its plan is
 * active, before its condition is evaluated (409 TASK_CONDITION_PENDING). A draft plan steers nothing.
 */
export async function assertPlanLetsTaskStart(tx: Tx, task: TaskRow): Promise<void> {
  if (!task.planId) return;
  const [plan] = await tx.select().from(plans).where(eq(plans.id, task.planId));
  if (!plan || (plan.state !== "paused" && plan.state !== "active")) return;
  if (plan.state === "paused") {
    const gate = plan.checkpoints.find(awaitsApproval);
    throw appError("PLAN_PAUSED", `task ${task.id} belongs to plan ${plan.id}, which is paused${gate ? ` at checkpoint ${gate.id} awaiting approval` : ""}; its tasks start when it resumes`, {
      plan_id: plan.id,
      checkpoint_id: gate?.id ?? null,
    });
  }
  if (!plan.conditions.length) return;
  const planTasks = await tx.select({ id: tasks.id, title: tasks.title }).from(tasks).where(inArray(tasks.id, plan.taskIds));
  const pending = pendingConditionOf(task.id, planTasks.map((t) => ({ ...t, status: "pending" as const, output: null })), plan.conditions);
  if (pending) {
    throw appError("TASK_CONDITION_PENDING", `task ${task.id} runs only if its condition ${JSON.stringify(pending.when)} holds; it is evaluated once the tasks it names are done`, {
      plan_id: plan.id,
      condition_id: pending.id,
    });
  }
}
