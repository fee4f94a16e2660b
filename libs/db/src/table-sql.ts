import { getTableColumns, getTableName, type InferSelectModel } from "drizzle-orm";
import { getTableConfig, type PgTable } from "drizzle-orm/pg-core";
import type { Tx } from "./database";
import { rowsOf } from "./database";
import { withParams } from "./statement";

/**
 * Statements of a hot path as SQL text made once per shape, with the table's own column codecs
 * (drizzle's mapToDriverValue / mapFromDriverValue) for values and rows, so they read and write
 * exactly what the query builder would. Building a statement over a wide table (the task's 30
 * columns) with the builder costs more CPU than running it: about 110 us per select, update or
 * insert on the benchmark host against 3 us for a text statement (docs/benchmarks.md,
 * task_claim_complete). For the statements a request runs every time; the builder elsewhere.
 */
export interface TableSql<T extends PgTable> {
  /** The schema-qualified table name. */
  readonly name: string;
  /** Every column under `alias`, as a select or returning list. */
  columnList(alias: string): string;
  /** A row from a raw row that holds every column of columnList (other columns are ignored). */
  rowOf(raw: Record<string, unknown>): InferSelectModel<T>;
  /** `values`' defined fields as driver values, with their quoted column names. */
  driverValues(values: Partial<InferSelectModel<T>>): { columns: string[]; values: unknown[] };
  /** INSERT of one row (undefined fields take their defaults), returning it. */
  insert(tx: Tx, values: Partial<InferSelectModel<T>>): Promise<InferSelectModel<T>>;
  /** INSERT ... ON CONFLICT DO NOTHING of one row, returning it; undefined when it conflicted. */
  insertIfAbsent(tx: Tx, values: Partial<InferSelectModel<T>>): Promise<InferSelectModel<T> | undefined>;
}

export function tableSql<T extends PgTable>(table: T): TableSql<T> {
  type Row = InferSelectModel<T>;
  const columns = Object.entries(getTableColumns(table)) as [string, T["_"]["columns"][string]][];
  const columnOf = new Map(columns);
  const { schema } = getTableConfig(table);
  const name = `${schema ? `"${schema}".` : ""}"${getTableName(table)}"`;
  const columnList = (alias: string) => columns.map(([, column]) => `${alias}."${column.name}"`).join(", ");
  const returning = columnList("r");
  const insertTexts = new Map<string, string>();
  const rowOf = (raw: Record<string, unknown>): Row => {
    const row: Record<string, unknown> = {};
    for (const [key, column] of columns) {
      const value = raw[column.name];
      row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value as never);
    }
    return row as Row;
  };
  const driverValues = (values: Partial<Row>) => {
    const keys = Object.keys(values).filter((key) => (values as Record<string, unknown>)[key] !== undefined);
    return {
      columns: keys.map((key) => `"${columnOf.get(key)!.name}"`),
      values: keys.map((key) => {
        const value = (values as Record<string, unknown>)[key];
        return value === null ? null : columnOf.get(key)!.mapToDriverValue(value as never);
      }),
    };
  };
  const insertRow = async (tx: Tx, values: Partial<Row>, ifAbsent: boolean): Promise<Row | undefined> => {
    const driver = driverValues(values);
    const shape = `${ifAbsent ? "?" : ""}${driver.columns.join(",")}`;
    let text = insertTexts.get(shape);
    if (!text) {
      const placeholders = driver.columns.map((_c, i) => `$${i + 1}`).join(", ");
      text = `insert into ${name} as r (${driver.columns.join(",")}) values (${placeholders})${ifAbsent ? " on conflict do nothing" : ""} returning ${returning}`;
      insertTexts.set(shape, text);
    }
    const [row] = rowsOf<Record<string, unknown>>(await tx.execute(withParams(text, driver.values)));
    return row ? rowOf(row) : undefined;
  };
  return {
    name,
    columnList,
    rowOf,
    driverValues,
    insert: async (tx, values) => (await insertRow(tx, values, false))!,
    insertIfAbsent: (tx, values) => insertRow(tx, values, true),
  };
}
