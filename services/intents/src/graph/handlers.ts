import { sql } from "drizzle-orm";
import {
  appError,
  errors,
  fitPage,
  graphCommands,
  intentsCommands,
  type AddDependencyBody,
  type Caller,
  type CreateIntentBody,
  type GraphListQuery,
  type Intent,
  type IntentGraph,
  type IntentStatus,
  intentEvents,
} from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import { rowsOf, type Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { appendToLog, assertIntentExists, type NewEvent } from "../kernel/event-log";
import { INTENT_COLUMNS, rawToIntent, type RawIntent } from "../kernel/statements";
import { createIntent } from "../intents/handlers";
import { aggregateStatus, assertDependencyAddable, assertGraphComplete, assertParentOpen, assertSameParent, cycle, graphEdges, isClosed } from "./rules";
import {
  closesCycle,
  lockDependencyGraph,
  selectAncestors,
  selectByIds,
  selectChildren,
  selectChildrenByReadiness,
  selectDependencies,
  selectDependents,
  selectDescendants,
  selectGraphGate,
  toUuidArray,
  visibleTo,
  type GraphRow,
} from "./statements";

/**
 * Intent graphs (RFC-0002; docs/graphs.md): children, dependencies, the lists and the graph the
 * official client reads, the completion gate. Readiness announced when a dependency completes:
 * graph/projection.ts.
 */

// ---------------------------------------------------------------- creation

/** Admin on the parent (unless the route checked it already), read on every dependency. */
export async function assertGraphAccess(ctx: IntentsContext, intent: Intent, caller: Caller, parentChecked: boolean): Promise<void> {
  if (intent.parent_intent_id && !parentChecked) await ctx.access.check(graphCommands.createChild, intent.parent_intent_id, caller);
  for (const dependencyId of intent.depends_on) await ctx.access.check(intentsCommands.get, dependencyId, caller);
}

/**
 * In the creating transaction: the parent exists and is open (locked FOR SHARE until the child
 * commits, so it cannot complete meanwhile), every dependency exists (FOR SHARE: none completes
 * unseen before this commits). A new intent has no dependents yet, so its dependencies cannot
 * close a cycle. RFC-0002: created `active` with a dependency not completed, it is created
 * `blocked` instead (blocked_reason dependencies; `intent` and its intent_created payload say so).
 */
export async function lockGraphOfNewIntent(tx: Tx, intent: Intent, created: NewEvent): Promise<void> {
  if (intent.parent_intent_id) {
    const [parent] = rowsOf<{ status: string }>(await tx.execute(sql`select status from intents.intents where id = ${intent.parent_intent_id} for share`));
    if (!parent) throw appError("INTENT_NOT_FOUND", `parent intent ${intent.parent_intent_id} was not found`, { resource: "intent", id: intent.parent_intent_id });
    assertParentOpen(intent.parent_intent_id, parent.status);
  }
  if (intent.depends_on.length) {
    const found = new Map(
      rowsOf<{ id: string; status: string }>(await tx.execute(sql`select id, status from intents.intents where id = any(${toUuidArray(intent.depends_on)}) order by id for share`)).map((r) => [r.id, r.status]),
    );
    const missing = intent.depends_on.find((id) => !found.has(id));
    if (missing) throw dependencyNotFound(missing);
    if (intent.status === "active" && [...found.values()].some((status) => status !== "completed")) {
      intent.status = "blocked";
      (created.payload as Record<string, unknown>).status = "blocked";
    }
  }
}

const dependencyNotFound = (id: string) => appError("DEPENDENCY_NOT_FOUND", `intent ${id}, named as a dependency, was not found`, { dependency_id: id });

/** POST /intents/{id}/children: an intent created under the path's intent (the guard checked admin on it). */
export async function createChildIntent(ctx: IntentsContext, parentId: string, body: CreateIntentBody, caller: Caller): Promise<Intent> {
  assertSameParent(parentId, body.parent_intent_id);
  return createIntent(ctx, { ...body, parent_intent_id: parentId }, caller, undefined, true);
}

// ---------------------------------------------------------------- lists

type ListKey = "children" | "descendants" | "ancestors" | "dependencies" | "dependents" | "ready" | "blocked";

/** The first `limit` rows that fit a page, and whether more exist. */
function listAnswer<K extends ListKey>(key: K, rows: GraphRow[], limit: number): { [P in K]: Intent[] } & { truncated: boolean } {
  const { items, cut } = fitPage(rows.slice(0, limit).map(rawToIntent));
  return { [key]: items, truncated: cut || rows.length > limit } as { [P in K]: Intent[] } & { truncated: boolean };
}

export async function listGraph<K extends ListKey>(ctx: IntentsContext, key: K, intentId: string, query: GraphListQuery, caller: Caller) {
  await assertIntentExists(ctx.db, intentId);
  const visible = visibleTo(caller, ctx.clock.now());
  const { limit } = query;
  const rows =
    key === "children"
      ? await selectChildren(ctx.db, intentId, visible, limit)
      : key === "descendants"
        ? await selectDescendants(ctx.db, intentId, visible, limit)
        : key === "ancestors"
          ? await selectAncestors(ctx.db, intentId, visible, limit)
          : key === "dependencies"
            ? await selectDependencies(ctx.db, intentId, visible, limit)
            : key === "dependents"
              ? await selectDependents(ctx.db, intentId, visible, limit)
              : await selectChildrenByReadiness(ctx.db, intentId, key === "ready", visible, limit);
  return listAnswer(key, rows, limit);
}

/**
 * GET /intents/{id}/graph: the intent, its descendants (to `limit` nodes) and the dependencies
 * they name outside that tree; parent and dependency edges among them; the aggregate status of
 * the intent's children (RFC-0002).
 */
export async function getGraph(ctx: IntentsContext, intentId: string, query: GraphListQuery, caller: Caller): Promise<IntentGraph> {
  await assertIntentExists(ctx.db, intentId);
  const visible = visibleTo(caller, ctx.clock.now());
  const tree = await selectDescendants(ctx.db, intentId, visible, query.limit, true);
  let truncated = tree.length > query.limit;
  const shown = tree.slice(0, query.limit);
  const inTree = new Set(shown.map((r) => r.id));
  const outside = [...new Set(shown.flatMap((r) => r.depends_on).filter((id) => !inTree.has(id)))];
  const room = Math.max(0, query.limit - shown.length);
  if (outside.length > room) truncated = true;
  const external = await selectByIds(ctx.db, outside.slice(0, room), visible);
  const rows = [...shown, ...external];
  const nodes = rows.map((r) => ({
    id: r.id,
    title: r.title,
    status: r.status as Intent["status"],
    parent_intent_id: r.parent_intent_id,
    parent_id: r.parent_intent_id,
    depends_on: r.depends_on,
    depth: Number(r.depth),
  }));
  const children = shown.filter((r) => Number(r.depth) === 1).map((r) => ({ id: r.id, status: r.status, unmet: r.unmet }));
  return { root_id: intentId, nodes, edges: graphEdges(nodes), aggregate_status: aggregateStatus(children), truncated };
}

// ---------------------------------------------------------------- dependencies

/** Locks the intent's row, honouring If-Match; 404 / 409 VERSION_MISMATCH otherwise. */
async function lockForDependencies(tx: Tx, intentId: string, ifMatch: number) {
  const [row] = rowsOf<{ version: number; status: string; blocked_reason: string | null; depends_on: string[] }>(
    await tx.execute(sql`select version, status, blocked_reason, depends_on from intents.intents where id = ${intentId} for update`),
  );
  if (!row) throw errors.notFound("intent", intentId);
  if (row.version !== ifMatch) throw errors.versionMismatch("intent", intentId, row.version, ifMatch);
  return row;
}

/** depends_on replaced, version + 1; with `status`, the server's dependency block set (blocked) or lifted (active) too. */
async function writeDependencies(tx: Tx, intentId: string, dependsOn: string[], now: Date, status?: "blocked" | "active"): Promise<RawIntent> {
  const statusChange = status ? sql`, status = ${status}, blocked_reason = ${status === "blocked" ? DEPENDENCIES_BLOCK : null}` : sql``;
  const [row] = rowsOf<RawIntent>(
    await tx.execute(sql`update intents.intents set depends_on = ${toUuidArray(dependsOn)}, version = version + 1, updated_at = ${now} ${statusChange}
      where id = ${intentId} returning ${sql.raw(INTENT_COLUMNS)}`),
  );
  return row!;
}

/**
 * POST /intents/{id}/dependencies: under the graph-wide lock (statements.ts lockDependencyGraph),
 * the intent's row locked at the If-Match version, the dependency present, no cycle; then
 * depends_on grows, version + 1, dependency_added, all in one transaction.
 */
export async function addDependency(ctx: IntentsContext, intentId: string, ifMatch: number | null, body: AddDependencyBody, caller: Caller): Promise<Intent> {
  if (ifMatch === null) throw errors.preconditionRequired("intent dependencies");
  const dependencyId = body.dependency_id;
  // Depending on an intent reveals its status to this one's readers: the caller must read it.
  await ctx.access.check(intentsCommands.get, dependencyId, caller);
  const now = ctx.clock.now();
  const written = await ctx.db.transaction(async (tx) => {
    await lockDependencyGraph(tx);
    const current = await lockForDependencies(tx, intentId, ifMatch);
    assertDependencyAddable(intentId, dependencyId, current.depends_on);
    const [dependency] = rowsOf<{ id: string; status: string }>(await tx.execute(sql`select id, status from intents.intents where id = ${dependencyId} for share`));
    if (!dependency) throw dependencyNotFound(dependencyId);
    if (await closesCycle(tx, intentId, dependencyId)) throw cycle(intentId, dependencyId);
    // RFC-0002 "active → blocked (if dependency becomes incomplete)".
    const blocks = current.status === "active" && dependency.status !== "completed";
    const row = await writeDependencies(tx, intentId, [...current.depends_on, dependencyId], now, blocks ? "blocked" : undefined);
    const version = Number(row.version);
    const events: NewEvent[] = [newEvent(intentEvents.dependencyAdded, caller.actor, { dependency_id: dependencyId, depends_on: row.depends_on, version })];
    if (blocks) events.push(newEvent(intentEvents.statusChanged, caller.actor, { from: "active", to: "blocked", reason: "dependencies_incomplete", version, incomplete_dependencies: [dependencyId] }));
    await appendToLog(tx, intentId, events, now);
    return row;
  });
  ctx.published();
  return rawToIntent(written);
}

/**
 * DELETE /intents/{id}/dependencies/{dep_id}: depends_on shrinks, version + 1,
 * dependency_removed; when that leaves an open intent with every dependency completed and the
 * removed one was not, intent.ready (cause dependency_removed) in the same transaction.
 */
export async function removeDependency(ctx: IntentsContext, intentId: string, ifMatch: number | null, dependencyId: string, caller: Caller): Promise<Intent> {
  if (ifMatch === null) throw errors.preconditionRequired("intent dependencies");
  const now = ctx.clock.now();
  const written = await ctx.db.transaction(async (tx) => {
    const current = await lockForDependencies(tx, intentId, ifMatch);
    if (!current.depends_on.includes(dependencyId)) {
      throw appError("DEPENDENCY_NOT_FOUND", `intent ${intentId} does not depend on ${dependencyId}`, { intent_id: intentId, dependency_id: dependencyId });
    }
    const remaining = current.depends_on.filter((id) => id !== dependencyId);
    const statuses = new Map(
      rowsOf<{ id: string; status: string }>(await tx.execute(sql`select id, status from intents.intents where id = any(${toUuidArray(current.depends_on)})`)).map((r) => [r.id, r.status]),
    );
    const becameReady = statuses.get(dependencyId) !== "completed" && remaining.every((id) => statuses.get(id) === "completed") && !isClosed(current.status);
    // RFC-0002 auto-unblock: the server's dependency block lifts with the last dependency not completed.
    const unblocks = becameReady && current.status === "blocked" && current.blocked_reason === DEPENDENCIES_BLOCK;
    const row = await writeDependencies(tx, intentId, remaining, now, unblocks ? "active" : undefined);
    const version = Number(row.version);
    const events: NewEvent[] = [newEvent(intentEvents.dependencyRemoved, caller.actor, { dependency_id: dependencyId, depends_on: remaining, version })];
    if (unblocks) events.push(newEvent(intentEvents.statusChanged, caller.actor, { from: "blocked", to: "active", reason: "dependencies_completed", version }));
    if (becameReady) {
      events.push(newEvent(intentEvents.ready, caller.actor, { dependency_id: dependencyId, cause: "dependency_removed", depends_on: remaining, status: row.status }));
    }
    await appendToLog(tx, intentId, events, now);
    return row;
  });
  ctx.published();
  return rawToIntent(written);
}

// ---------------------------------------------------------------- status

/** Why the server blocked an intent: a dependency not completed (RFC-0002); cleared when it unblocks. */
export const DEPENDENCIES_BLOCK = "dependencies";

/**
 * POST /intents/{id}/status to `active` for an intent with dependencies (RFC-0002 "draft → active
 * (if no unmet dependencies, else → blocked)"): in one transaction, the intent's row locked at the
 * If-Match version and its dependencies FOR SHARE (so none completes unseen until this commits,
 * and the readiness consumer then finds the intent blocked and unblocks it). With a dependency not
 * completed a draft intent becomes `blocked` (blocked_reason dependencies, status_changed reason
 * dependencies_incomplete); a blocked one stays blocked: 409 GRAPH_INCOMPLETE.
 */
export async function activateInGraph(ctx: IntentsContext, intentId: string, ifMatch: number, from: IntentStatus, reason: string | null, caller: Caller): Promise<Intent> {
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    const current = await lockForDependencies(tx, intentId, ifMatch);
    const unmet = rowsOf<{ id: string }>(
      await tx.execute(sql`select id from intents.intents where id = any(${toUuidArray(current.depends_on)}) and status <> 'completed' order by id for share`),
    ).map((r) => r.id);
    if (unmet.length && from === "blocked") assertGraphComplete(intentId, unmet, []);
    const to = unmet.length ? "blocked" : "active";
    const [written] = rowsOf<RawIntent>(
      await tx.execute(sql`update intents.intents set status = ${to}, blocked_reason = ${unmet.length ? DEPENDENCIES_BLOCK : null}, version = version + 1, updated_at = ${now}
        where id = ${intentId} returning ${sql.raw(INTENT_COLUMNS)}`),
    );
    const changed = newEvent(intentEvents.statusChanged, caller.actor, {
      from,
      to,
      reason: unmet.length ? "dependencies_incomplete" : reason,
      version: Number(written!.version),
      ...(unmet.length ? { incomplete_dependencies: unmet } : {}),
    });
    await appendToLog(tx, intentId, [changed], now);
    return written!;
  });
  return rawToIntent(row);
}

/**
 * POST /intents/{id}/status to `completed`, with the completion gate (RFC-0002) decided and the
 * change written in one transaction: the intent's row is locked at the If-Match version first, so
 * a child being created under it (which holds the row FOR SHARE) either committed before the gate
 * reads the children, or waits and then finds the parent completed (PARENT_CLOSED).
 */
export async function completeInGraph(ctx: IntentsContext, intentId: string, ifMatch: number, from: IntentStatus, reason: string | null, caller: Caller): Promise<Intent> {
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    await lockForDependencies(tx, intentId, ifMatch);
    const gate = await selectGraphGate(tx, intentId);
    assertGraphComplete(intentId, gate.incompleteDependencies, gate.openChildren);
    const [written] = rowsOf<RawIntent>(
      await tx.execute(sql`update intents.intents set status = 'completed', blocked_reason = null, version = version + 1, updated_at = ${now}
        where id = ${intentId} returning ${sql.raw(INTENT_COLUMNS)}`),
    );
    await appendToLog(tx, intentId, [newEvent(intentEvents.statusChanged, caller.actor, { from, to: "completed", reason, version: Number(written!.version) })], now);
    return written!;
  });
  return rawToIntent(row);
}
