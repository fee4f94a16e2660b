import { retryCommands as r } from "@intentmesh/contracts";
import type { Route } from "./routes";
import { id, ifMatch } from "./route-params";

/** Retry policy and failures (spec 4.4). */
export const retryRoutes: Route[] = [
  {
    method: "put",
    path: "/intents/:id/retry-policy",
    command: r.putPolicy,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    summary: "Set or replace the retry policy (omitted fields take their defaults)",
  },
  { method: "get", path: "/intents/:id/retry-policy", command: r.getPolicy, input: (req) => ({ intent_id: id(req) }), summary: "Read the retry policy (404 when none is set)" },
  {
    method: "post",
    path: "/intents/:id/failures",
    command: r.recordFailure,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    status: 201,
    actingAgentField: "agent_id",
    summary: "Record a failed attempt; schedules the retry or hands over to the fallback agent",
  },
  { method: "get", path: "/intents/:id/failures", command: r.listFailures, input: (req) => ({ intent_id: id(req), query: req.query }), summary: "Failure history, oldest first" },
];
