import type { z } from "./zod";
import type { CommandDef } from "./command";
import type { ErrorCode } from "./error-catalogue";
import type { Role } from "./common";
import { accessErrorsOf } from "./intent-access";
export { ALL_ROLES, COORDINATOR_ROLES, FEDERATION_PEER_ROLE, HUMAN_ROLES } from "./caller";

/**
 * One operation of the REST API, as data: which bus command it runs, how the request becomes that
 * command's input, who may call it, what it answers. The gateway mounts these and does nothing
 * else with a request (services/gateway/src/app.ts); the OpenAPI document is rendered from them
 * (services/gateway/src/openapi.ts); docs/subjects.md lists which route runs which command.
 */
export interface ApiRoute {
  /** Unique, stable: the name a client generator gives the operation. */
  operationId: string;
  tag: ApiTag;
  method: "get" | "post" | "put" | "patch" | "delete";
  /**
   * OpenAPI path template under /api/v1. Each `{name}` is copied into the command's input under
   * that name (or into its `query` when `query` is "query+path").
   */
  path: string;
  /** The bus command it runs: its output is the route's success body, its errors the route's refusals. */
  command: CommandDef;
  /** The input field the JSON body goes to. */
  body?: "body" | "patches";
  /** Body fields moved to the top of the input (POST /tasks names its intent in the body); the document shows them in the body. */
  liftFromBody?: readonly string[];
  /** `query`: the query string is the input's `query`; `query+path`: the path parameters join it there. */
  query?: "query" | "query+path";
  /** The If-Match header, parsed, is the input's `if_match` (null when absent); `required`: the service answers 428 without it. */
  ifMatch?: "required" | "optional";
  /** Input fields read from a header: input field name -> header name (absent or empty is null). */
  headers?: Readonly<Record<string, string>>;
  /** Input fields every request of this route carries. */
  constants?: Readonly<Record<string, unknown>>;
  /** HTTP status of a success; 200 when absent. */
  status?: number;
  /** The result's version goes out as ETag. */
  etag?: boolean;
  /**
   * The command answers a page (`{<items>, next_cursor, has_more}`, its output) and the client
   * gets the bare list (a JSON array, as the official clients iterate it) with the paging in
   * headers: `X-Next-Cursor: <next_cursor>` and `Link: <path?...&<cursorParam>=<next_cursor>>;
   * rel="next"` while there is more (docs/channels.md). The body's schema is the page's list field.
   */
  pageInHeaders?: { items: string; cursorParam: string };
  /** How long the gateway waits for the service when longer than the default (federation dispatch). */
  busTimeoutMs?: number;
  access: RouteAccess;
  /**
   * Only where this operation answers fewer codes than its command (the command also serves
   * services, or other routes): the codes it answers besides COMMON_ROUTE_ERRORS, each one of
   * the command's. Absent: the command's `errors`.
   */
  errors?: readonly ErrorCode[];
  /**
   * Only where this operation answers one branch of its command's output (memory's query answers a
   * page or a bare list, chosen by the route's constants). Absent: the command's `output`.
   */
  response?: z.ZodType;
  summary: string;
}

/**
 * Who may call a route. The gateway enforces all of it before the command is sent (403 FORBIDDEN
 * naming the roles, 403 AGENT_NOT_BOUND / AGENT_ID_RESERVED for an acting agent of another key);
 * the service then sees only the caller the gateway verified and applies its own rules on top
 * (ownership, membership, namespace permissions).
 */
export interface RouteAccess {
  /** API key roles that may call the route at all. */
  roles: readonly Role[];
  /** The body field, if any, that names the acting agent: bound to the calling key like X-Agent-ID. */
  actingAgentField?: "agent_id" | "sender" | "coordinator_id";
  /** Body fields naming who did something: free labels, but a registered agent's name must be the caller's. */
  claimsIdentity?: readonly ("actor" | "created_by" | "started_by" | "linked_by" | "set_by")[];
  /** Registration: an X-Agent-ID naming the agent being registered is not bound yet. */
  registersAgent?: boolean;
}

export type ApiTag =
  | "Intents"
  | "Intent graphs"
  | "Coordinators"
  | "Escalations"
  | "Leases"
  | "Agents"
  | "Attachments"
  | "Retries"
  | "Portfolios"
  | "Costs"
  | "Tasks"
  | "Governance"
  | "Memory"
  | "Channels"
  | "Access control"
  | "Federation"
  | "Vaults"
  | "Identity"
  | "Verifiable logs"
  | "Triggers"
  | "Plans"
  | "Workflows"
  | "Tracing";

/** Gateway-side wait for a federation dispatch: the service's 10-second outbound deadline plus its own bus round trips. */
export const FEDERATION_BUS_TIMEOUT_MS = 20_000;

/** What any operation may answer: the request as a whole, the key, the bus and the process. */
export const COMMON_ROUTE_ERRORS: readonly ErrorCode[] = [
  "VALIDATION_FAILED",
  "INVALID_JSON",
  "INVALID_UTF8",
  "UNSUPPORTED_ENCODING",
  "UNSUPPORTED_MEDIA_TYPE",
  "NUMBER_NOT_REPRESENTABLE",
  "NUL_CHARACTER",
  "LONE_SURROGATE",
  "JSON_TOO_DEEP",
  "INVALID_IF_MATCH",
  "BAD_REQUEST",
  "PAYLOAD_TOO_LARGE",
  "VALUE_TOO_LARGE",
  "VALUE_NOT_STORABLE",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "AGENT_NOT_BOUND",
  "AGENT_ID_RESERVED",
  "REPLY_TOO_LARGE",
  "SERVICE_UNAVAILABLE",
  "INTERNAL_ERROR",
];

/** The role gate, the only one: whether a key with these roles may call the route (the gateway refuses the others with 403). */
export const routeAdmits = (route: ApiRoute, roles: readonly Role[]): boolean => route.access.roles.some((role) => roles.includes(role));

/**
 * The codes an operation answers besides COMMON_ROUTE_ERRORS: its own narrowing, else its
 * command's; and INTENT_ACCESS_DENIED when its command needs a permission of the intent
 * (intent-access.ts declares which, once, for every command).
 */
export const routeErrors = (route: ApiRoute): readonly ErrorCode[] => [...(route.errors ?? route.command.errors), ...accessErrorsOf(route.command)];

/** The schema of an operation's success body: its own narrowing, else its command's output (of which only the list, when the paging goes into headers). */
export const routeResponse = (route: ApiRoute): z.ZodType =>
  route.response ?? (route.pageInHeaders ? ((route.command.output as z.ZodObject).shape[route.pageInHeaders.items] as z.ZodType) : route.command.output);
