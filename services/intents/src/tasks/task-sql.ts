import { getTableColumns } from "drizzle-orm";
import type { Tx } from "@intentmesh/db";
import { rowsOf, withParams } from "@intentmesh/db";
import { tasks } from "../db/schema-tasks";
import type { TaskChange, TaskRow } from "./store";

/**
 * The task path's statements as SQL text made once, with the table's own column codecs (drizzle's
 * mapToDriverValue / mapFromDriverValue) for the values and the rows, so they read and write
 * exactly what the query builder would: building a statement over the task's 30 columns with the
 * builder cost more CPU than running it (docs/benchmarks.md, task_claim_complete).
 */

const COLUMNS = Object.entries(getTableColumns(tasks)) as [keyof TaskRow, (typeof tasks)["_"]["columns"][keyof TaskRow]][];
const COLUMN_OF = new Map(COLUMNS);

/** Every column of intents.tasks under `alias`, as a select or returning list. */
export const taskColumnList = (alias: string): string => COLUMNS.map(([, column]) => `${alias}."${column.name}"`).join(", ");

/** A task row from a raw row that holds every column of taskColumnList (other columns are ignored). */
export function taskRowOf(raw: Record<string, unknown>): TaskRow {
  const row: Record<string, unknown> = {};
  for (const [key, column] of COLUMNS) {
    const value = raw[column.name];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value as never);
  }
  return row as TaskRow;
}

const RETURNING = taskColumnList("t");
/** The UPDATE's text for one set of changed fields: few shapes, each made once. */
const updateTexts = new Map<string, string>();

/**
 * The conditional UPDATE of store.ts updateTask: `change`'s fields, version + 1 and updated_at,
 * only if the task is still at `version`. The updated row, or undefined when it was not.
 */
export async function updateTaskStatement(tx: Tx, taskId: string, version: number, change: TaskChange, now: Date): Promise<TaskRow | undefined> {
  const keys = (Object.keys(change) as (keyof TaskChange)[]).filter((key) => change[key] !== undefined);
  const shape = keys.join(",");
  let text = updateTexts.get(shape);
  if (!text) {
    const sets = keys.map((key, i) => `"${COLUMN_OF.get(key)!.name}" = $${i + 4}`);
    text = `update intents.tasks t set ${[...sets, `"version" = t."version" + 1`, `"updated_at" = $3`].join(", ")} where t."id" = $1 and t."version" = $2 returning ${RETURNING}`;
    updateTexts.set(shape, text);
  }
  const values = keys.map((key) => {
    const value = change[key];
    return value === null ? null : COLUMN_OF.get(key)!.mapToDriverValue(value as never);
  });
  const [row] = rowsOf<Record<string, unknown>>(await tx.execute(withParams(text, [taskId, version, tasks.updatedAt.mapToDriverValue(now), ...values])));
  return row ? taskRowOf(row) : undefined;
}
