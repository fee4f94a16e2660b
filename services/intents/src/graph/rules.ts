import { appError, MAX_DEPENDENCIES, type AggregateStatus, type IntentStatus } from "@intentmesh/contracts";

/**
 * The pure rules of intent graphs (RFC-0002; docs/graphs.md). The database facts they decide on
 * are read by graph/statements.ts; the handlers put the two together.
 */

/** Statuses after which an intent takes no more work: no children under it, not listed as ready or blocked. */
export const CLOSED_STATUSES: readonly IntentStatus[] = ["completed", "abandoned"];
export const isClosed = (status: string): boolean => (CLOSED_STATUSES as readonly string[]).includes(status);

/** POST /intents/{id}/children: the body may repeat the parent (the client does), but not name another. */
export function assertSameParent(pathParent: string, bodyParent: string | null | undefined): void {
  if (bodyParent && bodyParent !== pathParent) {
    throw appError("PARENT_MISMATCH", `parent_intent_id ${bodyParent} differs from the intent in the path, ${pathParent}`, { path: pathParent, body: bodyParent });
  }
}

/** A child goes under an open parent only: a completed parent would have a child not completed. */
export function assertParentOpen(parentId: string, status: string): void {
  if (isClosed(status)) throw appError("PARENT_CLOSED", `intent ${parentId} is ${status}; it takes no new children`, { parent_intent_id: parentId, status });
}

/**
 * Adding `dependencyId` to the dependencies of `intentId` (which holds `current`): not itself
 * (the smallest cycle), not twice, not past MAX_DEPENDENCIES. Longer cycles are the database's
 * to find (statements.ts, closesCycle).
 */
export function assertDependencyAddable(intentId: string, dependencyId: string, current: readonly string[]): void {
  if (intentId === dependencyId) throw cycle(intentId, dependencyId);
  if (current.includes(dependencyId)) {
    throw appError("DEPENDENCY_EXISTS", `intent ${intentId} already depends on ${dependencyId}`, { intent_id: intentId, dependency_id: dependencyId });
  }
  if (current.length >= MAX_DEPENDENCIES) {
    throw appError("DEPENDENCY_LIMIT", `intent ${intentId} already has ${current.length} dependencies, the most an intent may have`, { intent_id: intentId, max: MAX_DEPENDENCIES });
  }
}

/** The refusal of a dependency that would close a cycle. */
export function cycle(intentId: string, dependencyId: string) {
  const why = intentId === dependencyId ? "an intent cannot depend on itself" : `${dependencyId} already depends, directly or not, on ${intentId}`;
  return appError("DEPENDENCY_CYCLE", `intent ${intentId} cannot depend on ${dependencyId}: ${why}`, { intent_id: intentId, dependency_id: dependencyId });
}

/**
 * RFC-0002 completion gate: an intent completes only when every dependency is completed and
 * every child is closed (completed, or abandoned: an abandoned child will never complete, and the
 * RFC's cascade makes abandonment the parent's way out too). Lists are capped by the reader.
 */
export function assertGraphComplete(intentId: string, incompleteDependencies: readonly string[], openChildren: readonly string[]): void {
  if (!incompleteDependencies.length && !openChildren.length) return;
  const parts = [
    incompleteDependencies.length ? `dependencies not completed: ${incompleteDependencies.join(", ")}` : null,
    openChildren.length ? `children neither completed nor abandoned: ${openChildren.join(", ")}` : null,
  ].filter(Boolean);
  throw appError("GRAPH_INCOMPLETE", `intent ${intentId} cannot complete yet; ${parts.join("; ")}`, {
    intent_id: intentId,
    incomplete_dependencies: [...incompleteDependencies],
    open_children: [...openChildren],
  });
}

export interface ChildFacts {
  id: string;
  status: string;
  /** Some dependency of the child is not completed. */
  unmet: boolean;
}

/** Ready: open, every dependency completed. Blocked: open, waiting on a dependency. */
export const isReady = (child: ChildFacts): boolean => !isClosed(child.status) && !child.unmet;
export const isBlocked = (child: ChildFacts): boolean => !isClosed(child.status) && child.unmet;

/**
 * RFC-0002 "Aggregate Status" over a parent's children: counts by status (every status named,
 * suspended_awaiting_input included), the share completed (a suspended child does not count),
 * the children blocking progress (blocked, or waiting on a dependency) and those ready.
 */
export function aggregateStatus(children: readonly ChildFacts[]): AggregateStatus {
  const byStatus: Record<string, number> = { draft: 0, active: 0, blocked: 0, completed: 0, abandoned: 0, suspended_awaiting_input: 0 };
  for (const child of children) byStatus[child.status] = (byStatus[child.status] ?? 0) + 1;
  const total = children.length;
  return {
    total,
    by_status: byStatus,
    completion_percentage: total ? Math.floor((byStatus.completed! * 100) / total) : 0,
    blocking_intents: children.filter((c) => !isClosed(c.status) && (c.unmet || c.status === "blocked")).map((c) => c.id),
    ready_intents: children.filter(isReady).map((c) => c.id),
  };
}

export interface NodeFacts {
  id: string;
  parent_intent_id: string | null;
  depends_on: string[];
}

/** The edges among the nodes shown: parent -> child, and dependency -> dependent (the RFC's and the reference's direction). */
export function graphEdges(nodes: readonly NodeFacts[]): { from: string; to: string; type: "parent" | "dependency" }[] {
  const shown = new Set(nodes.map((n) => n.id));
  const edges: { from: string; to: string; type: "parent" | "dependency" }[] = [];
  for (const node of nodes) {
    if (node.parent_intent_id && shown.has(node.parent_intent_id)) edges.push({ from: node.parent_intent_id, to: node.id, type: "parent" });
    for (const dep of node.depends_on) if (shown.has(dep)) edges.push({ from: dep, to: node.id, type: "dependency" });
  }
  return edges;
}
