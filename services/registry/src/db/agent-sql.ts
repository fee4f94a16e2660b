import { param } from "drizzle-orm";
import { rowsOf, tableSql, withParams, type Database, type Tx } from "@intentmesh/db";
import { agentEvents, agents } from "./schema";

/**
 * The statements of registration and of the memory and assignment projections as SQL text made
 * once (libs/db table-sql.ts): each registration and each memory event runs them, and building
 * them with the query builder over the agent's 25 columns cost more CPU than running them
 * (docs/benchmarks.md, register_agent and memory_write). Rare paths keep the builder.
 */
export const agentSql = tableSql(agents);
const agentEventSql = tableSql(agentEvents);

const LOCK_AGENT_ID = `select a."agent_id" from ${agentSql.name} a where a."agent_id" = $1 for update`;
const KNOWN_AGENT_IDS = `select a."agent_id" from ${agentSql.name} a where a."agent_id" = any($1::text[])`;
const LOCK_AGENT = `select ${agentSql.columnList("a")} from ${agentSql.name} a where a."agent_id" = $1 for update`;

/** Whether the agent is known, its row locked for the rest of the transaction when it is. */
export async function lockAgentId(tx: Tx, agentId: string): Promise<boolean> {
  return rowsOf(await tx.execute(withParams(LOCK_AGENT_ID, [agentId]))).length > 0;
}

/** Which of these agent ids the registry knows, read with one statement and no lock
 * (the ids go as one array parameter: `param`, as withParams would spread a bare array). */
export async function knownAgentIds(db: Database, agentIds: string[]): Promise<Set<string>> {
  const rows = rowsOf<{ agent_id: string }>(await db.execute(withParams(KNOWN_AGENT_IDS, [param([...new Set(agentIds)])])));
  return new Set(rows.map((row) => row.agent_id));
}

/** The agent's row under a row lock, or undefined. */
export async function lockAgent(tx: Tx, agentId: string): Promise<ReturnType<typeof agentSql.rowOf> | undefined> {
  const [row] = rowsOf<Record<string, unknown>>(await tx.execute(withParams(LOCK_AGENT, [agentId])));
  return row ? agentSql.rowOf(row) : undefined;
}

/** Rows of the agent's log; one INSERT text per number of rows (nearly always one) and columns. */
const eventInsertTexts = new Map<string, string>();
export async function insertAgentEvents(tx: Tx, rows: (typeof agentEvents.$inferInsert)[]): Promise<void> {
  if (!rows.length) return;
  const encoded = rows.map((row) => agentEventSql.driverValues(row));
  const columns = encoded[0]!.columns;
  const shape = `${rows.length}:${columns.join(",")}`;
  let text = eventInsertTexts.get(shape);
  if (!text) {
    const tuples = encoded.map((_row, r) => `(${columns.map((_c, c) => `$${r * columns.length + c + 1}`).join(", ")})`);
    text = `insert into ${agentEventSql.name} (${columns.join(", ")}) values ${tuples.join(", ")}`;
    eventInsertTexts.set(shape, text);
  }
  await tx.execute(withParams(text, encoded.flatMap((row) => row.values)));
}
