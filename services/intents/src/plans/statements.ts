import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { DEFAULT_MEMORY_POLICY, errors, isoTimestamp, planEvents, type JsonObject, type Plan, type PlanCheckpointView, type PlanConditionView, type PlanEventKey, type PlanEventPayload, type PlanFailureAction, type PlanState, type TaskStatus } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { plans } from "../db/schema-plans";
import { tasks } from "../db/schema-tasks";
import { intents } from "../db/schema";
import type { NewEvent } from "../kernel/event-log";
import { taskEvent, type TaskRow } from "../tasks/store";
import { initialTaskStatus } from "../tasks/task-status";
import { computeProgress, planEventOf, type NewPlanTask, type ProgressTask } from "./rules";

/** Rows of intents.plans: their wire form, the reads with their tasks, the conditional UPDATE, the catalogue's events. */

export type PlanRow = typeof plans.$inferSelect;
export type PlanChange = Partial<Omit<PlanRow, "id" | "seq" | "intentId" | "version">>;
type Queryable = Pick<Tx, "select">;

/** An event of the plan catalogue (libs/contracts plans.ts), its payload checked against its schema. */
export function planEvent<K extends PlanEventKey>(key: K, actor: string, payload: PlanEventPayload<K>): NewEvent {
  const entry = planEvents[key];
  return { eventType: entry.name, actor, payload: entry.payload.parse(payload) as JsonObject };
}

/** The plan's tasks, in plan order, with the suspension of their intent when one blocks them. */
export async function tasksOfPlan(db: Queryable, plan: PlanRow): Promise<(TaskRow & { suspendedSince: string | null; expiresAt: string | null })[]> {
  if (!plan.taskIds.length) return [];
  const rows = await db
    .select({
      task: tasks,
      suspendedSince: sql<string | null>`${intents.state} -> '_suspension' ->> 'suspended_at'`,
      expiresAt: sql<string | null>`${intents.state} -> '_suspension' ->> 'expires_at'`,
    })
    .from(tasks)
    .leftJoin(intents, eq(intents.id, tasks.suspendedIntentId))
    .where(inArray(tasks.id, plan.taskIds));
  const byId = new Map(rows.map((r) => [r.task.id, { ...r.task, suspendedSince: r.suspendedSince, expiresAt: r.expiresAt }]));
  return plan.taskIds.map((id) => byId.get(id)).filter((t) => t !== undefined);
}

const normalizeTs = (value: string | null) => (value ? isoTimestamp(new Date(value)) : null);

/**
 * The stored checkpoints as answered. The column is typed as a request's checkpoints, but every
 * write goes through normalizeCheckpoints (handlers.ts) or a status change that keeps them so:
 * each has its id and a status of CHECKPOINT_STATUSES, which is what the view adds (the same holds
 * for conditions and normalizeConditions). The test gateway's response check holds answers to it.
 */
export const checkpointsOf = (row: PlanRow): PlanCheckpointView[] => row.checkpoints as PlanCheckpointView[];

/** The plan as answered: its fields, its steps (tasks with their status, in order) and progress computed from them. */
export function toPlan(row: PlanRow, planTasks: Awaited<ReturnType<typeof tasksOfPlan>>): Plan {
  const progressTasks: ProgressTask[] = planTasks.map((t) => ({
    id: t.id,
    status: t.status as TaskStatus,
    blockedReason: t.blockedReason,
    suspendedIntentId: t.suspendedIntentId,
    intentId: t.intentId,
    suspendedSince: normalizeTs(t.suspendedSince),
    expiresAt: normalizeTs(t.expiresAt),
  }));
  return {
    id: row.id,
    plan_id: row.id,
    intent_id: row.intentId,
    title: row.title,
    version: row.version,
    state: row.state as PlanState,
    tasks: row.taskIds,
    steps: planTasks.map((t) => ({ task_id: t.id, title: t.title, status: t.status as TaskStatus, depends_on: t.dependsOn, parent_task_id: t.parentTaskId, assigned_agent: t.assignedAgent })),
    checkpoints: checkpointsOf(row),
    conditions: row.conditions as PlanConditionView[],
    on_failure: row.onFailure as PlanFailureAction,
    on_complete: row.onComplete,
    metadata: row.metadata,
    progress: computeProgress(progressTasks),
    created_by: row.createdBy,
    created_at: isoTimestamp(row.createdAt),
    updated_at: isoTimestamp(row.updatedAt),
  };
}

export async function readPlan(db: Queryable, planId: string): Promise<PlanRow> {
  const [row] = await db.select().from(plans).where(eq(plans.id, planId));
  if (!row) throw errors.notFound("plan", planId);
  return row;
}

export async function plansOfIntent(db: Queryable, intentId: string, page: { limit: number; offset: number }): Promise<PlanRow[]> {
  return db.select().from(plans).where(eq(plans.intentId, intentId)).orderBy(asc(plans.seq)).offset(page.offset).limit(page.limit);
}

/** The conditional UPDATE every plan change goes through: version + 1 only if the plan is still at the version read. */
export async function updatePlanRow(tx: Tx, plan: PlanRow, change: PlanChange, now: Date): Promise<PlanRow> {
  const [row] = await tx
    .update(plans)
    .set({ ...change, version: sql`${plans.version} + 1`, updatedAt: now })
    .where(and(eq(plans.id, plan.id), eq(plans.version, plan.version)))
    .returning();
  if (!row) {
    const [current] = await tx.select({ version: plans.version }).from(plans).where(eq(plans.id, plan.id));
    throw errors.versionMismatch("plan", plan.id, current?.version ?? plan.version, plan.version);
  }
  return row;
}

/**
 * Tasks join or leave a plan: plan_id set (or cleared), version + 1, task.updated with
 * changed ["plan_id"] for each. Callers checked they are tasks of the intent and of no other plan.
 */
export async function setTasksPlan(tx: Tx, taskIds: readonly string[], planId: string | null, actor: string, now: Date): Promise<NewEvent[]> {
  if (!taskIds.length) return [];
  const rows = await tx
    .update(tasks)
    .set({ planId, version: sql`${tasks.version} + 1`, updatedAt: now })
    .where(inArray(tasks.id, [...taskIds]))
    .returning();
  return rows.map((row) => taskEvent("updated", actor, { task_id: row.id, status: row.status as TaskStatus, version: row.version, changed: ["plan_id"] }));
}

/** New tasks of a plan (MCP steps, a decomposition), in one INSERT; each starts ready or pending by its dependencies. */
export async function insertPlanTasks(tx: Tx, intentId: string, planId: string, newTasks: readonly NewPlanTask[], dependencyStatus: ReadonlyMap<string, TaskStatus>, actor: string, now: Date): Promise<NewEvent[]> {
  if (!newTasks.length) return [];
  const statusOf = new Map(dependencyStatus);
  const values = newTasks.map((t) => {
    // Dependencies among the new tasks are new themselves, so not done.
    const status = initialTaskStatus(t.dependsOn.map((id) => statusOf.get(id) ?? "pending"));
    statusOf.set(t.id, status);
    return {
      id: t.id,
      intentId,
      title: t.title,
      description: t.description,
      parentTaskId: t.parentTaskId,
      dependsOn: t.dependsOn,
      planId,
      status,
      memoryPolicy: DEFAULT_MEMORY_POLICY,
      input: (t.input ?? {}) as JsonObject,
      assignedAgent: t.assignedAgent ?? null,
      ioContract: t.ioContract ?? null,
      createdBy: actor,
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
  });
  const rows = await tx.insert(tasks).values(values).returning();
  const byId = new Map(rows.map((r) => [r.id, r]));
  return newTasks.map((t) => {
    const row = byId.get(t.id)!;
    return taskEvent("created", actor, {
      task_id: row.id,
      status: row.status as TaskStatus,
      version: 1,
      title: row.title,
      parent_task_id: row.parentTaskId,
      depends_on: row.dependsOn,
      assigned_agent: row.assignedAgent,
      memory_policy: row.memoryPolicy,
      plan_id: planId,
      priority: row.priority,
      capabilities_required: row.capabilitiesRequired,
    });
  });
}

/** The event of a plan's change of state. */
export async function stateEvent(
  tx: Tx,
  row: PlanRow,
  from: PlanState,
  to: PlanState,
  actor: string,
  why: { reason: string; taskId: string | null; error: string | null; checkpointId?: string | null },
  now: Date,
): Promise<NewEvent> {
  const base = { plan_id: row.id, state: row.state as PlanState, version: row.version, from };
  switch (planEventOf(from, to)) {
    case "activated":
      return planEvent("activated", actor, base);
    case "resumed":
      return planEvent("resumed", actor, base);
    case "paused":
      return planEvent("paused", actor, { ...base, reason: why.reason, task_id: why.taskId, ...(why.checkpointId ? { checkpoint_id: why.checkpointId } : {}) });
    case "failed":
      return planEvent("failed", actor, { ...base, failed_task_id: why.taskId, error: why.error });
    case "cancelled":
      return planEvent("cancelled", actor, base);
    case "completed": {
      const rows = row.taskIds.length ? await tx.select({ status: tasks.status }).from(tasks).where(inArray(tasks.id, row.taskIds)) : [];
      return planEvent("completed", actor, {
        ...base,
        tasks_completed: rows.filter((r) => r.status === "completed").length,
        tasks_skipped: rows.filter((r) => r.status === "skipped").length,
        duration_ms: Math.max(0, now.getTime() - (row.activatedAt ?? row.createdAt).getTime()),
      });
    }
  }
}

