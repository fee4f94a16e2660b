import { getTableColumns, sql, type SQL } from "drizzle-orm";
import { errors, fitPage, type Caller, type MemoryEntry, type MemoryQuery, type MemoryType } from "@intentmesh/contracts";
import { entries, namespaces, tasks } from "../db/schema";
import type { MemoryContext } from "../context";
import { DEFAULT_NAMESPACE_PERMISSIONS, atLeast, callerNames, namespaceAccess, type NamespacePermissionObject } from "../domain/access";
import { actingAgent, isAdmin, isCoordinator } from "@intentmesh/contracts";
import { episodicAccessOf } from "../entry-access";
import { intentsCoordinatedBy } from "../coordinator-leases";
import { toEntry } from "../mapping";

/** A LIKE pattern matching a namespace prefix literally. */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
/** A text[] of bound parameters, one each: no array-literal quoting for a value to slip through. */
const textArray = (values: string[]) => sql`array[${sql.join(values.map((v) => sql`${v}`), sql`, `)}]::text[]`;

/** The filters of 4.8 that do not depend on who asks. */
export function filterSql(f: {
  namespace?: string;
  key?: string;
  memory_type?: MemoryType;
  tags?: string[];
  tags_any?: string[];
  task_id?: string;
  intent_id?: string;
  pinned?: boolean;
  updated_after?: string;
  updated_before?: string;
}): SQL[] {
  const where: SQL[] = [];
  if (f.namespace) where.push(f.namespace.endsWith("*") ? sql`${entries.namespace} like ${likePrefix(f.namespace.slice(0, -1))}` : sql`${entries.namespace} = ${f.namespace}`);
  if (f.key) where.push(sql`${entries.key} = ${f.key}`);
  if (f.memory_type) where.push(sql`${entries.memoryType} = ${f.memory_type}`);
  // GIN on tags answers both: @> (ALL) and && (ANY).
  if (f.tags?.length) where.push(sql`${entries.tags} @> ${textArray(f.tags)}`);
  if (f.tags_any?.length) where.push(sql`${entries.tags} && ${textArray(f.tags_any)}`);
  if (f.task_id) where.push(sql`${entries.taskId} = ${f.task_id}`);
  if (f.intent_id) where.push(sql`${entries.intentId} = ${f.intent_id}`);
  if (f.pinned !== undefined) where.push(sql`${entries.memoryType} = 'episodic' and ${entries.pinned} = ${f.pinned}`);
  if (f.updated_after) where.push(sql`${entries.updatedAt} > ${new Date(f.updated_after).toISOString()}`);
  if (f.updated_before) where.push(sql`${entries.updatedAt} < ${new Date(f.updated_before).toISOString()}`);
  return where;
}

/**
 * Rule 8 as SQL: the entries of the given tiers the caller may read (or write, for deletes).
 * Semantic: namespaces where the caller's permission reaches the level (the few namespaces with a
 * permission object are read; all others have the default `read`); working and episodic: the
 * entries of `owner` the tier rules open to the caller. With `tier` (a query's memory_type) only
 * that tier's rule: the others could not match, and an OR of index paths the planner need not
 * weigh keeps it on the indexes that answer the query.
 */
export async function visibleSql(ctx: MemoryContext, caller: Caller, owner: string | undefined, wanted: "read" | "write", tier?: MemoryType): Promise<SQL> {
  const parts: SQL[] = [];
  if (tier === undefined || tier === "semantic") parts.push(sql`(${entries.memoryType} = 'semantic' and ${await semanticVisible(ctx, caller, wanted)})`);
  if (owner !== undefined && tier !== "semantic") {
    const me = actingAgent(caller);
    if (me === owner) {
      parts.push(sql`(${entries.memoryType} <> 'semantic' and ${entries.agentId} = ${owner})`);
    } else {
      const episodic = await episodicAccessOf(ctx, caller, { agentId: owner, memoryType: "episodic", namespace: "", taskId: null });
      if (episodic === "write" || (episodic === "read" && wanted === "read")) parts.push(sql`(${entries.memoryType} = 'episodic' and ${entries.agentId} = ${owner})`);
      if (wanted === "read") {
        if (isAdmin(caller)) parts.push(sql`(${entries.memoryType} = 'working' and ${entries.agentId} = ${owner})`);
        else parts.push(sql`(${entries.memoryType} = 'working' and ${entries.agentId} = ${owner} and ${entries.taskId} in (${readableTasks(caller, owner, await intentsCoordinatedBy(ctx, me))}))`);
      }
    }
  }
  return parts.length ? sql`(${sql.join(parts, sql` or `)})` : sql`false`;
}

/**
 * Tasks whose working memory of `owner` the caller reads: it coordinates them (its coordinator key
 * created them, or it holds the live coordinator lease of their intent), holds them after the
 * owner, or holds an inheriting sub-task.
 */
function readableTasks(caller: Caller, owner: string, leaseIntents: string[]): SQL {
  const me = actingAgent(caller);
  const byKey = isCoordinator(caller) ? sql`${tasks.createdBy} = any(${textArray(callerNames(caller))})` : sql`false`;
  const byLease = leaseIntents.length ? sql`${tasks.intentId}::text = any(${textArray(leaseIntents)})` : sql`false`;
  const coordinated = sql`(${byKey} or ${byLease})`;
  return sql`select ${tasks.taskId} from ${tasks} where ${coordinated} or (${tasks.assignedAgent} = ${me} and ${owner} = any(${tasks.previousAgents}))
    union all select ${tasks.parentTaskId} from ${tasks} where ${tasks.assignedAgent} = ${me} and ${tasks.parentTaskId} is not null
      and coalesce((${tasks.memoryPolicy} ->> 'inherit_from_parent')::boolean, false)`;
}

async function semanticVisible(ctx: MemoryContext, caller: Caller, wanted: "read" | "write"): Promise<SQL> {
  if (isAdmin(caller)) return sql`true`;
  const configured = await ctx.db.select({ namespace: namespaces.namespace, permissions: namespaces.permissions }).from(namespaces);
  const passes = (ns: string, permissions: NamespacePermissionObject) => atLeast(namespaceAccess(caller, ns, permissions, { ...ctx.guardrails, allowed_semantic_namespaces: null, denied_semantic_namespaces: null }), wanted);
  const refused = configured.filter((n) => !passes(n.namespace, n.permissions as NamespacePermissionObject)).map((n) => n.namespace);
  const granted = configured.filter((n) => passes(n.namespace, n.permissions as NamespacePermissionObject)).map((n) => n.namespace);
  const defaultPasses = passes("", DEFAULT_NAMESPACE_PERMISSIONS);
  const parts: SQL[] = [defaultPasses ? (refused.length ? sql`not (${entries.namespace} = any(${textArray(refused)}))` : sql`true`) : granted.length ? sql`${entries.namespace} = any(${textArray(granted)})` : sql`false`];
  const g = ctx.guardrails;
  if (g.allowed_semantic_namespaces) parts.push(patternsSql(g.allowed_semantic_namespaces));
  if (g.denied_semantic_namespaces?.length) parts.push(sql`not ${patternsSql(g.denied_semantic_namespaces)}`);
  return sql`(${sql.join(parts, sql` and `)})`;
}

function patternsSql(patterns: string[]): SQL {
  if (!patterns.length) return sql`false`;
  return sql`(${sql.join(
    patterns.map((p) => (p.endsWith("*") ? sql`${entries.namespace} like ${likePrefix(p.slice(0, -1))}` : sql`${entries.namespace} = ${p}`)),
    sql` or `,
  )})`;
}

/**
 * GET /memory (4.8): every filter, newest update first, `{entries, total, limit, offset}`; only
 * entries the caller may read (rule 8). agent_id is needed for working and episodic queries
 * (400 naming it otherwise); without one, only semantic entries match. A page also stops at
 * the bus's byte limit, so it may hold fewer than `limit` entries: page on with offset + entries.length.
 */
export async function queryEntries(ctx: MemoryContext, query: MemoryQuery, caller: Caller): Promise<{ entries: MemoryEntry[]; total: number; limit: number; offset: number }> {
  // The contract (MemoryQuery) requires agent_id for working and episodic queries; without it an
  // untyped query reads semantic entries only.
  const owner = query.agent_id;
  if (query.pinned !== undefined && query.memory_type && query.memory_type !== "episodic") throw errors.validation("pinned filters episodic memory only");
  const where = [
    ...filterSql({ ...query, task_id: query["scope.task_id"], intent_id: query["scope.intent_id"] }),
    await visibleSql(ctx, caller, owner, "read", query.memory_type),
  ];
  // An explicit agent_id filters every tier by owner (a semantic entry's agent_id is its writer).
  if (query.agent_id) where.push(sql`${entries.agentId} = ${query.agent_id}`);
  const condition = sql.join(where, sql` and `);
  // The page and the total in one statement (one plan, one connection): every row of the page
  // carries the count of all matches. A page past the end has no row to carry it, so only then
  // is it counted on its own.
  const rows = await ctx.db
    .select({ ...getTableColumns(entries), total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(entries)
    .where(condition)
    .orderBy(sql`${entries.updatedAt} desc`, entries.id)
    .limit(query.limit)
    .offset(query.offset);
  const total = rows[0]?.total ?? (query.offset > 0 ? ((await ctx.db.select({ n: sql<number>`count(*)::int` }).from(entries).where(condition))[0]?.n ?? 0) : 0);
  return { entries: fitPage(rows.map(toEntry)).items, total, limit: query.limit, offset: query.offset };
}
