import { and, eq, sql } from "drizzle-orm";
import type { TaskStatus } from "@intentmesh/contracts";
import { rowsOf, type Tx } from "@intentmesh/db";
import { tasks } from "../db/schema-tasks";
import type { NewEvent } from "../kernel/event-log";
import { DEPENDENCY_DONE_STATUSES } from "./task-status";
import { unblockEvent, type TaskRow } from "./store";

/**
 * Pending tasks of the intent that waited on `done` and have no other unfinished dependency become
 * ready, in one statement: a dependent blocked while pending will return to ready, not pending,
 * when it unblocks (the CTE, on other rows than the pending ones the statement readies).
 */
export async function readyDependents(tx: Tx, done: TaskRow, now: Date): Promise<NewEvent[]> {
  const doneList = sql.raw(DEPENDENCY_DONE_STATUSES.map((s) => `'${s}'`).join(", "));
  const waiting = and(
    eq(tasks.intentId, done.intentId),
    sql`${tasks.dependsOn} @> array[${done.id}]::uuid[]`,
    sql`not exists (select 1 from intents.tasks d where d.id = any(${tasks.dependsOn}) and d.status not in (${doneList}))`,
  );
  const ready = rowsOf<{ id: string; status: TaskStatus; version: number }>(
    await tx.execute(sql`
      with blocked_while_pending as (
        update ${tasks} set blocked_from = 'ready' where ${waiting} and ${tasks.status} = 'blocked' and ${tasks.blockedFrom} = 'pending'
      )
      update ${tasks} set status = 'ready', version = ${tasks.version} + 1, updated_at = ${now}
      where ${waiting} and ${tasks.status} = 'pending'
      returning ${tasks.id} as id, ${tasks.status} as status, ${tasks.version} as version`),
  );
  return ready.map((row) => unblockEvent(row, "pending", "system", "dependencies_done"));
}
