import { sql, type SQL } from "drizzle-orm";
import { GRAPH_MAX_DEPTH, type Caller } from "@intentmesh/contracts";
import { rowsOf, type Queryable, type Tx } from "@intentmesh/db";
import { INTENT_COLUMNS, type RawIntent } from "../kernel/statements";
import { bypassesAcl } from "../acl/rules";
import { readableBy } from "../acl/statements";

/**
 * The SQL of intent graphs (RFC-0002). Parent links live in intents.parent_intent_id (btree,
 * partial), dependencies in intents.depends_on (uuid[], GIN): the recursive walks below are
 * recursive CTEs, bounded by GRAPH_MAX_DEPTH, and every list keeps only the intents the caller
 * may read (RFC-0011, acl/statements.ts readableBy; admin keys see all).
 *
 * In every statement the listed intents are the unaliased `intents.intents`, the table readableBy
 * names; other uses of the table are aliased.
 */

type Db = Queryable;

/** The condition on `intents.intents` of what the caller may read. */
export const visibleTo = (caller: Caller, now: Date): SQL => (bypassesAcl(caller) ? sql`true` : readableBy(caller, now));

/** `true` when some dependency of the row `intents.intents` is not completed. */
const UNMET = sql.raw(`exists (select 1 from intents.intents x where x.id = any(intents.depends_on) and x.status <> 'completed')`);

export type GraphRow = RawIntent & { depth: number; unmet: boolean };

const COLUMNS = sql.raw(INTENT_COLUMNS);

/** Direct children, oldest first. */
export async function selectChildren(db: Db, parentId: string, visible: SQL, limit: number): Promise<GraphRow[]> {
  return rowsOf<GraphRow>(
    await db.execute(sql`select ${COLUMNS}, 1 as depth, ${UNMET} as unmet from intents.intents
      where parent_intent_id = ${parentId} and ${visible}
      order by created_at, id limit ${limit + 1}`),
  );
}

/** Every descendant to GRAPH_MAX_DEPTH, generation by generation, oldest first within one. */
export async function selectDescendants(db: Db, rootId: string, visible: SQL, limit: number, withRoot = false): Promise<GraphRow[]> {
  return rowsOf<GraphRow>(
    await db.execute(sql`with recursive d(node_id, depth) as (
        ${withRoot ? sql`select ${rootId}::uuid, 0` : sql`select c.id, 1 from intents.intents c where c.parent_intent_id = ${rootId}`}
        union all
        select c.id, d.depth + 1 from d join intents.intents c on c.parent_intent_id = d.node_id where d.depth < ${GRAPH_MAX_DEPTH})
      select ${COLUMNS}, d.depth, ${UNMET} as unmet from d join intents.intents on intents.id = d.node_id
      where ${visible}
      order by d.depth, created_at, id limit ${limit + 1}`),
  );
}

/** The ancestors, nearest first, to GRAPH_MAX_DEPTH. */
export async function selectAncestors(db: Db, intentId: string, visible: SQL, limit: number): Promise<GraphRow[]> {
  return rowsOf<GraphRow>(
    await db.execute(sql`with recursive a(node_id, depth) as (
        select s.parent_intent_id, 1 from intents.intents s where s.id = ${intentId} and s.parent_intent_id is not null
        union all
        select p.parent_intent_id, a.depth + 1 from a join intents.intents p on p.id = a.node_id
        where p.parent_intent_id is not null and a.depth < ${GRAPH_MAX_DEPTH})
      select ${COLUMNS}, a.depth, ${UNMET} as unmet from a join intents.intents on intents.id = a.node_id
      where ${visible}
      order by a.depth limit ${limit + 1}`),
  );
}

/** The intents `intentId` depends on, in the order they were added. */
export async function selectDependencies(db: Db, intentId: string, visible: SQL, limit: number): Promise<GraphRow[]> {
  return rowsOf<GraphRow>(
    await db.execute(sql`select ${COLUMNS}, 0 as depth, ${UNMET} as unmet
      from (select r.depends_on as deps from intents.intents r where r.id = ${intentId}) s
      cross join lateral unnest(s.deps) with ordinality as dep(dep_id, n)
      join intents.intents on intents.id = dep.dep_id
      where ${visible}
      order by dep.n limit ${limit + 1}`),
  );
}

/** The intents that depend on `intentId`, oldest first (the GIN index on depends_on). */
export async function selectDependents(db: Db, intentId: string, visible: SQL, limit: number): Promise<GraphRow[]> {
  return rowsOf<GraphRow>(
    await db.execute(sql`select ${COLUMNS}, 0 as depth, ${UNMET} as unmet from intents.intents
      where depends_on @> array[${intentId}::uuid] and ${visible}
      order by created_at, id limit ${limit + 1}`),
  );
}

/** Children that are open and ready (`ready`: every dependency completed) or blocked (some not completed). */
export async function selectChildrenByReadiness(db: Db, parentId: string, ready: boolean, visible: SQL, limit: number): Promise<GraphRow[]> {
  return rowsOf<GraphRow>(
    await db.execute(sql`select ${COLUMNS}, 1 as depth, ${UNMET} as unmet from intents.intents
      where parent_intent_id = ${parentId} and status not in ('completed', 'abandoned')
        and ${ready ? sql`not ${UNMET}` : UNMET} and ${visible}
      order by created_at, id limit ${limit + 1}`),
  );
}

/** Intents by id (those the caller may read), for the dependencies outside a graph's tree. */
export async function selectByIds(db: Db, ids: readonly string[], visible: SQL): Promise<GraphRow[]> {
  if (!ids.length) return [];
  return rowsOf<GraphRow>(
    await db.execute(sql`select ${COLUMNS}, -1 as depth, ${UNMET} as unmet from intents.intents
      where id = any(${toUuidArray(ids)}) and ${visible} order by created_at, id`),
  );
}

/** A uuid[] parameter. */
export const toUuidArray = (ids: readonly string[]): SQL => sql`${`{${ids.join(",")}}`}::uuid[]`;

/** For the completion gate: up to 20 dependencies not completed and 20 children still open. */
export async function selectGraphGate(db: Db, intentId: string): Promise<{ incompleteDependencies: string[]; openChildren: string[] }> {
  const [row] = rowsOf<{ deps: string[] | null; children: string[] | null }>(
    await db.execute(sql`select
        (select array_agg(x.id) from (select x.id from intents.intents r join intents.intents x on x.id = any(r.depends_on)
           where r.id = ${intentId} and x.status <> 'completed' order by x.id limit 20) x) as deps,
        (select array_agg(c.id) from (select c.id from intents.intents c
           where c.parent_intent_id = ${intentId} and c.status not in ('completed', 'abandoned') order by c.created_at, c.id limit 20) c) as children`),
  );
  return { incompleteDependencies: row?.deps ?? [], openChildren: row?.children ?? [] };
}

/**
 * Every graph-wide change of dependencies takes this transaction-scoped lock first, so the
 * cycle check of one addition sees every addition committed before it (READ COMMITTED takes a
 * new snapshot per statement): two additions that together would close a cycle cannot both
 * pass. Removals and creations cannot close a cycle and do not take it.
 */
export async function lockDependencyGraph(tx: Tx): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('im-intents-dependency-graph'))`);
}

/**
 * Whether `intentId` is reachable from `dependencyId` along depends_on (then making the first
 * depend on the second closes a cycle): a breadth-first walk whose UNION keeps each intent once,
 * so it reads each intent upstream of the dependency at most once.
 */
export async function closesCycle(tx: Tx, intentId: string, dependencyId: string): Promise<boolean> {
  const [row] = rowsOf<{ found: boolean }>(
    await tx.execute(sql`with recursive r(node_id) as (
        select ${dependencyId}::uuid
        union
        select dep from r
          join intents.intents i on i.id = r.node_id
          cross join lateral unnest(i.depends_on) as dep)
      select exists (select 1 from r where node_id = ${intentId}::uuid) as found`),
  );
  return row?.found === true;
}
