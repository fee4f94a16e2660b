import { randomUUID } from "node:crypto";
import { and, asc, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import {
  AppError,
  errors,
  INTENT_SUSPENDED,
  isoTimestamp,
  MAX_TASK_PAGE,
  taskEvents,
  type Caller,
  type CreateTaskBody,
  type JsonObject,
  type ListTasksQuery,
  type PatchTaskBody,
  type Task,
  type TaskEventKey,
  type TaskEventPayload,
  type TaskRetryPolicy,
  type TaskStatus,
} from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../context";
import { tasks } from "../db/schema-tasks";
import { retryPolicies } from "../db/schema-records";
import { appendToLog, assertIntentExists, lockIntentRow, type NewEvent } from "../event-log";
import { TERMINAL_STATUSES } from "../domain/status";
import { assertTaskTransition, DEPENDENCY_DONE_STATUSES, initialTaskStatus, TASK_HELD_STATUSES, unblockTarget } from "../domain/task-status";
import { decideAfterFailure, type RetryRules } from "../domain/retry-delay";
import { agentWorkRefusal } from "../agent-lifecycle-projection";
import { isCoordinatorOrAdmin } from "./actor";

export type TaskRow = typeof tasks.$inferSelect;
type TaskChange = Partial<Omit<TaskRow, "id" | "seq" | "intentId" | "version">>;

const ts = (date: Date | null) => (date ? isoTimestamp(date) : null);

export function toTask(row: TaskRow): Task {
  return {
    id: row.id,
    task_id: row.id,
    intent_id: row.intentId,
    title: row.title,
    name: row.title,
    description: row.description,
    parent_task_id: row.parentTaskId,
    depends_on: row.dependsOn,
    status: row.status as TaskStatus,
    assigned_agent: row.assignedAgent,
    previous_agent: row.previousAgents.at(-1) ?? null,
    previous_agents: row.previousAgents,
    memory_policy: row.memoryPolicy,
    retry_policy: row.retryPolicy ?? null,
    input: row.input,
    output: row.output ?? null,
    error: row.error,
    blocked_reason: row.blockedReason,
    suspended_intent_id: row.suspendedIntentId,
    attempt: row.attempt,
    created_by: row.createdBy,
    version: row.version,
    created_at: isoTimestamp(row.createdAt),
    updated_at: isoTimestamp(row.updatedAt),
    claimed_at: ts(row.claimedAt),
    started_at: ts(row.startedAt),
    completed_at: ts(row.completedAt),
  };
}

/** An event of the task catalogue (libs/contracts tasks.ts), its payload checked against its schema. */
export function taskEvent<K extends TaskEventKey>(key: K, actor: string, payload: TaskEventPayload<K>): NewEvent {
  const entry = taskEvents[key];
  return { eventType: entry.type, actor, payload: entry.payload.parse(payload) as JsonObject };
}

const forbidden = (message: string, taskId: string) => new AppError("FORBIDDEN", 403, message, { task_id: taskId });

function assertMayCreate(caller: Caller): void {
  if (!isCoordinatorOrAdmin(caller)) throw new AppError("FORBIDDEN", 403, "only coordinators and admins create tasks", { roles: caller.roles });
}

/** The intent of a task, read without a lock (it never changes), so the intent can be locked first. */
async function readTaskUnlocked(ctx: IntentsContext, taskId: string): Promise<TaskRow> {
  const [row] = await ctx.db.select().from(tasks).where(eq(tasks.id, taskId));
  if (!row) throw errors.notFound("task", taskId);
  return row;
}

async function readTask(tx: Tx, taskId: string): Promise<TaskRow> {
  const [row] = await tx.select().from(tasks).where(eq(tasks.id, taskId));
  if (!row) throw errors.notFound("task", taskId);
  return row;
}

/** The conditional UPDATE every task change goes through: version + 1 only if the task is still at the version read. */
async function updateTask(tx: Tx, task: TaskRow, change: TaskChange, now: Date): Promise<TaskRow> {
  const [row] = await tx
    .update(tasks)
    .set({ ...change, version: sql`${tasks.version} + 1`, updatedAt: now })
    .where(and(eq(tasks.id, task.id), eq(tasks.version, task.version)))
    .returning();
  if (!row) {
    const [current] = await tx.select({ version: tasks.version }).from(tasks).where(eq(tasks.id, task.id));
    throw errors.versionMismatch("task", task.id, current?.version ?? task.version, task.version);
  }
  return row;
}

/**
 * POST /intents/{id}/tasks and POST /tasks. Coordinators and admins only. The intent must be
 * open; depends_on and parent_task_id must name tasks of the same intent. The task starts ready
 * when every dependency is completed or skipped, else pending (docs/tasks.md).
 */
export async function createTask(ctx: IntentsContext, intentId: string, body: CreateTaskBody, caller: Caller): Promise<Task> {
  assertMayCreate(caller);
  const now = ctx.clock.now();
  const dependsOn = [...new Set(body.depends_on)];
  const task = await ctx.db.transaction(async (tx) => {
    const intent = await lockIntentRow(tx, intentId, null);
    if (TERMINAL_STATUSES.includes(intent.status as never)) {
      throw new AppError("INTENT_CLOSED", 409, `intent ${intentId} is ${intent.status}; tasks are created on open intents only`, { status: intent.status });
    }
    const related = [...dependsOn, ...(body.parent_task_id ? [body.parent_task_id] : [])];
    const found = related.length
      ? await tx.select({ id: tasks.id, status: tasks.status }).from(tasks).where(and(eq(tasks.intentId, intentId), inArray(tasks.id, related)))
      : [];
    const statusOf = new Map(found.map((row) => [row.id, row.status as TaskStatus]));
    const missing = related.filter((id) => !statusOf.has(id));
    if (missing.length) {
      throw new AppError("UNKNOWN_TASK_REFERENCE", 422, `depends_on and parent_task_id must name tasks of intent ${intentId}; ${missing.join(", ")} is not one`, {
        missing,
      });
    }
    const [row] = await tx
      .insert(tasks)
      .values({
        id: randomUUID(),
        intentId,
        title: (body.title ?? body.name)!,
        description: body.description ?? null,
        parentTaskId: body.parent_task_id ?? null,
        dependsOn,
        status: initialTaskStatus(dependsOn.map((id) => statusOf.get(id)!)),
        assignedAgent: body.assigned_agent ?? null,
        memoryPolicy: body.memory_policy,
        retryPolicy: body.retry_policy ?? null,
        input: body.input,
        createdBy: caller.actor,
        version: 1,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    const created = row!;
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
        }),
      ],
      now,
    );
    return created;
  });
  ctx.published();
  return toTask(task);
}

export async function getTask(ctx: IntentsContext, taskId: string): Promise<Task> {
  const [row] = await ctx.db.select().from(tasks).where(eq(tasks.id, taskId));
  if (!row) throw errors.notFound("task", taskId);
  return toTask(row);
}

/** Bytes of tasks one page carries at most: a page must fit in one bus message (1 MiB). */
const MAX_PAGE_BYTES = 768 * 1024;

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

/** What one transition writes: the task's new fields and its event. */
interface Move {
  change: TaskChange;
  event: (updated: TaskRow) => NewEvent;
}

interface TransitionContext {
  task: TaskRow;
  intentStatus: string;
  caller: Caller;
  now: Date;
  tx: Tx;
  /** Extra fields sent with the move (PATCH or the action's body). */
  output?: JsonObject | null | undefined;
  error?: string | null | undefined;
  errorCode?: string | undefined;
  blockedReason?: string | null | undefined;
  assignedAgent?: string | null | undefined;
  reason?: string | undefined;
  /** The fail action applies the retry policy; PATCH status failed does not. */
  applyRetryPolicy?: boolean;
}

/**
 * The one place a task changes status: the table's check, the fields each target sets and the
 * catalogue event it writes. The actions and PATCH both come here.
 */
async function planTransition(to: TaskStatus, t: TransitionContext): Promise<Move> {
  const { task, caller, now } = t;
  const from = task.status as TaskStatus;
  assertTaskTransition(task.id, from, to);
  const agentOf = (row: TaskRow) => row.assignedAgent;
  const base = (row: TaskRow) => ({ task_id: row.id, status: row.status as TaskStatus, version: row.version });
  if (from === "blocked" && task.blockedReason === INTENT_SUSPENDED && to !== "cancelled" && to !== "failed") {
    throw new AppError("TASK_SUSPENDED", 409, `task ${task.id} is blocked because intent ${task.suspendedIntentId} is suspended; it unblocks when the intent resumes`, {
      task_id: task.id,
      suspended_intent_id: task.suspendedIntentId,
    });
  }
  if (to === "claimed" || to === "running") {
    if (t.intentStatus === "suspended_awaiting_input") {
      throw new AppError("INTENT_SUSPENDED", 409, `intent ${task.intentId} is suspended awaiting input; its tasks are not claimed or started until it resumes`, {
        intent_id: task.intentId,
      });
    }
    if (TERMINAL_STATUSES.includes(t.intentStatus as never)) {
      throw new AppError("INTENT_CLOSED", 409, `intent ${task.intentId} is ${t.intentStatus}; its tasks take no more work`, { status: t.intentStatus });
    }
  }
  switch (to) {
    case "claimed": {
      const agent = t.assignedAgent ?? task.assignedAgent ?? caller.actor;
      // Held (FOR SHARE) by changeTask before the intent lock, in the order leases take too; read again here.
      const refusal = await agentWorkRefusal(t.tx, agent);
      if (refusal) throw refusal;
      return {
        change: { status: to, assignedAgent: agent, claimedAt: now, ...(from === "blocked" ? unblocked : {}) },
        event: (row) => (from === "blocked" ? unblockEvent(row, from, caller.actor, t.reason ?? "unblocked") : taskEvent("claimed", caller.actor, { ...base(row), agent_id: agentOf(row) })),
      };
    }
    case "running":
      if (from === "blocked") return { change: { status: to, ...unblocked }, event: (row) => unblockEvent(row, from, caller.actor, t.reason ?? "unblocked") };
      return {
        change: { status: to, attempt: task.attempt + 1, startedAt: now },
        event: (row) => taskEvent("started", caller.actor, { ...base(row), agent_id: agentOf(row), attempt: row.attempt }),
      };
    case "completed":
      return {
        change: { status: to, completedAt: now, ...(t.output !== undefined ? { output: t.output } : {}) },
        event: (row) => taskEvent("completed", caller.actor, { ...base(row), agent_id: agentOf(row), memory_policy: row.memoryPolicy }),
      };
    case "failed": {
      const error = t.error === undefined ? task.error : t.error;
      if (t.applyRetryPolicy) {
        const retry = await retryDecision(t.tx, task, t.errorCode ?? "TASK_FAILED", now);
        if (retry) {
          // Retries left: back to ready for its agent to claim again, after retry_at.
          return {
            change: { status: "ready", error, ...unblocked },
            event: (row) =>
              taskEvent("retrying", caller.actor, { ...base(row), from, reason: "failed", previous_agent: null, attempt: row.attempt, retry_at: retry.retryAt ? isoTimestamp(retry.retryAt) : null }),
          };
        }
      }
      return {
        change: { status: to, error, completedAt: now, ...unblocked },
        event: (row) => taskEvent("failed", caller.actor, { ...base(row), agent_id: agentOf(row), error: row.error, error_code: t.errorCode ?? null, memory_policy: row.memoryPolicy }),
      };
    }
    case "blocked": {
      const reason = t.blockedReason ?? task.blockedReason ?? "blocked";
      return {
        change: { status: to, blockedFrom: from, blockedReason: reason, suspendedIntentId: null },
        event: (row) => taskEvent("blocked", caller.actor, { ...base(row), from, blocked_reason: reason, suspended_intent_id: null }),
      };
    }
    case "cancelled":
    case "skipped":
      return {
        change: { status: to, completedAt: now, ...unblocked },
        event: (row) =>
          to === "skipped"
            ? taskEvent("skipped", caller.actor, { ...base(row), from, reason: t.reason ?? null })
            : taskEvent("cancelled", caller.actor, { ...base(row), from, reason: t.reason ?? null, memory_policy: row.memoryPolicy }),
      };
    case "ready":
      if (from === "blocked" || from === "pending") {
        return { change: { status: to, ...unblocked }, event: (row) => unblockEvent(row, from, caller.actor, t.reason ?? (from === "pending" ? "released" : "unblocked")) };
      }
      // claimed or running given back, or a failed task retried: the holder is recorded as previous agent.
      return {
        change: {
          status: to,
          ...(from === "failed" ? { completedAt: null } : { assignedAgent: null, previousAgents: task.assignedAgent ? [...task.previousAgents, task.assignedAgent] : task.previousAgents }),
        },
        event: (row) =>
          taskEvent("retrying", caller.actor, { ...base(row), from, reason: t.reason ?? (from === "failed" ? "retry" : "released"), previous_agent: from === "failed" ? null : task.assignedAgent, attempt: row.attempt, retry_at: null }),
      };
    case "pending":
      return { change: { status: to, ...unblocked }, event: (row) => unblockEvent(row, from, caller.actor, t.reason ?? "unblocked") };
  }
}

const unblocked: TaskChange = { blockedReason: null, blockedFrom: null, suspendedIntentId: null };
const unblockEvent = (row: TaskRow, from: TaskStatus, actor: string, reason: string) =>
  taskEvent("unblocked", actor, { task_id: row.id, status: row.status as TaskStatus, version: row.version, from, reason });

/**
 * The retry policy that governs a task: its own, else its intent's (spec 2.8). Returns when the
 * next attempt may run if one is left, else null. Without any policy a failure is final.
 */
async function retryDecision(tx: Tx, task: TaskRow, errorCode: string, now: Date): Promise<{ retryAt: Date | null } | null> {
  const policy = await effectiveRetryPolicy(tx, task);
  if (!policy) return null;
  const decision = decideAfterFailure({ policy, attemptNumber: Math.max(task.attempt, 1), errorCode, unresolvedFailures: 0 });
  if (!decision.retryAllowed) return null;
  return { retryAt: decision.delayMs === null ? null : new Date(now.getTime() + decision.delayMs) };
}

/** The task's retry policy when it has one, else its intent's, else null. */
export async function effectiveRetryPolicy(tx: Tx, task: Pick<TaskRow, "retryPolicy" | "intentId">): Promise<(RetryRules & { fallback_agent_id: string | null }) | null> {
  if (task.retryPolicy) return task.retryPolicy as TaskRetryPolicy;
  const [row] = await tx.select().from(retryPolicies).where(eq(retryPolicies.intentId, task.intentId));
  if (!row) return null;
  return {
    strategy: row.strategy as RetryRules["strategy"],
    max_retries: row.maxRetries,
    base_delay_ms: row.baseDelayMs,
    max_delay_ms: row.maxDelayMs,
    failure_threshold: row.failureThreshold,
    fallback_agent_id: row.fallbackAgentId,
  };
}

/**
 * Runs one change of a task: locks its intent first (the service's lock order), reads the task
 * under it, honours If-Match, applies `decide`, then the conditional UPDATE and the events, all in
 * one transaction. When the task reaches completed or skipped, dependents whose dependencies are
 * now all done become ready.
 */
async function changeTask(
  ctx: IntentsContext,
  taskId: string,
  ifMatch: number | null,
  decide: (task: TaskRow, intentStatus: string, tx: Tx) => Promise<{ change: TaskChange; events: (updated: TaskRow) => NewEvent[] }>,
  claimingAgent?: (task: TaskRow) => string | null,
): Promise<Task> {
  const before = await readTaskUnlocked(ctx, taskId);
  const intentId = before.intentId;
  const agent = claimingAgent?.(before) ?? null;
  const now = ctx.clock.now();
  const updated = await ctx.db.transaction(async (tx) => {
    // A claim holds the agent's status row first, as lease grants do (agent, then intent), so an
    // agent's death being projected waits for it and then releases the task too.
    if (agent) {
      const refusal = await agentWorkRefusal(tx, agent, true);
      if (refusal) throw refusal;
    }
    const intent = await lockIntentRow(tx, intentId, null);
    const task = await readTask(tx, taskId);
    if (ifMatch !== null && task.version !== ifMatch) throw errors.versionMismatch("task", taskId, task.version, ifMatch);
    const plan = await decide(task, intent.status, tx);
    const row = await updateTask(tx, task, plan.change, now);
    const newEvents = plan.events(row);
    if (row.status !== task.status && DEPENDENCY_DONE_STATUSES.includes(row.status as TaskStatus)) newEvents.push(...(await readyDependents(tx, row, now)));
    if (newEvents.length) await appendToLog(tx, intentId, newEvents, now);
    return row;
  });
  ctx.published();
  return toTask(updated);
}

/** Pending tasks of the intent that waited on `done` and have no other unfinished dependency become ready. */
async function readyDependents(tx: Tx, done: TaskRow, now: Date): Promise<NewEvent[]> {
  const doneList = sql.raw(DEPENDENCY_DONE_STATUSES.map((s) => `'${s}'`).join(", "));
  const waiting = and(
    eq(tasks.intentId, done.intentId),
    sql`${tasks.dependsOn} @> array[${done.id}]::uuid[]`,
    sql`not exists (select 1 from intents.tasks d where d.id = any(${tasks.dependsOn}) and d.status not in (${doneList}))`,
  );
  // A dependent blocked while pending will return to ready, not pending, when it unblocks.
  await tx.update(tasks).set({ blockedFrom: "ready" }).where(and(waiting, eq(tasks.status, "blocked"), eq(tasks.blockedFrom, "pending")));
  const ready = await tx
    .update(tasks)
    .set({ status: "ready", version: sql`${tasks.version} + 1`, updatedAt: now })
    .where(and(waiting, eq(tasks.status, "pending")))
    .returning();
  return ready.map((row) => unblockEvent(row, "pending", "system", "dependencies_done"));
}

const actingOn = (task: TaskRow, caller: Caller) => task.assignedAgent !== null && task.assignedAgent === caller.actor;

/** The assigned agent moves its own task; coordinators and admins move any; others get 403. */
function assertMayMove(task: TaskRow, caller: Caller, what: string): void {
  if (isCoordinatorOrAdmin(caller) || actingOn(task, caller)) return;
  const holder = task.assignedAgent ? `it is assigned to ${task.assignedAgent}` : "it is assigned to no agent";
  throw forbidden(`${caller.actor} may not ${what} task ${task.id}: ${holder}; only that agent, coordinators and admins may`, task.id);
}

/** A ready task is claimed by its assigned agent, or, when unassigned, by any agent (or a coordinator or admin). */
function assertMayClaim(task: TaskRow, caller: Caller, agent: string): void {
  if (isCoordinatorOrAdmin(caller)) return;
  if (agent !== caller.actor) throw forbidden(`${caller.actor} may claim tasks for itself only, not for ${agent}`, task.id);
  if (task.assignedAgent !== null && task.assignedAgent !== agent) throw forbidden(`task ${task.id} is assigned to ${task.assignedAgent}; only that agent may claim it`, task.id);
  if (!caller.roles.includes("agent")) throw forbidden("only agents, coordinators and admins claim tasks", task.id);
}

const singleEvent = (move: Move) => ({ change: move.change, events: (row: TaskRow) => [move.event(row)] });

export function claimTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, async (task, intentStatus, tx) => {
    // A task already taken is a conflict (409) before it is anyone's permission question: the loser of a race learns it lost.
    if (task.status !== "ready") assertTaskTransition(task.id, task.status as TaskStatus, "claimed");
    assertMayClaim(task, caller, task.assignedAgent ?? caller.actor);
    return singleEvent(await planTransition("claimed", { task, intentStatus, caller, now: ctx.clock.now(), tx, assignedAgent: task.assignedAgent ?? caller.actor }));
  }, (before) => before.assignedAgent ?? caller.actor);
}

export function startTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, async (task, intentStatus, tx) => {
    assertMayMove(task, caller, "start");
    if (task.status !== "claimed") assertTaskTransition(task.id, task.status as TaskStatus, task.status === "blocked" ? "claimed" : "running");
    return singleEvent(await planTransition("running", { task, intentStatus, caller, now: ctx.clock.now(), tx }));
  });
}

export function completeTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, body: { output?: JsonObject | undefined }, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, async (task, intentStatus, tx) => {
    assertMayMove(task, caller, "complete");
    return singleEvent(await planTransition("completed", { task, intentStatus, caller, now: ctx.clock.now(), tx, output: body.output }));
  });
}

export function failTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, body: { error: string; error_code?: string | undefined }, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, async (task, intentStatus, tx) => {
    assertMayMove(task, caller, "fail");
    return singleEvent(
      await planTransition("failed", { task, intentStatus, caller, now: ctx.clock.now(), tx, error: body.error || null, errorCode: body.error_code, applyRetryPolicy: true }),
    );
  });
}

export function cancelTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, body: { reason?: string | undefined }, caller: Caller): Promise<Task> {
  return changeTask(ctx, taskId, ifMatch, async (task, intentStatus, tx) => {
    if (!isCoordinatorOrAdmin(caller)) throw forbidden("only coordinators and admins cancel tasks", task.id);
    return singleEvent(await planTransition("cancelled", { task, intentStatus, caller, now: ctx.clock.now(), tx, reason: body.reason }));
  });
}

/** The statuses an assigned agent may PATCH its own task to; the others are for coordinators and admins. */
const AGENT_PATCH_TARGETS: readonly TaskStatus[] = ["claimed", "running", "completed", "failed", "blocked"];

/**
 * PATCH /tasks/{tid} (If-Match required, 428 without): status through the transition table,
 * assigned_agent (coordinators and admins; an agent may only take an unassigned ready task for
 * itself), output, error, blocked_reason. A change of assignment of a held task hands it back to
 * ready (the holder becomes previous agent). Changes without a status change write task.updated.
 */
export function patchTask(ctx: IntentsContext, taskId: string, ifMatch: number | null, body: PatchTaskBody, caller: Caller): Promise<Task> {
  if (ifMatch === null) throw errors.preconditionRequired("task");
  return changeTask(ctx, taskId, ifMatch, async (task, intentStatus, tx) => {
    const coordinator = isCoordinatorOrAdmin(caller);
    const from = task.status as TaskStatus;
    const reassigning = body.assigned_agent !== undefined && body.assigned_agent !== task.assignedAgent;
    let to = body.status !== undefined && body.status !== from ? body.status : undefined;
    if (!coordinator) {
      const claiming = to === "claimed" && from === "ready";
      if (claiming) assertMayClaim(task, caller, body.assigned_agent ?? task.assignedAgent ?? caller.actor);
      else assertMayMove(task, caller, "change");
      if (reassigning && !(claiming && body.assigned_agent === caller.actor)) throw forbidden("only coordinators and admins assign tasks", task.id);
      if (to && !AGENT_PATCH_TARGETS.includes(to) && !(from === "blocked" && to === unblockTarget(task.blockedFrom as TaskStatus | null))) {
        throw forbidden(`only coordinators and admins move a task to ${to}`, task.id);
      }
    }
    // Reassigning a held task gives it back first: ready, the holder recorded as previous agent.
    if (reassigning && !to && TASK_HELD_STATUSES.includes(from)) to = "ready";
    const fields: TaskChange = {};
    if (body.output !== undefined) fields.output = body.output;
    if (body.error !== undefined) fields.error = body.error;
    if (body.blocked_reason !== undefined && to !== "blocked") fields.blockedReason = body.blocked_reason;
    if (!to) {
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
    });
    const change = { ...fields, ...move.change };
    // A coordinator naming the new agent with the move: it is assigned after the holder is recorded.
    if (reassigning && to !== "claimed") change.assignedAgent = body.assigned_agent ?? null;
    return { change, events: (row) => [move.event(row)] };
  }, (before) => (body.status === "claimed" ? (body.assigned_agent ?? before.assignedAgent ?? caller.actor) : null));
}

/**
 * Spec 3.1, inside the suspension's transaction (the intent row is locked): the intent's claimed
 * and running tasks become blocked with blocked_reason intent_suspended and suspended_intent_id,
 * remembering the status they return to.
 */
export async function blockTasksForSuspension(tx: Tx, intentId: string, actor: string, now: Date): Promise<number> {
  const rows = await tx
    .update(tasks)
    .set({
      blockedFrom: sql`${tasks.status}`,
      status: "blocked",
      blockedReason: INTENT_SUSPENDED,
      suspendedIntentId: intentId,
      version: sql`${tasks.version} + 1`,
      updatedAt: now,
    })
    .where(and(eq(tasks.intentId, intentId), inArray(tasks.status, [...TASK_HELD_STATUSES])))
    .returning();
  rows.sort((a, b) => a.seq - b.seq);
  if (rows.length) {
    await appendToLog(
      tx,
      intentId,
      rows.map((row) =>
        taskEvent("blocked", actor, {
          task_id: row.id,
          status: "blocked",
          version: row.version,
          from: row.blockedFrom as TaskStatus,
          blocked_reason: INTENT_SUSPENDED,
          suspended_intent_id: intentId,
        }),
      ),
      now,
    );
  }
  return rows.length;
}

/**
 * The end of a suspension, in its transaction: tasks blocked by it return to the status they were
 * blocked from when the intent resumes, and are cancelled when it is abandoned (the suspension
 * expired with the `fail` fallback).
 */
export async function releaseTasksAfterSuspension(tx: Tx, intentId: string, resumed: boolean, actor: string, now: Date): Promise<number> {
  const blocked = await tx
    .select()
    .from(tasks)
    .where(and(eq(tasks.intentId, intentId), eq(tasks.status, "blocked"), eq(tasks.blockedReason, INTENT_SUSPENDED)))
    .orderBy(asc(tasks.seq));
  const newEvents: NewEvent[] = [];
  for (const task of blocked) {
    const to = resumed ? unblockTarget(task.blockedFrom as TaskStatus | null) : "cancelled";
    const row = await updateTask(tx, task, { status: to, ...unblocked, ...(resumed ? {} : { completedAt: now }) }, now);
    newEvents.push(
      resumed
        ? unblockEvent(row, "blocked", actor, "intent_resumed")
        : taskEvent("cancelled", actor, { task_id: row.id, status: "cancelled", version: row.version, from: "blocked", reason: "intent_abandoned", memory_policy: row.memoryPolicy }),
    );
  }
  if (newEvents.length) await appendToLog(tx, intentId, newEvents, now);
  return blocked.length;
}

/**
 * Spec 4.9 and 4.8 rule 3, in the agent-lifecycle projection's transaction: the claimed and
 * running tasks of an agent that died (or was deregistered) become ready for reassignment, its
 * assignment cleared and its id appended to previous_agents, so the next agent may read its
 * working memory. A task blocked while the agent held it stays blocked, and returns to ready.
 * With `claimedBy`, only tasks claimed up to then (a late death leaves the next incarnation's
 * tasks alone). Intents are locked in id order, as everywhere.
 */
export async function releaseTasksOf(tx: Tx, agentId: string, reason: string, now: Date, claimedBy?: Date): Promise<number> {
  const held = and(
    eq(tasks.assignedAgent, agentId),
    sql`(${tasks.status} in ('claimed', 'running') or (${tasks.status} = 'blocked' and ${tasks.blockedFrom} in ('claimed', 'running')))`,
    claimedBy ? sql`${tasks.claimedAt} <= ${claimedBy}` : undefined,
  );
  const intentIds = [...new Set((await tx.select({ intentId: tasks.intentId }).from(tasks).where(held)).map((row) => row.intentId))].sort();
  let total = 0;
  for (const intentId of intentIds) {
    await lockIntentRow(tx, intentId, null);
    const rows = await tx.select().from(tasks).where(and(eq(tasks.intentId, intentId), held)).orderBy(asc(tasks.seq));
    const newEvents: NewEvent[] = [];
    for (const task of rows) {
      const from = task.status as TaskStatus;
      const row = await updateTask(
        tx,
        task,
        {
          assignedAgent: null,
          previousAgents: [...task.previousAgents, agentId],
          ...(from === "blocked" ? { blockedFrom: "ready" } : { status: "ready" }),
        },
        now,
      );
      newEvents.push(taskEvent("retrying", "system", { task_id: row.id, status: row.status as TaskStatus, version: row.version, from, reason, previous_agent: agentId, attempt: row.attempt, retry_at: null }));
    }
    if (newEvents.length) await appendToLog(tx, intentId, newEvents, now);
    total += rows.length;
  }
  return total;
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
            sql`(${tasks.status} in ('claimed', 'running') or (${tasks.status} = 'blocked' and ${tasks.blockedFrom} in ('claimed', 'running')))`,
          ),
        )
    : [];
  const held = new Set(found.map((row) => row.id));
  return { unknown: taskIds.filter((id) => !held.has(id.toLowerCase())) };
}

/** For a failure recorded with a task_id: the task, which must belong to the intent (404 otherwise). */
export async function taskOfIntent(tx: Tx, intentId: string, taskId: string): Promise<TaskRow> {
  const [row] = await tx.select().from(tasks).where(and(eq(tasks.id, taskId), eq(tasks.intentId, intentId)));
  if (!row) throw errors.notFound("task", taskId);
  return row;
}
