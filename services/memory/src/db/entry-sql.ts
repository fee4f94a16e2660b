import { rowsOf, tableSql, withParams, type Queryable, type Tx } from "@intentmesh/db";
import type { EntryRow } from "../mapping";
import { entries } from "./schema";

/**
 * An entry's reads by id as SQL text made once (libs/db table-sql.ts): GET, PATCH and DELETE of
 * /memory/{id} read the entry's 20 columns on every request, and the query builder cost more CPU
 * to build those statements than to run them. Rarer statements keep the builder.
 */
const entrySql = tableSql(entries);
const COLUMNS = entrySql.columnList("e");
const READ = `select ${COLUMNS} from ${entrySql.name} e where e."id" = $1`;
const LOCK = `${READ} for update`;
const TOUCH = `update ${entrySql.name} set "last_used_at" = $2 where "id" = $1`;

/** The entry, or undefined. */
export async function selectEntry(db: Queryable, id: string): Promise<EntryRow | undefined> {
  const [row] = rowsOf<Record<string, unknown>>(await db.execute(withParams(READ, [id])));
  return row ? entrySql.rowOf(row) : undefined;
}

/** The entry under a row lock for the rest of the transaction, or undefined. */
export async function lockEntry(tx: Tx, id: string): Promise<EntryRow | undefined> {
  const [row] = rowsOf<Record<string, unknown>>(await tx.execute(withParams(LOCK, [id])));
  return row ? entrySql.rowOf(row) : undefined;
}

/** Records a use of the entry (episodic LRU). */
export async function touchEntry(db: Queryable, id: string, at: Date): Promise<void> {
  await db.execute(withParams(TOUCH, [id, entries.lastUsedAt.mapToDriverValue(at)]));
}

/** The UPDATE's text for one set of changed fields: few shapes, each made once. */
const updateTexts = new Map<string, string>();

/**
 * The conditional UPDATE of a PATCH (handlers/entries.ts applyUpdate): `changes`' defined fields
 * and version + 1, only if the entry is still at `version`. The updated row, or undefined.
 */
export async function updateEntryStatement(tx: Tx, id: string, version: number, changes: Partial<EntryRow>): Promise<EntryRow | undefined> {
  const driver = entrySql.driverValues(changes);
  const shape = driver.columns.join(",");
  let text = updateTexts.get(shape);
  if (!text) {
    const sets = driver.columns.map((column, i) => `${column} = $${i + 3}`);
    text = `update ${entrySql.name} e set ${[...sets, `"version" = e."version" + 1`].join(", ")} where e."id" = $1 and e."version" = $2 returning ${COLUMNS}`;
    updateTexts.set(shape, text);
  }
  const [row] = rowsOf<Record<string, unknown>>(await tx.execute(withParams(text, [id, version, ...driver.values])));
  return row ? entrySql.rowOf(row) : undefined;
}
