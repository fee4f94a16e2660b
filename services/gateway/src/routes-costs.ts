import { costsCommands as c } from "@intentmesh/contracts";
import type { Route } from "./routes";
import { id, ifMatch } from "./route-params";

/** Costs and budgets (spec 2.6, 4.2). */
export const costRoutes: Route[] = [
  {
    method: "post",
    path: "/intents/:id/costs",
    command: c.record,
    input: (req) => ({ intent_id: id(req), body: req.body }),
    status: 201,
    actingAgentField: "agent_id",
    summary: "Record a cost (always recorded; may raise budget_alert or block the intent)",
  },
  {
    method: "get",
    path: "/intents/:id/costs",
    command: c.list,
    input: (req) => ({ intent_id: id(req), query: req.query }),
    summary: "List cost records (cursor pagination) with the summary of all records and the budget",
  },
  {
    method: "put",
    path: "/intents/:id/budget",
    command: c.setBudget,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    etag: true,
    summary: "Replace constraints.budget (If-Match required; operators, coordinators, admins); may lift or impose a budget block",
  },
];
