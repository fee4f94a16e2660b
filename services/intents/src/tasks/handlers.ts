import { appError } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { and, asc, eq, gt, inArray, type SQL } from "drizzle-orm";
import {
  errors,
  MAX_TASK_PAGE,
  type Caller,
  type CreateTaskBody,
  type JsonObject,
  type ListTasksQuery,
  type PatchTaskBody,
  type Task,
  type TaskStatus,
  taskCommands,
} from "@intentmesh/contracts";
import type { IntentsContext } from "../kernel/context";
import { MAX_PAGE_BYTES } from "../kernel/page-bytes";
import { tasks } from "../db/schema-tasks";
import { appendToLog, assertIntentExists, lockIntentRow } from "../kernel/event-log";
import { TERMINAL_STATUSES } from "../intents/status";
import { assertTaskTransition, initialTaskStatus, TASK_HELD_STATUSES } from "./task-status";
import { assertMayClaimTask, assertMayMoveTask, assertMayPatchTask } from "./task-access";
import { heldByAgent, taskEvent, toTask, type TaskChange, type TaskRow } from "./store";
import { selectTask, taskSql } from "./task-sql";
import { appendTaskToPlan, planTakingTask } from "../plans/effects";
import { guardrailRefusal, guardTaskCreation } from "../coordinators/holder-guard";
import { checkCompletionOutputs } from "../workflows/effects";
import { assertDependenciesMet, changeTask, planTransition, waitsOnDependencies, type Move } from "./moves";

/** The task commands (im.intents.tasks.*): create, read, list, PATCH and the actions. docs/tasks.md. */

/**
 * POST /intents/{id}/tasks and POST /tasks. Coordinators and admins only. The intent must be
 * open; depends_on and parent_task_id must name tasks of the same intent. The task starts ready
 * when every dependency is completed or skipped, else pending (docs/tasks.md).
 */
export async function createTask(ctx: IntentsContext, intentId: string, body: CreateTaskBody, caller: Caller): Promise<Task> {
  const now = ctx.clock.now();
  const dependsOn = [...new Set(body.depends_on)];
  const task = await ctx.db.transaction(async (tx) => {
    const intent = await lockIntentRow(tx, intentId, null);
    if (TERMINAL_STATUSES.includes(intent.status as never)) {
      throw appError("INTENT_CLOSED", `intent ${intentId} is ${intent.status}; tasks are created on open intents only`, { status: intent.status });
    }
    const related = [...dependsOn, ...(body.parent_task_id ? [body.parent_task_id] : [])];
    const found = related.length
      ? await tx.select({ id: tasks.id, status: tasks.status }).from(tasks).where(and(eq(tasks.intentId, intentId), inArray(tasks.id, related)))
      : [];
    const statusOf = new Map(found.map((row) => [row.id, row.status as TaskStatus]));
    const missing = related.filter((id) => !statusOf.has(id));
    if (missing.length) {
      throw appError("UNKNOWN_TASK_REFERENCE", `depends_on and parent_task_id must name tasks of intent ${intentId}; ${missing.join(", ")} is not one`, {
        missing,
      });
    }
    const plan = body.plan_id ? await planTakingTask(tx, intentId, body.plan_id) : null;
    const refused = await guardTaskCreation(
      tx,
      intentId,
      caller.actor,
      { action: "task_created", planTasksBefore: plan ? plan.taskIds.length : null, newTasks: [{ parentTaskId: body.parent_task_id ?? null, capabilities: body.capabilities_required }] },
      now,
    );
    if (refused) {
      await appendToLog(tx, intentId, refused.events, now);
      return { refused: refused.breach };
    }
    const created = await taskSql.insert(tx, {
      id: randomUUID(),
      intentId,
      title: (body.title ?? body.name)!,
      description: body.description ?? null,
      parentTaskId: body.parent_task_id ?? null,
      dependsOn,
      planId: body.plan_id ?? null,
      priority: body.priority,
      capabilitiesRequired: [...new Set(body.capabilities_required)],
      metadata: body.metadata,
      status: initialTaskStatus(dependsOn.map((id) => statusOf.get(id)!)),
      assignedAgent: body.assigned_agent ?? null,
      memoryPolicy: body.memory_policy,
      retryPolicy: body.retry_policy ?? null,
      input: body.input,
      createdBy: caller.actor,
      version: 1,
      createdAt: now,
      updatedAt: now,
    });
    await appendToLog(
      tx,
      intentId,
      [
        taskEvent("created", caller.actor, {
          task_id: created.id,
          status: created.status as TaskStatus,
          version: 1,
          title: created.title,
          parent_task_id: created.parentTaskId,
          depends_on: created.dependsOn,
          assigned_agent: created.assignedAgent,
          memory_policy: created.memoryPolicy,
          plan_id: created.planId,
          priority: created.priority,
          capabilities_required: created.capabilitiesRequired,
        }),
        ...(plan ? await appendTaskToPlan(tx, plan, created.id, caller.actor, now) : []),
      ],
      now,
    );
    return created;
  });
  ctx.published();
  if ("refused" in task) throw guardrailRefusal(intentId, task.refused);
  return toTask(task);
}

export async function getTask(ctx: IntentsContext, taskId: string): Promise<Task> {
  const row = await selectTask(ctx.db, taskId);
  if (!row) throw errors.notFound("task", taskId);
  return toTask(row);
}

/**
 * GET /intents/{id}/tasks: oldest first, filters status (comma-separated) and assigned_agent,
 * cursor `after` = next_cursor. A page stops at `limit` tasks or MAX_PAGE_BYTES of JSON, whichever comes first.
 */
export async function listTasks(
  ctx: IntentsContext,
  intentId: string,
  query: ListTasksQuery,
): Promise<{ tasks: Task[]; next_cursor: string | null; has_more: boolean } | Task[]> {
  const limit = Math.min(query.limit ?? 100, MAX_TASK_PAGE);
  const after = query.after === undefined ? 0 : Number(query.after);
  const filters: SQL[] = [eq(tasks.intentId, intentId), gt(tasks.seq, after)];
  if (query.status?.length) filters.push(inArray(tasks.status, query.status));
  if (query.assigned_agent) filters.push(eq(tasks.assignedAgent, query.assigned_agent));
  const rows = await ctx.db
    .select()
    .from(tasks)
    .where(and(...filters))
    .orderBy(asc(tasks.seq))
    .offset(query.offset ?? 0)
    .limit(limit + 1);
  if (!rows.length) await assertIntentExists(ctx.db, intentId);
  // The clients page with offset and read a bare array (CLIENTS.md section 3).
  if (query.offset !== undefined) return pageWithinBytes(rows.slice(0, limit)).map(toTask);
  const page = pageWithinBytes(rows.slice(0, limit));
  const last = page.at(-1)?.seq;
  return { tasks: page.map(toTask), next_cursor: last !== undefined ? String(last) : (query.after ?? null), has_more: rows.length > page.length };
}

/** The first rows whose JSON stays within MAX_PAGE_BYTES (at least one). */
function pageWithinBytes(rows: TaskRow[]): TaskRow[] {
  let bytes = 0;
  const page: TaskRow[] = [];
  for (const row of rows) {
    bytes += Buffer.byteLength(JSON.stringify(toTask(row)));
    if (page.length && bytes > MAX_PAGE_BYTES) break;
    page.push(row);
  }
  return page;
}

const singleEvent = (move: Move) => ({ change: move.change, events: (row: TaskRow) => [move.event(row)] });

export function claimTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, caller, taskCommands.claim, async (task, intentStatus, tx, checkedAgent) => {
    // A task waiting on its dependencies says so (RFC 0012 1.2), naming the unfinished ones.
    if (waitsOnDependencies(task)) await assertDependenciesMet(tx, task);
    // A task already taken is a conflict (409) before it is anyone's permission question: the loser of a race learns it lost.
    if (task.status !== "ready") assertTaskTransition(task.id, task.status as TaskStatus, "claimed");
    assertMayClaimTask(task, caller, task.assignedAgent ?? caller.actor);
    return singleEvent(await planTransition("claimed", { task, intentStatus, caller, now: ctx.clock.now(), tx, assignedAgent: task.assignedAgent ?? caller.actor, checkedAgent }));
  }, { named: null });
}

export function startTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, caller, taskCommands.start, async (task, intentStatus, tx) => {
    assertMayMoveTask(task, caller, "start");
    if (waitsOnDependencies(task)) await assertDependenciesMet(tx, task);
    if (task.status !== "claimed") assertTaskTransition(task.id, task.status as TaskStatus, task.status === "blocked" ? "claimed" : "running");
    return singleEvent(await planTransition("running", { task, intentStatus, caller, now: ctx.clock.now(), tx }));
  });
}

export function completeTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, body: { output?: JsonObject | undefined }, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, caller, taskCommands.complete, async (task, intentStatus, tx) => {
    assertMayMoveTask(task, caller, "complete");
    return singleEvent(await planTransition("completed", { task, intentStatus, caller, now: ctx.clock.now(), tx, output: body.output }));
  });
}

export function failTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, body: { error: string; error_code?: string | undefined }, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, caller, taskCommands.fail, async (task, intentStatus, tx) => {
    assertMayMoveTask(task, caller, "fail");
    return singleEvent(
      await planTransition("failed", { task, intentStatus, caller, now: ctx.clock.now(), tx, error: body.error || null, errorCode: body.error_code, applyRetryPolicy: true }),
    );
  });
}

export function cancelTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, body: { reason?: string | undefined }, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, caller, taskCommands.cancel, async (task, intentStatus, tx) => {
    return singleEvent(await planTransition("cancelled", { task, intentStatus, caller, now: ctx.clock.now(), tx, reason: body.reason }));
  });
}

/**
 * PATCH /tasks/{tid} (If-Match required, 428 without): status through the transition table,
 * assigned_agent (coordinators and admins; an agent may only take an unassigned ready task for
 * itself), output, error, blocked_reason. A change of assignment of a held task hands it back to
 * ready (the holder becomes previous agent). Changes without a status change write task.updated.
 */
export function patchTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, body: PatchTaskBody, caller: Caller): Promise<Task> {
  if (ifMatch === null) throw errors.preconditionRequired("task");
  // The guard checked access before this handler (its 403 comes before the 428 above): null here.
  return changeTask(ctx, taskId, ifMatch, caller, null, async (task, intentStatus, tx, checkedAgent) => {
    const from = task.status as TaskStatus;
    const reassigning = body.assigned_agent !== undefined && body.assigned_agent !== task.assignedAgent;
    let to = body.status !== undefined && body.status !== from ? body.status : undefined;
    assertMayPatchTask({ ...task, status: from }, caller, { to, assignedAgent: body.assigned_agent });
    // Reassigning a held task gives it back first: ready, the holder recorded as previous agent.
    if (reassigning && !to && TASK_HELD_STATUSES.includes(from)) to = "ready";
    const fields: TaskChange = {};
    if (body.output !== undefined) fields.output = body.output;
    if (body.error !== undefined) fields.error = body.error;
    if (body.blocked_reason !== undefined && to !== "blocked") fields.blockedReason = body.blocked_reason;
    if (!to) {
      // A completed workflow phase's recorded output stays within its contract (RFC 0024 3.3).
      if (from === "completed" && body.output !== undefined) await checkCompletionOutputs(tx, task, body.output);
      if (reassigning) fields.assignedAgent = body.assigned_agent ?? null;
      const changed = Object.keys(body).filter((k) => k !== "status");
      return {
        change: fields,
        events: (row) => (changed.length ? [taskEvent("updated", caller.actor, { task_id: row.id, status: row.status as TaskStatus, version: row.version, changed })] : []),
      };
    }
    const move = await planTransition(to, {
      task,
      intentStatus,
      caller,
      now: ctx.clock.now(),
      tx,
      output: body.output,
      error: body.error,
      blockedReason: body.blocked_reason,
      assignedAgent: body.assigned_agent,
      reason: "patched",
      checkedAgent,
    });
    const change = { ...fields, ...move.change };
    // A coordinator naming the new agent with the move: it is assigned after the holder is recorded.
    if (reassigning && to !== "claimed") change.assignedAgent = body.assigned_agent ?? null;
    return { change, events: (row) => [move.event(row)] };
  }, body.status === "claimed" ? { named: body.assigned_agent ?? null } : undefined);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** For the registry's heartbeat: the ids among `taskIds` that are not tasks the agent holds. */
export async function unknownTasksOf(ctx: IntentsContext, agentId: string, taskIds: string[]): Promise<{ unknown: string[] }> {
  const candidates = [...new Set(taskIds.filter((id) => UUID.test(id)).map((id) => id.toLowerCase()))];
  const found = candidates.length
    ? await ctx.db
        .select({ id: tasks.id })
        .from(tasks)
        .where(
          and(
            inArray(tasks.id, candidates),
            eq(tasks.assignedAgent, agentId),
            heldByAgent,
          ),
        )
    : [];
  const held = new Set(found.map((row) => row.id));
  return { unknown: taskIds.filter((id) => !held.has(id.toLowerCase())) };
}

