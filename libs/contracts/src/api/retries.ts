import { ALL_ROLES, type ApiRoute } from "../api-route";
import { retryCommands } from "../retries";

/** Retry policies and failures (4.4). */
export const retriesRoutes = [
  {
    operationId: "retriesPutPolicy",
    tag: "Retries",
    method: "put",
    path: "/intents/{intent_id}/retry-policy",
    command: retryCommands.putPolicy,
    body: "body",
    ifMatch: "optional",
    access: { roles: ALL_ROLES },
    summary: "Set or replace the retry policy (omitted fields take their defaults)",
  },
  {
    operationId: "retriesGetPolicy",
    tag: "Retries",
    method: "get",
    path: "/intents/{intent_id}/retry-policy",
    command: retryCommands.getPolicy,
    access: { roles: ALL_ROLES },
    summary: "Read the retry policy (404 when none is set)",
  },
  {
    operationId: "retriesRecordFailure",
    tag: "Retries",
    method: "post",
    path: "/intents/{intent_id}/failures",
    command: retryCommands.recordFailure,
    body: "body",
    ifMatch: "optional",
    status: 201,
    access: { roles: ALL_ROLES, actingAgentField: "agent_id" },
    summary: "Record a failed attempt; schedules the retry or hands over to the fallback agent",
  },
  {
    operationId: "retriesListFailures",
    tag: "Retries",
    method: "get",
    path: "/intents/{intent_id}/failures",
    command: retryCommands.listFailures,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "Failure history, oldest first",
  },
] as const satisfies readonly ApiRoute[];
