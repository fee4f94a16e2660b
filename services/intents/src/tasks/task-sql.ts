import { rowsOf, tableSql, withParams, type Queryable, type Tx } from "@intentmesh/db";
import { tasks } from "../db/schema-tasks";
import type { TaskChange, TaskRow } from "./store";

/** The task path's statements as SQL text made once (libs/db table-sql.ts): they run on every request of a task. */
export const taskSql = tableSql(tasks);

/** Every column of intents.tasks under `alias`, as a select or returning list. */
export const taskColumnList = taskSql.columnList;
/** A task row from a raw row that holds every column of taskColumnList. */
export const taskRowOf = taskSql.rowOf;

const RETURNING = taskColumnList("t");
const READ = `select ${RETURNING} from intents.tasks t where t.id = $1`;
/** The UPDATE's text for one set of changed fields: few shapes, each made once. */
const updateTexts = new Map<string, string>();

/** The task, or undefined. */
export async function selectTask(db: Queryable, taskId: string): Promise<TaskRow | undefined> {
  const [row] = rowsOf<Record<string, unknown>>(await db.execute(withParams(READ, [taskId])));
  return row ? taskRowOf(row) : undefined;
}

/**
 * The conditional UPDATE of store.ts updateTask: `change`'s fields, version + 1 and updated_at,
 * only if the task is still at `version`. The updated row, or undefined when it was not.
 */
export async function updateTaskStatement(tx: Tx, taskId: string, version: number, change: TaskChange, now: Date): Promise<TaskRow | undefined> {
  const driver = taskSql.driverValues(change);
  const shape = driver.columns.join(",");
  let text = updateTexts.get(shape);
  if (!text) {
    const sets = driver.columns.map((column, i) => `${column} = $${i + 4}`);
    text = `update intents.tasks t set ${[...sets, `"version" = t."version" + 1`, `"updated_at" = $3`].join(", ")} where t."id" = $1 and t."version" = $2 returning ${RETURNING}`;
    updateTexts.set(shape, text);
  }
  const [row] = rowsOf<Record<string, unknown>>(await tx.execute(withParams(text, [taskId, version, tasks.updatedAt.mapToDriverValue(now), ...driver.values])));
  return row ? taskRowOf(row) : undefined;
}
