import { eq, sql } from "drizzle-orm";
import { AppError, DEFAULT_MEMORY_POLICY, registryCommands, taskCommands, type Task } from "@intentmesh/contracts";
import { rowsOf, type Queryable } from "@intentmesh/db";
import { tasks } from "./db/schema";
import { SERVICE_CALLER, type MemoryContext } from "./context";
import type { TaskView } from "./domain/access";

/**
 * Task records come from the intents service (docs/memory.md, "Tasks"): a local projection kept
 * by the consumer of the intents' task events (task-consumer.ts), filled on a miss by asking
 * im.intents.tasks.get, so an entry written a moment after its task was created finds it.
 */

const ENDED = new Set(["completed", "failed", "cancelled", "skipped"]);

type TaskRow = typeof tasks.$inferSelect;

export const toTaskView = (row: TaskRow): TaskView => ({
  taskId: row.taskId,
  intentId: row.intentId,
  parentTaskId: row.parentTaskId,
  createdBy: row.createdBy,
  assignedAgent: row.assignedAgent,
  previousAgents: row.previousAgents,
  memoryPolicy: { ...DEFAULT_MEMORY_POLICY, ...row.memoryPolicy },
  ended: row.ended,
});

/** Stores a task record unless a newer version is already there. */
export async function upsertTask(db: Queryable, task: Task): Promise<void> {
  const values = {
    taskId: task.id,
    intentId: task.intent_id,
    parentTaskId: task.parent_task_id,
    createdBy: task.created_by,
    assignedAgent: task.assigned_agent,
    previousAgents: task.previous_agents,
    memoryPolicy: task.memory_policy,
    status: task.status,
    ended: ENDED.has(task.status),
    version: task.version,
  };
  await db
    .insert(tasks)
    .values(values)
    .onConflictDoUpdate({ target: tasks.taskId, set: { ...values, taskId: undefined } as never, setWhere: sql`${tasks.version} < excluded.version` });
}

/** The task as the intents service has it now (null when it has none), stored locally. */
export async function fetchTask(ctx: MemoryContext, taskId: string): Promise<TaskView | null> {
  let task: Task;
  try {
    task = await ctx.client.request(taskCommands.get, SERVICE_CALLER, { task_id: taskId });
  } catch (error) {
    if (error instanceof AppError && error.status === 404) return null;
    throw error;
  }
  await upsertTask(ctx.db, task);
  return loadLocalTask(ctx.db, taskId);
}

export async function loadLocalTask(db: Queryable, taskId: string): Promise<TaskView | null> {
  const [row] = await db.select().from(tasks).where(eq(tasks.taskId, taskId));
  return row ? toTaskView(row) : null;
}

/** The task from the projection, or from the intents service when the projection has not seen it. */
export async function loadTask(ctx: MemoryContext, taskId: string): Promise<TaskView | null> {
  return (await loadLocalTask(ctx.db, taskId)) ?? fetchTask(ctx, taskId);
}

/** Sub-tasks of a task held by `agent` (for inherit_from_parent). */
export async function childrenHeldBy(db: Queryable, parentTaskId: string, agent: string): Promise<TaskView[]> {
  const rows = await db.select().from(tasks).where(sql`${tasks.parentTaskId} = ${parentTaskId} and ${tasks.assignedAgent} = ${agent}`);
  return rows.map(toTaskView);
}

/** Whether any of `names` created a task assigned to (or once held by) `owner`. */
export async function coordinatesTaskOf(db: Queryable, names: string[], owner: string): Promise<boolean> {
  const rows = await db.execute<{ one: number }>(
    sql`select 1 as one from ${tasks} where ${tasks.createdBy} = any(${`{${names.map((n) => JSON.stringify(n)).join(",")}}`}::text[]) and (${tasks.assignedAgent} = ${owner} or ${owner} = any(${tasks.previousAgents})) limit 1`,
  );
  return rowsOf(rows).length > 0;
}

/** Whether a task of one of `intentIds` is assigned to (or was once held by) `owner`. */
export async function ownersTaskInIntents(db: Queryable, owner: string, intentIds: string[]): Promise<boolean> {
  const rows = await db.execute<{ one: number }>(
    sql`select 1 as one from ${tasks} where ${tasks.intentId}::text = any(array[${sql.join(intentIds.map((id) => sql`${id}`), sql`, `)}]::text[]) and (${tasks.assignedAgent} = ${owner} or ${owner} = any(${tasks.previousAgents})) limit 1`,
  );
  return rowsOf(rows).length > 0;
}

/** An agent's role_id from the registry (null for an agent it does not know). */
export async function roleIdOf(ctx: MemoryContext, agentId: string): Promise<string | null> {
  try {
    const agent = await ctx.client.request(registryCommands.get, SERVICE_CALLER, { agent_id: agentId });
    return agent.role_id ?? null;
  } catch (error) {
    if (error instanceof AppError && error.status === 404) return null;
    throw error;
  }
}

