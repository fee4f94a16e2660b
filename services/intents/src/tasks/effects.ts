import { and, asc, eq, inArray, sql, type SQL } from "drizzle-orm";
import { INTENT_SUSPENDED, type TaskStatus } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { tasks } from "../db/schema-tasks";
import { appendToLog, lockIntentRow, type NewEvent } from "../kernel/event-log";
import { TASK_HELD_STATUSES, unblockTarget } from "./task-status";
import { heldByAgent, taskEvent, unblocked, unblockEvent, updateTask } from "./store";

/** What other resources' changes do to tasks: an intent's suspension and its end, an agent's death. */

/** The intent's tasks its suspension blocks (blockTasksForSuspension) and those its end releases (releaseTasksAfterSuspension). */
const heldForSuspension = (intentId: string) => and(eq(tasks.intentId, intentId), inArray(tasks.status, [...TASK_HELD_STATUSES]));
const blockedBySuspension = (intentId: string) => and(eq(tasks.intentId, intentId), eq(tasks.status, "blocked"), eq(tasks.blockedReason, INTENT_SUSPENDED));

/**
 * SQL of whether a suspension's start or end has tasks to move, for a statement of the
 * suspension's transaction to read after the intent row is locked. Tasks take and leave those
 * statuses only under that lock (task moves, this module), so the answer holds until the commit,
 * and the suspension skips blockTasksForSuspension or releaseTasksAfterSuspension when it is false.
 */
export const suspensionMovesTasksSql = (intentId: string, at: "start" | "end"): SQL =>
  sql`exists (select 1 from ${tasks} where ${at === "start" ? heldForSuspension(intentId) : blockedBySuspension(intentId)})`;

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
    .where(heldForSuspension(intentId))
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
    .where(blockedBySuspension(intentId))
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
    heldByAgent,
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

