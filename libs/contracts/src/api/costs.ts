import { ALL_ROLES, HUMAN_ROLES, type ApiRoute } from "../api-route";
import { costsCommands } from "../costs";

/** Costs and budgets (4.4). */
export const costsRoutes = [
  {
    operationId: "costsRecord",
    tag: "Costs",
    method: "post",
    path: "/intents/{intent_id}/costs",
    command: costsCommands.record,
    body: "body",
    status: 201,
    access: { roles: ALL_ROLES, actingAgentField: "agent_id" },
    summary: "Record a cost (always recorded; may raise budget_alert or block the intent)",
  },
  {
    operationId: "costsList",
    tag: "Costs",
    method: "get",
    path: "/intents/{intent_id}/costs",
    command: costsCommands.list,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "List cost records (cursor pagination) with the summary of all records and the budget",
  },
  {
    operationId: "costsSetBudget",
    tag: "Costs",
    method: "put",
    path: "/intents/{intent_id}/budget",
    command: costsCommands.setBudget,
    body: "body",
    ifMatch: "required",
    etag: true,
    access: { roles: HUMAN_ROLES },
    summary: "Replace constraints.budget (If-Match required; operators, coordinators, admins); may lift or impose a budget block",
  },
] as const satisfies readonly ApiRoute[];
