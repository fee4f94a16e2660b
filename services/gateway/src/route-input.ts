import { errors, Uuid, type ApiRoute, type NotFoundResource } from "@intentmesh/contracts";
import type { NextFunction, Request, Response } from "express";
import { parseIfMatch } from "./http";

/** Path ids that must be UUIDs, by parameter name (the resource a wrong one does not find): the catalogue's names and the SSE routes' own. */
export const UUID_PARAMS: Readonly<Record<string, NotFoundResource>> = {
  intent_id: "intent",
  lease_id: "lease",
  portfolio_id: "portfolio",
  attachment_id: "attachment",
  task_id: "task",
  approval_id: "approval",
  channel_id: "channel",
  message_id: "message",
  entry_id: "acl_entry",
  request_id: "access_request",
  vault_id: "vault",
  credential_id: "credential",
  grant_id: "grant",
  id: "intent",
  portfolioId: "portfolio",
  channelId: "channel",
};

/** Lower-case ids that Uuid (zod's uuid()) accepts as they are: the same versions and variants. */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * A path id that is not a UUID names nothing that can exist: 404, not a validation error. A UUID
 * in another letter case is the same id: it goes on in its one canonical (lower-case) spelling,
 * so an intent has one subject and one stream whichever way a client writes its id.
 */
export function canonicalUuidParam(resource: NotFoundResource, value: string): string {
  // Most ids arrive as the server wrote them: lower case, a UUID the schema takes unchanged.
  if (CANONICAL_UUID.test(value)) return value;
  const parsed = Uuid.safeParse(value);
  if (!parsed.success) throw errors.notFound(resource, value);
  return parsed.data;
}

/** canonicalUuidParam as an express param callback (router.param). */
export const requireUuidParam = (resource: NotFoundResource) => (req: Request, _res: Response, next: NextFunction, value: string, name: string) => {
  const canonical = canonicalUuidParam(resource, value);
  if (canonical !== value) req.params[name] = canonical;
  next();
};

/** Express path of a route: the catalogue's `{name}` parameters as `:name`. */
export const expressPath = (route: Pick<ApiRoute, "path">) => route.path.replace(/\{(\w+)\}/g, ":$1");

/**
 * What a route reads of a request: an express Request is one (REST), and so is a tool call of the
 * MCP endpoint (mcp.ts), which runs the same route the same way.
 */
export interface RouteRequest {
  /** Path parameters by name, as text (UUID ones already in their canonical spelling). */
  params: Record<string, string>;
  /** The query string, as express's simple parser gives it (text, or lists of text). */
  query: unknown;
  /** The JSON body; {} when absent. */
  body: unknown;
  /** A request header (case-insensitive); undefined when absent. */
  get(name: string): string | undefined;
}

/**
 * A request as its route's command input, as the route declares it (libs/contracts/src/api-route.ts):
 * path parameters under their names (or inside `query`), the body, the query string, If-Match,
 * named headers and constants. Nothing else of the request reaches the service.
 */
export function commandInput(route: ApiRoute, req: RouteRequest): Record<string, unknown> {
  const input: Record<string, unknown> = { ...route.constants };
  const params = Object.fromEntries(Object.entries(req.params).map(([name, value]) => [name, String(value)]));
  if (route.query === "query+path") input.query = { ...(req.query as Record<string, unknown>), ...params };
  else {
    Object.assign(input, params);
    if (route.query === "query") input.query = req.query;
  }
  if (route.body) {
    // A present body is what the operation documents or a 400; only an absent one reads as {}
    // (requireJsonBody). JSON null is not an absent body.
    if (req.body === null) {
      throw errors.validation("the request body is JSON null: send the body this operation documents (or no body, where it needs none)", [
        { path: route.body, message: "expected the documented body, received null", code: "invalid_type" },
      ]);
    }
    const body = req.body as Record<string, unknown>;
    if (route.liftFromBody?.length && isPlainObject(body)) {
      const rest = { ...body };
      for (const field of route.liftFromBody) {
        input[field] = rest[field];
        delete rest[field];
      }
      input[route.body] = rest;
    } else input[route.body] = body;
  }
  if (route.ifMatch) input.if_match = parseIfMatch(req.get("if-match"));
  for (const [field, header] of Object.entries(route.headers ?? {})) {
    const value = req.get(header);
    input[field] = value === undefined || value === "" ? null : value;
  }
  return input;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
