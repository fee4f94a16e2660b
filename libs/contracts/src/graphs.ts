import { z } from "./zod";
import { Uuid, pageLimit } from "./common";
import { command, IfMatch, IntentRef } from "./command";
import { CreateIntentBody, Intent, IntentStatus } from "./intents";

/**
 * Intent graphs (RFC-0002; docs/graphs.md): parent/child intents and dependencies between
 * intents, at the paths and in the shapes the official Python client calls them
 * (CLIENTS.md section 7). Every list answers `{<name>: Intent[], truncated}`: the client reads
 * `data.get("<name>", data)`, which needs an object.
 */

/** How deep the recursive queries (descendants, ancestors, graph) walk; deeper intents are not listed. */
export const GRAPH_MAX_DEPTH = 64;

/** A graph list's size: `limit` intents at most (and what fits in a page's bytes); `truncated` says more exist. */
export const GraphListQuery = z.object({ limit: pageLimit(500, 1000) });
export type GraphListQuery = z.infer<typeof GraphListQuery>;

const listOf = <K extends string>(key: K, name: string) =>
  z
    .object({ [key]: z.array(Intent), truncated: z.boolean() } as { [P in K]: z.ZodArray<typeof Intent> } & { truncated: z.ZodBoolean })
    .passthrough()
    .openapi(name);

export const ChildrenList = listOf("children", "ChildIntentList");
export const DescendantsList = listOf("descendants", "DescendantIntentList");
export const AncestorsList = listOf("ancestors", "AncestorIntentList");
export const DependenciesList = listOf("dependencies", "DependencyIntentList");
export const DependentsList = listOf("dependents", "DependentIntentList");
export const ReadyList = listOf("ready", "ReadyIntentList");
export const BlockedList = listOf("blocked", "BlockedIntentList");

/**
 * POST /intents/{id}/children: an intent's creation body; the client repeats the parent in
 * `parent_intent_id`, which must then be the path's.
 */
export const CreateChildIntentBody = CreateIntentBody;

export const AddDependencyBody = z
  .object({ dependency_id: Uuid.openapi({ description: "the intent that must be completed before this one may complete" }) })
  .strict()
  .openapi("AddDependency");
export type AddDependencyBody = z.infer<typeof AddDependencyBody>;

export const GraphNode = z
  .object({
    id: Uuid,
    title: z.string(),
    status: IntentStatus,
    parent_intent_id: Uuid.nullable(),
    /** The Python reference server's name for parent_intent_id. */
    parent_id: Uuid.nullable(),
    depends_on: z.array(Uuid),
    depth: z.number().int().openapi({ description: "0 for the root, n for its n-th generation of descendants, -1 for a dependency outside the tree" }),
  })
  .passthrough()
  .openapi("IntentGraphNode");

export const GraphEdge = z
  .object({ from: Uuid, to: Uuid, type: z.enum(["parent", "dependency"]) })
  .passthrough()
  .openapi("IntentGraphEdge");

/** RFC-0002 "Aggregate Status", over the root's direct children. */
export const AggregateStatus = z
  .object({
    total: z.number().int().nonnegative(),
    by_status: z.record(z.string(), z.number().int().nonnegative()),
    completion_percentage: z.number().int().min(0).max(100),
    blocking_intents: z.array(Uuid),
    ready_intents: z.array(Uuid),
  })
  .passthrough()
  .openapi("AggregateStatus");
export type AggregateStatus = z.infer<typeof AggregateStatus>;

export const IntentGraph = z
  .object({
    root_id: Uuid,
    nodes: z.array(GraphNode),
    edges: z.array(GraphEdge),
    aggregate_status: AggregateStatus,
    truncated: z.boolean(),
  })
  .passthrough()
  .openapi("IntentGraph");
export type IntentGraph = z.infer<typeof IntentGraph>;

const ListInput = IntentRef.extend({ query: GraphListQuery });
const NOT_FOUND = ["INTENT_NOT_FOUND"] as const;

export const graphCommands = {
  createChild: command("intents", "graph.children.create", IntentRef.extend({ body: CreateChildIntentBody }), Intent, [
    "DEPENDENCY_NOT_FOUND",
    "INTENT_NOT_FOUND",
    "PARENT_CLOSED",
    "PARENT_MISMATCH",
  ]),
  children: command("intents", "graph.children.list", ListInput, ChildrenList, NOT_FOUND),
  descendants: command("intents", "graph.descendants", ListInput, DescendantsList, NOT_FOUND),
  ancestors: command("intents", "graph.ancestors", ListInput, AncestorsList, NOT_FOUND),
  dependencies: command("intents", "graph.dependencies.list", ListInput, DependenciesList, NOT_FOUND),
  dependents: command("intents", "graph.dependents", ListInput, DependentsList, NOT_FOUND),
  addDependency: command("intents", "graph.dependencies.add", IntentRef.merge(IfMatch).extend({ body: AddDependencyBody }), Intent, [
    "DEPENDENCY_CYCLE",
    "DEPENDENCY_EXISTS",
    "DEPENDENCY_NOT_FOUND",
    "DEPENDENCY_LIMIT",
    "INTENT_NOT_FOUND",
    "PRECONDITION_REQUIRED",
    "VERSION_MISMATCH",
  ]),
  removeDependency: command("intents", "graph.dependencies.remove", IntentRef.merge(IfMatch).extend({ dependency_id: Uuid }), Intent, [
    "DEPENDENCY_NOT_FOUND",
    "INTENT_NOT_FOUND",
    "PRECONDITION_REQUIRED",
    "VERSION_MISMATCH",
  ]),
  ready: command("intents", "graph.ready", ListInput, ReadyList, NOT_FOUND),
  blocked: command("intents", "graph.blocked", ListInput, BlockedList, NOT_FOUND),
  graph: command("intents", "graph.get", ListInput, IntentGraph, NOT_FOUND),
} as const;
