import { randomUUID } from "node:crypto";
import { and, eq, inArray } from "drizzle-orm";
import { appError, errors, intentEvents, type Caller, type CreatePlanBody, type DecomposeBody, type PatchPlanBody, type Plan, type PlanCheckpoint, type PlanCondition, type PlanState, type TaskStatus } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { newEvent } from "@intentmesh/bus";
import type { IntentsContext } from "../kernel/context";
import { plans } from "../db/schema-plans";
import { tasks } from "../db/schema-tasks";
import { coordinatorLeases } from "../db/schema-coordinators";
import { supervises } from "../coordinators/rules";
import { guardPlanAct, guardrailRefusal, guardTaskCreation } from "../coordinators/holder-guard";
import { appendToLog, assertIntentExists, lockIntentRow, type NewEvent } from "../kernel/event-log";
import { TERMINAL_STATUSES } from "../intents/status";
import { withinPageBytes } from "../kernel/page-bytes";
import { namedTasks, parseExpression } from "./expression";
import { advancePlan } from "./effects";
import { awaitsApproval, checkpointDueAt, taskResolver } from "./follow";
import { assertPlanTransition, decompositionTasks, decomposeDescription, resolveSteps, type NewPlanTask } from "./rules";
import { insertPlanTasks, planEvent, plansOfIntent, readPlan, setTasksPlan, stateEvent, tasksOfPlan, toPlan, updatePlanRow, type PlanChange, type PlanRow } from "./statements";

/** The plan commands (im.intents.plans.*): create (client and MCP), decompose, get, list, update. docs/plans.md. */

async function assertOpenIntent(tx: Tx, intentId: string): Promise<void> {
  const intent = await lockIntentRow(tx, intentId, null);
  if (TERMINAL_STATUSES.includes(intent.status as never)) {
    throw appError("INTENT_CLOSED", `intent ${intentId} is ${intent.status}; plans are made on open intents only`, { status: intent.status });
  }
}

/**
 * Checkpoints get an id (cp_<n>) when they have none; `after` is the RFC YAML's spelling of
 * after_task. The fields the server keeps (status, approved_by, ...) come from the stored
 * checkpoint of the same id, else start pending: a client cannot approve by writing them.
 */
function normalizeCheckpoints(checkpoints: readonly PlanCheckpoint[], stored: readonly PlanCheckpoint[] = []): PlanCheckpoint[] {
  return checkpoints.map((cp, n) => {
    const { after, status: _status, approved_by: _by, approved_at: _at, reached_at: _reached, due_at: _due, rejected_by: _rejected, reason: _reason, ...rest } = cp;
    const id = cp.id ?? `cp_${n + 1}`;
    const before = stored.find((s) => s.id === id);
    const kept = before ? pick(before, ["status", "approved_by", "approved_at", "reached_at", "due_at", "rejected_by", "reason"]) : { status: "pending" };
    return { ...rest, id, after_task: cp.after_task ?? after, ...kept } as PlanCheckpoint;
  });
}

/** Conditions get an id (cond_<n>); a stored result is kept while the condition's task and `when` are unchanged. */
function normalizeConditions(conditions: readonly PlanCondition[], stored: readonly PlanCondition[] = []): PlanCondition[] {
  return conditions.map((c, n) => {
    const { result: _result, evaluated_at: _at, ...rest } = c;
    const id = c.id ?? `cond_${n + 1}`;
    const before = stored.find((s) => s.id === id && s.task_id === c.task_id && s.when === c.when);
    return { ...rest, id, ...(before ? pick(before, ["result", "evaluated_at"]) : {}) };
  });
}

function pick<T extends object, K extends keyof T>(from: T, keys: readonly K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]])) as Partial<Pick<T, K>>;
}

/**
 * Conditions and checkpoints name tasks of the plan (by id or title): a condition's `when` must
 * parse (400 VALIDATION_FAILED) and its task and every task it names, like a checkpoint's
 * after_task, must be a task of the plan (422 UNKNOWN_TASK_REFERENCE).
 */
async function checkPlanReferences(tx: Tx, taskIds: readonly string[], newTasks: readonly { id: string; title: string }[], checkpoints: readonly PlanCheckpoint[], conditions: readonly PlanCondition[]): Promise<void> {
  if (!checkpoints.length && !conditions.length) return;
  const existing = taskIds.length ? await tx.select({ id: tasks.id, title: tasks.title }).from(tasks).where(inArray(tasks.id, [...taskIds])) : [];
  const resolve = taskResolver([...existing, ...newTasks].map((t) => ({ ...t, status: "pending" as const, output: null })));
  const missing = new Set<string>();
  for (const c of conditions) {
    for (const name of [c.task_id, ...namedTasks(parseExpression(c.when))]) if (!resolve(name)) missing.add(name);
  }
  for (const cp of checkpoints) if (cp.after_task !== undefined && !resolve(cp.after_task)) missing.add(cp.after_task);
  if (missing.size) {
    throw appError("UNKNOWN_TASK_REFERENCE", `conditions and checkpoints name tasks of the plan by id or title; ${[...missing].map((m) => JSON.stringify(m)).join(", ")} is not one`, { missing: [...missing] });
  }
}

/**
 * Existing tasks joining a plan: each must be a task of the intent (422 UNKNOWN_TASK_REFERENCE)
 * and of no other plan (409 TASK_IN_ANOTHER_PLAN). Answers the tasks' statuses by id.
 */
async function checkJoiningTasks(tx: Tx, intentId: string, planId: string, taskIds: readonly string[]): Promise<Map<string, TaskStatus>> {
  if (!taskIds.length) return new Map();
  const found = await tx
    .select({ id: tasks.id, status: tasks.status, planId: tasks.planId })
    .from(tasks)
    .where(and(eq(tasks.intentId, intentId), inArray(tasks.id, [...taskIds])))
    .for("update");
  const byId = new Map(found.map((row) => [row.id, row]));
  const missing = taskIds.filter((id) => !byId.has(id));
  if (missing.length) {
    throw appError("UNKNOWN_TASK_REFERENCE", `a plan's tasks must be tasks of intent ${intentId}; ${missing.join(", ")} is not one`, { missing });
  }
  const elsewhere = found.filter((row) => row.planId !== null && row.planId !== planId);
  if (elsewhere.length) {
    throw appError(
      "TASK_IN_ANOTHER_PLAN",
      `a task belongs to one plan at most; ${elsewhere.map((row) => `${row.id} is in plan ${row.planId}`).join(", ")}`,
      { tasks: elsewhere.map((row) => ({ task_id: row.id, plan_id: row.planId })) },
    );
  }
  return new Map(found.map((row) => [row.id, row.status as TaskStatus]));
}

export async function answer(db: Pick<Tx, "select">, row: PlanRow): Promise<Plan> {
  return toPlan(row, await tasksOfPlan(db, row));
}

/**
 * POST /plans (the client: existing task ids) and POST /intents/{id}/plans (the MCP server: steps
 * that become new tasks in order). Both may come in one body: the existing tasks first, then the
 * steps. The plan starts draft unless the body asks active; a plan made of steps starts active
 * (the MCP server has no call that activates it).
 */
export async function createPlan(ctx: IntentsContext, intentId: string, body: CreatePlanBody, caller: Caller): Promise<Plan> {
  const now = ctx.clock.now();
  const planId = randomUUID();
  const existing = [...new Set(body.tasks ?? [])];
  const row = await ctx.db.transaction(async (tx) => {
    await assertOpenIntent(tx, intentId);
    const statuses = await checkJoiningTasks(tx, intentId, planId, existing);
    const steps = body.steps ?? [];
    const stepTasks = steps.length ? resolveSteps(steps, steps.map(() => randomUUID()), new Set(await intentTaskIds(tx, intentId, steps))) : [];
    if (stepTasks.length) for (const [id, status] of await statusesOf(tx, stepTasks)) statuses.set(id, status);
    // The existing tasks joining the plan count toward max_tasks_per_plan; only the steps are new tasks.
    const refused = await guardTaskCreation(
      tx,
      intentId,
      caller.actor,
      { action: "plan_created", planTasksBefore: existing.length, newTasks: stepTasks.map((t) => ({ id: t.id, parentTaskId: t.parentTaskId, capabilities: [] })) },
      now,
    );
    const state = body.state ?? (steps.length ? "active" : "draft");
    const gated = refused ?? (state === "active" ? await guardPlanAct(tx, intentId, caller.actor, "activate", now) : null);
    if (gated) {
      await appendToLog(tx, intentId, gated.events, now);
      return { refused: gated.breach };
    }
    return writeNewPlan(tx, { intentId, planId, title: body.title ?? null, state, existing, newTasks: stepTasks, statuses, body, caller, now });
  });
  ctx.published();
  if ("refused" in row) throw guardrailRefusal(intentId, row.refused);
  return answer(ctx.db, row);
}

/** The ids among the steps' depends_on that are tasks of the intent (they may name existing tasks by id). */
async function intentTaskIds(tx: Tx, intentId: string, steps: NonNullable<CreatePlanBody["steps"]>): Promise<string[]> {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const refs = [...new Set(steps.flatMap((s) => s.depends_on).filter((ref) => UUID.test(ref)).map((ref) => ref.toLowerCase()))];
  if (!refs.length) return [];
  const rows = await tx.select({ id: tasks.id }).from(tasks).where(and(eq(tasks.intentId, intentId), inArray(tasks.id, refs)));
  return rows.map((r) => r.id);
}

/** Statuses of the existing tasks new tasks depend on. */
async function statusesOf(tx: Tx, newTasks: readonly NewPlanTask[]): Promise<Map<string, TaskStatus>> {
  const newIds = new Set(newTasks.map((t) => t.id));
  const ids = [...new Set(newTasks.flatMap((t) => t.dependsOn).filter((id) => !newIds.has(id)))];
  if (!ids.length) return new Map();
  const rows = await tx.select({ id: tasks.id, status: tasks.status }).from(tasks).where(inArray(tasks.id, ids));
  return new Map(rows.map((r) => [r.id, r.status as TaskStatus]));
}

export interface NewPlan {
  intentId: string;
  planId: string;
  title: string | null;
  state: PlanState;
  existing: string[];
  newTasks: NewPlanTask[];
  statuses: Map<string, TaskStatus>;
  body: Partial<Pick<CreatePlanBody, "checkpoints" | "conditions" | "on_failure" | "on_complete" | "metadata">>;
  caller: Caller;
  now: Date;
  workflowId?: string | null;
}

export async function writeNewPlan(tx: Tx, p: NewPlan): Promise<PlanRow> {
  const checkpoints = normalizeCheckpoints(p.body.checkpoints ?? []);
  const conditions = normalizeConditions(p.body.conditions ?? []);
  await checkPlanReferences(tx, p.existing, p.newTasks, checkpoints, conditions);
  const [row] = await tx
    .insert(plans)
    .values({
      id: p.planId,
      intentId: p.intentId,
      title: p.title,
      state: p.state,
      taskIds: [...p.existing, ...p.newTasks.map((t) => t.id)],
      checkpoints,
      conditions,
      onFailure: p.body.on_failure ?? "pause_and_escalate",
      onComplete: p.body.on_complete ?? "notify",
      metadata: p.body.metadata ?? {},
      createdBy: p.caller.actor,
      version: 1,
      createdAt: p.now,
      updatedAt: p.now,
      activatedAt: p.state === "active" ? p.now : null,
      workflowId: p.workflowId ?? null,
    })
    .returning();
  const plan = row!;
  const events: NewEvent[] = [
    planEvent("created", p.caller.actor, { plan_id: plan.id, state: plan.state as PlanState, version: 1, task_count: plan.taskIds.length, title: plan.title }),
    ...(await insertPlanTasks(tx, p.intentId, plan.id, p.newTasks, p.statuses, p.caller.actor, p.now)),
    ...(await setTasksPlan(tx, p.existing.filter((id) => p.statuses.has(id)), plan.id, p.caller.actor, p.now)),
  ];
  // An active plan follows its tasks from the start (conditions already evaluable, checkpoints of done tasks).
  const followed = await advancePlan(tx, plan, null, p.now);
  await appendToLog(tx, p.intentId, [...events, ...followed.events], p.now);
  return followed.row;
}

/**
 * POST /intents/{id}/plans/decompose: the description becomes a plan (active) whose tasks are the
 * whole task (the root) and its subtasks, nested by the description's list, with dependencies:
 * siblings in order, a parent after its children (rules.ts decomposeDescription).
 */
export async function decomposeTask(ctx: IntentsContext, intentId: string, body: DecomposeBody, caller: Caller): Promise<Plan> {
  const now = ctx.clock.now();
  const planId = randomUUID();
  const tree = decomposeDescription(body.task_description, body.max_depth);
  const newTasks = decompositionTasks(tree, randomUUID);
  const row = await ctx.db.transaction(async (tx) => {
    await assertOpenIntent(tx, intentId);
    // The plan starts active: for the lease holder, also an activation under its review guardrails.
    const refused =
      (await guardTaskCreation(tx, intentId, caller.actor, { action: "plan_decomposed", planTasksBefore: 0, newTasks: newTasks.map((t) => ({ id: t.id, parentTaskId: t.parentTaskId, capabilities: [] })) }, now)) ??
      (await guardPlanAct(tx, intentId, caller.actor, "activate", now));
    if (refused) {
      await appendToLog(tx, intentId, refused.events, now);
      return { refused: refused.breach };
    }
    return writeNewPlan(tx, {
      intentId,
      planId,
      title: tree.title,
      state: "active",
      existing: [],
      newTasks,
      statuses: new Map(),
      body: { metadata: { decomposed_from: body.task_description.slice(0, 2000), max_depth: body.max_depth } },
      caller,
      now,
    });
  });
  ctx.published();
  if ("refused" in row) throw guardrailRefusal(intentId, row.refused);
  return answer(ctx.db, row);
}

/** GET /plans/{id}, GET /intents/{id}/plans/{plan_id}: with the intent in the path, a plan of another intent is 404. */
export async function getPlan(ctx: IntentsContext, planId: string, intentId: string | undefined): Promise<Plan> {
  const row = await readPlan(ctx.db, planId);
  if (intentId !== undefined && row.intentId !== intentId) throw errors.notFound("plan", planId);
  return answer(ctx.db, row);
}

/** GET /intents/{id}/plans: the intent's plans, oldest first, as a bare list (the client's list_plans), paged by limit, offset and bytes. */
export async function listPlans(ctx: IntentsContext, intentId: string, query: { limit: number; offset: number }): Promise<Plan[]> {
  const rows = await plansOfIntent(ctx.db, intentId, query);
  if (!rows.length) await assertIntentExists(ctx.db, intentId);
  return withinPageBytes(await Promise.all(rows.map((row) => answer(ctx.db, row))));
}

/**
 * PATCH /plans/{id} (If-Match required): state through the transition table, tasks (the list
 * replaced: tasks that leave have plan_id cleared, tasks that join are checked and set),
 * checkpoints, conditions, on_failure, on_complete, metadata, title.
 */
export async function updatePlan(ctx: IntentsContext, planId: string, ifMatch: number | null, body: PatchPlanBody, caller: Caller): Promise<Plan> {
  if (ifMatch === null) throw errors.preconditionRequired("plan");
  const now = ctx.clock.now();
  const before = await readPlan(ctx.db, planId);
  const row = await ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, before.intentId, null);
    const plan = await readPlan(tx, planId);
    if (plan.version !== ifMatch) throw errors.versionMismatch("plan", planId, plan.version, ifMatch);
    // The lease holder's own plan acts under its review guardrails (RFC-0013 3.4), before anything is written.
    const activating = plan.state === "draft" && body.state === "active";
    const replanning = plan.state === "active" && (body.tasks !== undefined || body.checkpoints !== undefined || body.conditions !== undefined);
    const gated = (activating ? await guardPlanAct(tx, plan.intentId, caller.actor, "activate", now) : null) ?? (replanning ? await guardPlanAct(tx, plan.intentId, caller.actor, "replan", now) : null);
    if (gated) {
      await appendToLog(tx, plan.intentId, gated.events, now);
      return { refused: gated.breach };
    }
    const change: PlanChange = {};
    const events: NewEvent[] = [];
    const changed: string[] = [];
    if (body.title !== undefined) (change.title = body.title), changed.push("title");
    if (body.checkpoints !== undefined) (change.checkpoints = normalizeCheckpoints(body.checkpoints, plan.checkpoints)), changed.push("checkpoints");
    if (body.conditions !== undefined) (change.conditions = normalizeConditions(body.conditions, plan.conditions)), changed.push("conditions");
    if (body.on_failure !== undefined) (change.onFailure = body.on_failure), changed.push("on_failure");
    if (body.on_complete !== undefined) (change.onComplete = body.on_complete), changed.push("on_complete");
    if (body.metadata !== undefined) (change.metadata = body.metadata), changed.push("metadata");
    let taskIds = plan.taskIds;
    if (body.tasks !== undefined) {
      taskIds = [...new Set(body.tasks)];
      await checkJoiningTasks(tx, plan.intentId, plan.id, taskIds);
      const leaving = plan.taskIds.filter((id) => !taskIds.includes(id));
      const joining = taskIds.filter((id) => !plan.taskIds.includes(id));
      events.push(...(await setTasksPlan(tx, leaving, null, caller.actor, now)), ...(await setTasksPlan(tx, joining, plan.id, caller.actor, now)));
      change.taskIds = taskIds;
      changed.push("tasks");
    }
    if (change.checkpoints || change.conditions || change.taskIds) {
      await checkPlanReferences(tx, taskIds, [], change.checkpoints ?? plan.checkpoints, change.conditions ?? plan.conditions);
    }
    if (change.checkpoints) change.checkpointDueAt = checkpointDueAt(change.checkpoints);
    const from = plan.state as PlanState;
    const to = body.state !== undefined && body.state !== from ? body.state : undefined;
    const gate = (change.checkpoints ?? plan.checkpoints).find(awaitsApproval);
    if (to === "active" && gate) {
      throw appError("PLAN_AT_CHECKPOINT", `plan ${plan.id} waits at checkpoint ${gate.id} for approval; approve it (POST /plans/${plan.id}/checkpoints/${gate.id}/approve) to resume`, {
        plan_id: plan.id,
        checkpoint_id: gate.id,
      });
    }
    if (to) {
      const statuses = taskIds.length ? (await tx.select({ status: tasks.status }).from(tasks).where(inArray(tasks.id, taskIds))).map((r) => r.status as TaskStatus) : [];
      assertPlanTransition(plan.id, from, to, statuses);
      change.state = to;
      if (to === "active") change.activatedAt = now;
    }
    const row = await updatePlanRow(tx, plan, change, now);
    const base = { plan_id: row.id, state: row.state as PlanState, version: row.version };
    if (changed.length) events.unshift(planEvent("updated", caller.actor, { ...base, changed }));
    const overridden = await planOverride(tx, plan, row.version, to ? [...changed, "state"] : changed, caller);
    if (overridden) events.push(overridden);
    if (to) events.push(await stateEvent(tx, row, from, to, caller.actor, { reason: "requested", taskId: null, error: null }, now));
    // Active now (activated, resumed, or its conditions or checkpoints changed): it follows its tasks.
    const followed = await advancePlan(tx, row, null, now);
    events.push(...followed.events);
    if (events.length) await appendToLog(tx, plan.intentId, events, now);
    return followed.row;
  });
  ctx.published();
  if ("refused" in row) throw guardrailRefusal(before.intentId, row.refused);
  return answer(ctx.db, row);
}

/**
 * RFC-0013 2.1 "override plan: replace or modify coordinator's plan" (coordinator.plan_overridden):
 * a change of a plan created by the holder of the intent's coordinator lease, made by whoever
 * supervises that lease (its supervisor, admin and coordinator keys) and not by the holder itself,
 * is the supervisor overriding the coordinator; the event names both versions and commits with
 * the change. Any other change is the plan's owner at work (no event).
 */
async function planOverride(tx: Tx, plan: PlanRow, newVersion: number, changed: string[], caller: Caller): Promise<NewEvent | null> {
  if (!changed.length) return null;
  const [lease] = await tx
    .select()
    .from(coordinatorLeases)
    .where(and(eq(coordinatorLeases.intentId, plan.intentId), eq(coordinatorLeases.holds, true)));
  if (!lease || plan.createdBy !== lease.agentId || caller.actor === lease.agentId || !supervises(lease, caller)) return null;
  return newEvent(intentEvents.coordinatorPlanOverridden, caller.actor, {
    lease_id: lease.id,
    coordinator_id: lease.agentId,
    overridden_by: caller.actor,
    plan_id: plan.id,
    old_plan_version: plan.version,
    new_plan_version: newVersion,
    changed,
  });
}
