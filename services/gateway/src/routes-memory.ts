import type { Request } from "express";
import { memoryCommands as m, MemoryDeleteFilter } from "@intentmesh/contracts";
import type { Route } from "./routes";
import { ifMatch } from "./route-params";

const entryId = (req: Request) => String(req.params.entryId);
const agentId = (req: Request) => String(req.params.agentId);

/** Part 4.8, plus GET /agents/{id}/memory, the route the official Python client reads as a bare list. */
export const memoryRoutes: Route[] = [
  { method: "post", path: "/memory/batch", command: m.batch, input: (req) => ({ body: req.body }), summary: "Create or update many memory entries atomically: {entries: [create body | {id, if_match, ...patch}]}" },
  {
    method: "delete",
    path: "/memory/batch",
    command: m.deleteBatch,
    input: (req) => ({ body: req.body }),
    documentedBody: MemoryDeleteFilter,
    summary: "Delete the entries matching a filter that the caller may write (at most 1000 per call)",
  },
  { method: "get", path: "/memory/namespaces", command: m.namespaces, input: () => ({}), summary: "Semantic namespaces the caller may read" },
  { method: "get", path: "/memory/namespaces/:namespace", command: m.getNamespace, input: (req) => ({ namespace: String(req.params.namespace) }), summary: "A namespace's details and permissions" },
  {
    method: "patch",
    path: "/memory/namespaces/:namespace",
    command: m.patchNamespace,
    input: (req) => ({ namespace: String(req.params.namespace), body: req.body }),
    summary: "Set a namespace's permission object (memory.admin only)",
  },
  { method: "post", path: "/memory", command: m.create, input: (req) => ({ body: req.body }), status: 201, etag: true, actingAgentField: "agent_id", summary: "Create a memory entry" },
  { method: "get", path: "/memory", command: m.query, input: (req) => ({ query: req.query }), summary: "Query memory entries (4.8 parameters): {entries, total, limit, offset}" },
  { method: "get", path: "/memory/:entryId", command: m.get, input: (req) => ({ entry_id: entryId(req) }), etag: true, summary: "Read a memory entry" },
  {
    method: "patch",
    path: "/memory/:entryId",
    command: m.patch,
    input: (req) => ({ entry_id: entryId(req), if_match: ifMatch(req), body: req.body }),
    etag: true,
    summary: "Update a memory entry's value and tags (If-Match required: 428 without, 409 VERSION_MISMATCH with the current entry)",
  },
  { method: "delete", path: "/memory/:entryId", command: m.delete, input: (req) => ({ entry_id: entryId(req) }), summary: "Delete a memory entry at once, irreversibly" },
  { method: "get", path: "/agents/:agentId/memory/summary", command: m.summary, input: (req) => ({ agent_id: agentId(req) }), summary: "An agent's memory summary (4.8)" },
  {
    method: "put",
    path: "/agents/:agentId/memory/capacity",
    command: m.setCapacity,
    input: (req) => ({ agent_id: agentId(req), body: req.body }),
    summary: "Set an agent's episodic capacity ({episodic_capacity}, null for the server default); coordinators and admins",
  },
  {
    method: "get",
    path: "/agents/:agentId/memory/:namespace/:key",
    command: m.lookup,
    input: (req) => ({ agent_id: agentId(req), namespace: String(req.params.namespace), key: String(req.params.key) }),
    etag: true,
    summary: "An agent's entry by namespace and key (the MCP server's memory_get)",
  },
  {
    method: "put",
    path: "/agents/:agentId/memory/:namespace/:key",
    command: m.put,
    input: (req) => ({ agent_id: agentId(req), namespace: String(req.params.namespace), key: String(req.params.key), if_match: ifMatch(req), body: req.body }),
    etag: true,
    summary: "Create an agent's entry by namespace and key, or update it with If-Match (the MCP server's memory_set: {value, ttl_seconds?})",
  },
  {
    method: "get",
    path: "/agents/:agentId/memory/:namespace",
    command: m.query,
    input: (req) => ({ query: { ...req.query, agent_id: agentId(req), namespace: String(req.params.namespace) }, raw: true }),
    summary: "An agent's entries in one namespace as a bare list (the MCP server's memory_list); `summary` is the summary route",
  },
  {
    method: "get",
    path: "/agents/:agentId/memory",
    command: m.query,
    input: (req) => ({ query: { ...req.query, agent_id: agentId(req) }, raw: true }),
    summary: "An agent's memory as a bare list (the official Python client's route); same filters as GET /memory",
  },
];
