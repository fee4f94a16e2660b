import { ALL_ROLES, type ApiRoute } from "../api-route";
import { tracingCommands } from "../tracing";

/**
 * RFC-0020 distributed tracing at the paths the official MCP server calls (mcp-server/src/client.ts
 * startTrace, getTrace, linkSpans; docs/tracing.md). Starting a trace and linking spans write to
 * the intent (write permission), reading needs read.
 */
export const tracingRoutes = [
  {
    operationId: "tracesStart",
    tag: "Tracing",
    method: "post",
    path: "/intents/{intent_id}/traces",
    command: tracingCommands.start,
    body: "body",
    status: 201,
    access: { roles: ALL_ROLES, claimsIdentity: ["started_by"] },
    summary: "Start a trace on an intent (its trace_id is what the events of the trace carry)",
  },
  {
    operationId: "tracesGet",
    tag: "Tracing",
    method: "get",
    path: "/intents/{intent_id}/traces/{trace_id}",
    command: tracingCommands.get,
    access: { roles: ALL_ROLES },
    summary: "A trace, its spans and the intent's events that carry its trace_id",
  },
  {
    operationId: "tracesLinkSpans",
    tag: "Tracing",
    method: "post",
    path: "/traces/{trace_id}/spans",
    command: tracingCommands.linkSpans,
    body: "body",
    access: { roles: ALL_ROLES, claimsIdentity: ["linked_by"] },
    summary: "Link spans to a trace (all or none; a span linked again with the same values is accepted)",
  },
] as const satisfies readonly ApiRoute[];
