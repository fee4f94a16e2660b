import { and, eq, sql } from "drizzle-orm";
import { errors, isoTimestamp, taskEvents, type JsonObject, type Task, type TaskEventKey, type TaskEventPayload, type TaskStatus } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { tasks } from "../db/schema-tasks";
import type { NewEvent } from "../kernel/event-log";
import { updateTaskStatement } from "./task-sql";

/** Rows of intents.tasks: their wire form, reads, the one conditional UPDATE, the catalogue's events. */

export type TaskRow = typeof tasks.$inferSelect;
export type TaskChange = Partial<Omit<TaskRow, "id" | "seq" | "intentId" | "version">>;

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
    plan_id: row.planId,
    depends_on: row.dependsOn,
    priority: row.priority,
    capabilities_required: row.capabilitiesRequired,
    metadata: row.metadata,
    io_contract: (row.ioContract ?? null) as Task["io_contract"],
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
  return { eventType: entry.name, actor, payload: entry.payload.parse(payload) as JsonObject };
}

export async function readTaskUnlocked(ctx: IntentsContext, taskId: string): Promise<TaskRow> {
  const [row] = await ctx.db.select().from(tasks).where(eq(tasks.id, taskId));
  if (!row) throw errors.notFound("task", taskId);
  return row;
}

export async function readTask(tx: Tx, taskId: string): Promise<TaskRow> {
  const [row] = await tx.select().from(tasks).where(eq(tasks.id, taskId));
  if (!row) throw errors.notFound("task", taskId);
  return row;
}

/** The conditional UPDATE every task change goes through: version + 1 only if the task is still at the version read. */
export async function updateTask(tx: Tx, task: TaskRow, change: TaskChange, now: Date): Promise<TaskRow> {
  const row = await updateTaskStatement(tx, task.id, task.version, change, now);
  if (!row) {
    const [current] = await tx.select({ version: tasks.version }).from(tasks).where(eq(tasks.id, task.id));
    throw errors.versionMismatch("task", task.id, current?.version ?? task.version, task.version);
  }
  return row;
}

/** The fields a task leaves behind when it stops being blocked. */
export const unblocked: TaskChange = { blockedReason: null, blockedFrom: null, suspendedIntentId: null };

export const unblockEvent = (row: Pick<TaskRow, "id" | "status" | "version">, from: TaskStatus, actor: string, reason: string) =>
  taskEvent("unblocked", actor, { task_id: row.id, status: row.status as TaskStatus, version: row.version, from, reason });

/** SQL: the task is held by its agent (claimed, running, or blocked while held). */
export const heldByAgent = sql`(${tasks.status} in ('claimed', 'running') or (${tasks.status} = 'blocked' and ${tasks.blockedFrom} in ('claimed', 'running')))`;

/** For a failure recorded with a task_id: the task, which must belong to the intent (404 otherwise). */
export async function taskOfIntent(tx: Tx, intentId: string, taskId: string): Promise<TaskRow> {
  const [row] = await tx.select().from(tasks).where(and(eq(tasks.id, taskId), eq(tasks.intentId, intentId)));
  if (!row) throw errors.notFound("task", taskId);
  return row;
}
