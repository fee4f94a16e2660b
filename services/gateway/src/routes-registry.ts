import type { Request } from "express";
import { registryCommands as r } from "@intentmesh/contracts";
import type { Route } from "./routes";
import { ifMatch } from "./route-params";

const agentId = (req: Request) => String(req.params.agentId);

const register = (path: string, summary: string): Route => ({
  method: "post",
  path,
  command: r.register,
  input: (req) => ({ body: req.body }),
  status: 201,
  etag: true,
  registersAgent: true,
  summary,
});

const changeStatus = (method: "patch" | "put", summary: string): Route => ({
  method,
  path: "/agents/:agentId/status",
  command: r.changeStatus,
  input: (req) => ({ agent_id: agentId(req), if_match: ifMatch(req), body: req.body }),
  etag: true,
  summary,
});

const getRecord = (path: string, summary: string): Route => ({
  method: "get",
  path,
  command: r.get,
  input: (req) => ({ agent_id: agentId(req) }),
  etag: true,
  summary,
});

/** Part 4.9, plus the paths the official OpenIntent clients call (register, record, PUT status) as aliases. */
export const registryRoutes: Route[] = [
  register("/agents", "Register an agent (201, ETag); re-activates a dead or deregistered id"),
  register("/agents/register", "Register an agent (alias of POST /agents used by the OpenIntent clients)"),
  { method: "get", path: "/agents", command: r.list, input: (req) => ({ query: req.query }), summary: "List agents (coordinators and admins): capabilities, status, role_id, min_available_capacity" },
  getRecord("/agents/:agentId", "Read an agent's full record"),
  getRecord("/agents/:agentId/record", "Read an agent's full record (alias used by the OpenIntent clients)"),
  {
    method: "post",
    path: "/agents/:agentId/heartbeat",
    command: r.heartbeat,
    input: (req) => ({ agent_id: agentId(req), body: req.body }),
    summary: "Heartbeat: only with the key the agent registered with; 410 once dead or deregistered",
  },
  changeStatus("patch", "Drain an agent (the agent itself, a coordinator or an admin); If-Match required"),
  changeStatus("put", "Drain an agent (alias of PATCH used by the OpenIntent clients)"),
  {
    method: "delete",
    path: "/agents/:agentId",
    command: r.deregister,
    input: (req) => ({ agent_id: agentId(req), if_match: ifMatch(req) }),
    etag: true,
    summary: "Deregister an agent at once, without a drain",
  },
  {
    method: "get",
    path: "/agents/:agentId/events",
    command: r.listEvents,
    input: (req) => ({ agent_id: agentId(req), query: req.query }),
    summary: "Read an agent's own event log (lifecycle, assignments, commands), oldest first",
  },
  { method: "get", path: "/pools/:roleId", command: r.pool, input: (req) => ({ role_id: String(req.params.roleId) }), summary: "Capacity of the pool of agents sharing a role_id" },
];
