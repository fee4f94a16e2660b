import { and, count, eq, inArray, notInArray, sql } from "drizzle-orm";
import { appError, intentEvents } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import { rowsOf, tableSql, withParams, type Tx } from "@intentmesh/db";
import { coordinatorLeases } from "../db/schema-coordinators";
import { tasks } from "../db/schema-tasks";
import type { NewEvent } from "../kernel/event-log";
import { TASK_END_STATUSES } from "../tasks/task-status";
import { failureStreak, judgePlanAct, judgeTaskCreation, onExceedActions, readGuardrails, type GuardrailBreach } from "./guardrails";
import { assertNotPaused, isLive, type CoordinatorLeaseRow } from "./rules";

/**
 * The coordinator lease holder's acts on its intent other than decisions (docs/coordinators.md
 * "Guardrails"): the tasks and plans it creates, under the scope guardrails of RFC-0013 3.2 and
 * 3.4, and what a refusal starts (on_exceed). Every function runs in the act's transaction, after
 * the intent's row lock: the holder, its pause and its counts cannot change underneath.
 */

/** The live lease `actor` holds on the intent, if any (the caller holds the intent's row lock). */
export async function liveLeaseHeldBy(tx: Tx, intentId: string, actor: string, now: Date): Promise<CoordinatorLeaseRow | undefined> {
  // Every task creation asks this (as text made once: libs/db table-sql.ts).
  const [raw] = rowsOf<Record<string, unknown>>(await tx.execute(withParams(HELD_BY, [intentId, actor])));
  const row = raw ? leaseSql.rowOf(raw) : undefined;
  return row && isLive(row, now) ? row : undefined;
}

const leaseSql = tableSql(coordinatorLeases);
const HELD_BY = `select ${leaseSql.columnList("l")} from ${leaseSql.name} l where l.intent_id = $1 and l.holds and l.agent_id = $2 for update`;

/** What the refused act was: a decision (its type) or the creation of tasks or a plan. */
export interface RefusedAct {
  decisionType: string | null;
  action: string;
}

/**
 * The events a refusal writes (RFC-0013 3: "attempts are rejected ... and the attempt is
 * logged"), and what on_exceed starts (3.1): `pause` pauses the lease in this transaction
 * (coordinator.paused, by "system"); `escalate` logs coordinator.escalation_initiated, which the
 * governance service turns into an escalation to a human (an approval with action `escalation`,
 * exactly once per event); `pause_and_escalate` both; `notify` (and no on_exceed) the violation
 * event only, which is the notice subscribers and the supervisor read.
 */
export async function refusalEvents(tx: Tx, lease: CoordinatorLeaseRow, breach: GuardrailBreach, act: RefusedAct, now: Date): Promise<NewEvent[]> {
  const g = readGuardrails(lease.guardrails);
  const logged: NewEvent[] = [
    newEvent(intentEvents.coordinatorGuardrailViolation, "system", {
      lease_id: lease.id,
      coordinator_id: lease.agentId,
      guardrail: breach.guardrail,
      attempted_value: breach.attempted_value,
      limit: breach.limit,
      decision_type: act.decisionType,
      action: act.action,
      on_exceed: g.on_exceed ?? null,
    }),
  ];
  return [...logged, ...(await onExceedEvents(tx, lease, breach.guardrail, `guardrail ${breach.guardrail} exceeded: ${breach.message}`, now))];
}

/**
 * What the lease's on_exceed starts when one of its guardrails is exceeded (a refused act, or a
 * temporal guardrail's wait over its limit): `pause` pauses the lease in the caller's transaction
 * (coordinator.paused by "system"; an already paused lease stays as it is), `escalate` logs
 * coordinator.escalation_initiated (the governance service opens the escalation).
 */
export async function onExceedEvents(tx: Tx, lease: CoordinatorLeaseRow, guardrail: string, reason: string, now: Date): Promise<NewEvent[]> {
  const { pause, escalate } = onExceedActions(readGuardrails(lease.guardrails));
  const logged: NewEvent[] = [];
  if (pause && !lease.pausedAt) {
    await tx
      .update(coordinatorLeases)
      .set({ pausedAt: now, pausedBy: "system", pauseReason: reason, version: sql`${coordinatorLeases.version} + 1` })
      .where(eq(coordinatorLeases.id, lease.id));
    logged.push(newEvent(intentEvents.coordinatorPaused, "system", { lease_id: lease.id, coordinator_id: lease.agentId, paused_by: "system", reason }));
  }
  if (escalate) logged.push(escalationInitiated(lease, guardrail, reason, "high"));
  return logged;
}

/** coordinator.escalation_initiated: the governance service opens the escalation (one per event). */
export function escalationInitiated(lease: CoordinatorLeaseRow, guardrail: string, reason: string, priority: "low" | "medium" | "high" | "critical"): NewEvent {
  return newEvent(intentEvents.coordinatorEscalationInitiated, "system", { lease_id: lease.id, coordinator_id: lease.agentId, escalated_to: lease.supervisorId, reason, guardrail, priority });
}

/** The tasks an act of the holder creates. */
export interface TaskCreation {
  action: "task_created" | "plan_created" | "plan_decomposed";
  /** The plan they join, and how many tasks it holds before (null: none). */
  planTasksBefore: number | null;
  /** The new tasks; `id` lets a new task name another new one as its parent (a decomposition's tree). */
  newTasks: { id?: string; parentTaskId: string | null; capabilities: readonly string[] }[];
}

/** Sub-task depth of a task: 0 without a parent, else its parent's + 1 (walked in SQL, bounded). */
async function depthOf(tx: Tx, taskId: string): Promise<number> {
  const [row] = rowsOf<{ depth: number | null }>(
    await tx.execute(sql`
      with recursive chain(id, parent, depth) as (
        select id, parent_task_id, 0 from ${tasks} where id = ${taskId}
        union all
        select t.id, t.parent_task_id, c.depth + 1 from ${tasks} t join chain c on t.id = c.parent where c.depth < 1000
      )
      select max(depth)::int as depth from chain`),
  );
  return Number(row?.depth ?? 0);
}

/** The deepest sub-task nesting among new tasks: a parent among them counts its own depth, an existing parent its stored chain. */
async function deepestNewTask(tx: Tx, newTasks: TaskCreation["newTasks"]): Promise<number> {
  const byId = new Map(newTasks.filter((t) => t.id !== undefined).map((t) => [t.id!, t]));
  const existingParents = [...new Set(newTasks.map((t) => t.parentTaskId).filter((p): p is string => p !== null && !byId.has(p)))];
  const stored = new Map<string, number>();
  if (existingParents.length) {
    for (const { id } of await tx.select({ id: tasks.id }).from(tasks).where(inArray(tasks.id, existingParents))) stored.set(id, await depthOf(tx, id));
  }
  const memo = new Map<string, number>();
  const depth = (task: TaskCreation["newTasks"][number], seen: number): number => {
    if (task.id !== undefined && memo.has(task.id)) return memo.get(task.id)!;
    const parent = task.parentTaskId;
    let d = 0;
    if (parent !== null && byId.has(parent) && seen < byId.size) d = depth(byId.get(parent)!, seen + 1) + 1;
    else if (parent !== null && stored.has(parent)) d = stored.get(parent)! + 1;
    if (task.id !== undefined) memo.set(task.id, d);
    return d;
  };
  return newTasks.reduce((deepest, task) => Math.max(deepest, depth(task, 0)), 0);
}

/**
 * The scope guardrails of the holder's lease on tasks it creates (guardrails.ts judgeTaskCreation).
 * Acts of callers that do not hold the intent's live lease are not the coordinator's: nothing to
 * check. A paused lease refuses the act (409 COORDINATOR_PAUSED). Answers the refusal's events
 * and the breach, to commit the events and then answer 403 (refuseAfterCommit).
 */
export async function guardTaskCreation(tx: Tx, intentId: string, actor: string, creation: TaskCreation, now: Date): Promise<{ events: NewEvent[]; breach: GuardrailBreach } | null> {
  const lease = await liveLeaseHeldBy(tx, intentId, actor, now);
  if (!lease) return null;
  assertNotPaused(lease);
  const g = readGuardrails(lease.guardrails);
  const scoped = ["max_tasks_per_plan", "max_concurrent_tasks", "max_delegation_depth", "allowed_capabilities", "require_human_for_capabilities"] as const;
  if (!scoped.some((key) => g[key] !== undefined)) return null;
  const [open] = await tx
    .select({ n: count() })
    .from(tasks)
    .where(and(eq(tasks.intentId, intentId), notInArray(tasks.status, [...TASK_END_STATUSES])));
  let depth = 0;
  if (g.max_delegation_depth !== undefined) depth = await deepestNewTask(tx, creation.newTasks);
  const breach = judgeTaskCreation(g, {
    planTasksAfter: creation.planTasksBefore === null ? null : creation.planTasksBefore + creation.newTasks.length,
    openTasksAfter: Number(open?.n ?? 0) + creation.newTasks.length,
    depth,
    capabilities: creation.newTasks.flatMap((t) => [...t.capabilities]),
  });
  if (!breach) return null;
  return { events: await refusalEvents(tx, lease, breach, { decisionType: null, action: creation.action }, now), breach };
}

/**
 * The review guardrails of the holder's lease on its own plan acts (guardrails.ts judgePlanAct):
 * activating a plan (created active, or moved to active) and changing an active plan. Other
 * callers' acts are not the coordinator's. Answers the refusal's events and the breach, as
 * guardTaskCreation does.
 */
export async function guardPlanAct(tx: Tx, intentId: string, actor: string, act: "activate" | "replan", now: Date): Promise<{ events: NewEvent[]; breach: GuardrailBreach } | null> {
  const lease = await liveLeaseHeldBy(tx, intentId, actor, now);
  if (!lease) return null;
  const breach = judgePlanAct(readGuardrails(lease.guardrails), act);
  if (!breach) return null;
  return { events: await refusalEvents(tx, lease, breach, { decisionType: null, action: act === "activate" ? "plan_activated" : "plan_modified" }, now), breach };
}

/** The 403 of a refusal whose events have committed (RFC-0013 3: the attempt is logged, the act is not done). */
export function guardrailRefusal(intentId: string, breach: GuardrailBreach): Error {
  const { guardrail, attempted_value, limit, message } = breach;
  return appError("GUARDRAIL_VIOLATION", `refused by the coordinator's guardrail ${guardrail}: ${message}`, { intent_id: intentId, guardrail, attempted_value, limit });
}

/**
 * In the transaction of every task change (tasks/moves.ts changeTask), under the intent's lock:
 * a failed or completed task moves the intent's failure streak on its holding coordinator lease,
 * and the failure that reaches auto_escalate_after_failures logs coordinator.escalation_initiated
 * (the governance service opens the escalation). Once per streak, whatever the replicas: the
 * counter is on the lease row, changed under the intent's row lock.
 */
export async function coordinatorEffectsOfTaskChange(tx: Tx, intentId: string, taskId: string, status: string): Promise<NewEvent[]> {
  if (status !== "failed" && status !== "completed") return [];
  const [lease] = await tx.select().from(coordinatorLeases).where(and(eq(coordinatorLeases.intentId, intentId), eq(coordinatorLeases.holds, true))).for("update");
  if (!lease) return [];
  const g = readGuardrails(lease.guardrails);
  const { streak, escalate } = failureStreak(g, lease.consecutiveFailures, status);
  if (streak !== lease.consecutiveFailures) await tx.update(coordinatorLeases).set({ consecutiveFailures: streak }).where(eq(coordinatorLeases.id, lease.id));
  if (!escalate) return [];
  return [escalationInitiated(lease, "auto_escalate_after_failures", `${streak} consecutive task failures on the intent (the last: task ${taskId})`, "high")];
}
