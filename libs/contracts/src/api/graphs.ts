import { ALL_ROLES, type ApiRoute } from "../api-route";
import { graphCommands } from "../graphs";

/** Intent graphs (RFC-0002; docs/graphs.md), at the paths the official Python client calls. */
const list = <O extends string, S extends string, C extends (typeof graphCommands)[keyof typeof graphCommands]>(operationId: O, segment: S, command: C, summary: string) =>
  ({
    operationId,
    tag: "Intent graphs",
    method: "get",
    path: `/intents/{intent_id}/${segment}` as `/intents/{intent_id}/${S}`,
    command,
    query: "query",
    access: { roles: ALL_ROLES },
    summary,
  }) as const;

export const graphRoutes = [
  {
    operationId: "graphCreateChild",
    tag: "Intent graphs",
    method: "post",
    path: "/intents/{intent_id}/children",
    command: graphCommands.createChild,
    body: "body",
    status: 201,
    etag: true,
    access: { roles: ALL_ROLES, claimsIdentity: ["created_by"] },
    summary: "Create a child intent under the intent (admin on the parent); parent_intent_id in the body, when sent, must be the parent",
  },
  list("graphChildren", "children", graphCommands.children, "The intent's direct children, oldest first"),
  list("graphDescendants", "descendants", graphCommands.descendants, "Every descendant, generation by generation (to depth 64)"),
  list("graphAncestors", "ancestors", graphCommands.ancestors, "The ancestors, nearest first, up to the root"),
  list("graphDependencies", "dependencies", graphCommands.dependencies, "The intents this intent depends on"),
  list("graphDependents", "dependents", graphCommands.dependents, "The intents that depend on this intent"),
  {
    operationId: "graphAddDependency",
    tag: "Intent graphs",
    method: "post",
    path: "/intents/{intent_id}/dependencies",
    command: graphCommands.addDependency,
    body: "body",
    ifMatch: "required",
    etag: true,
    access: { roles: ALL_ROLES },
    summary: "Make the intent depend on another (If-Match required); a dependency that would close a cycle is refused 409",
  },
  {
    operationId: "graphRemoveDependency",
    tag: "Intent graphs",
    method: "delete",
    path: "/intents/{intent_id}/dependencies/{dependency_id}",
    command: graphCommands.removeDependency,
    ifMatch: "required",
    etag: true,
    access: { roles: ALL_ROLES },
    summary: "Remove a dependency (If-Match required)",
  },
  list("graphReady", "ready", graphCommands.ready, "The intent's children that are neither completed nor abandoned and whose dependencies are all completed"),
  list("graphBlocked", "blocked", graphCommands.blocked, "The intent's children that are neither completed nor abandoned and wait on a dependency not completed"),
  list("graphGet", "graph", graphCommands.graph, "The graph under the intent: nodes, parent and dependency edges, the children's aggregate status"),
] as const satisfies readonly ApiRoute[];
