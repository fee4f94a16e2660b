import { ALL_ROLES, HUMAN_ROLES, type ApiRoute } from "../api-route";
import { escalationCommands } from "../escalations";

/** Escalations to a human and arbitration requests (docs/coordinators.md), at the paths the official Python client calls. */
export const escalationRoutes = [
  {
    operationId: "escalationsCreate",
    tag: "Escalations",
    method: "post",
    path: "/intents/{intent_id}/escalations",
    command: escalationCommands.escalate,
    body: "body",
    status: 201,
    access: { roles: ALL_ROLES },
    summary: "Escalate the intent to a human: an approval request with action escalation, pending until resolved",
  },
  {
    operationId: "escalationsList",
    tag: "Escalations",
    method: "get",
    path: "/escalations",
    command: escalationCommands.list,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "Escalations, oldest first (filters intent_id, status), of the intents the caller may read",
  },
  {
    operationId: "escalationsResolve",
    tag: "Escalations",
    method: "post",
    path: "/escalations/{escalation_id}/resolve",
    command: escalationCommands.resolve,
    body: "body",
    // The roles that decide approvals (spec 4.6): an escalation goes to a human.
    access: { roles: HUMAN_ROLES },
    summary: "Resolve a pending escalation (a human key, admin on its intent, not its escalator): its approval is granted",
  },
  {
    operationId: "arbitrationRequest",
    tag: "Escalations",
    method: "post",
    path: "/intents/{intent_id}/arbitrate",
    command: escalationCommands.arbitrate,
    body: "body",
    status: 201,
    access: { roles: ALL_ROLES },
    summary: "Ask a human to arbitrate: an approval request with action arbitration",
  },
  {
    operationId: "arbitrationHistory",
    tag: "Escalations",
    method: "get",
    path: "/intents/{intent_id}/arbitration",
    command: escalationCommands.arbitrationHistory,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "The intent's arbitration requests, oldest first, with their status (the MCP server's get_arbitration)",
  },
] as const satisfies readonly ApiRoute[];
