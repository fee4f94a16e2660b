import { and, eq, sql } from "drizzle-orm";
import type { Tx } from "@intentmesh/db";
import { tasks } from "../db/schema-tasks";
import type { NewEvent } from "../kernel/event-log";
import { DEPENDENCY_DONE_STATUSES } from "./task-status";
import { unblockEvent, type TaskRow } from "./store";

/** Pending tasks of the intent that waited on `done` and have no other unfinished dependency become ready. */
export async function readyDependents(tx: Tx, done: TaskRow, now: Date): Promise<NewEvent[]> {
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

