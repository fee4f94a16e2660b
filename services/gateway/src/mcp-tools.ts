import { errors, Uuid, z, type ApiRoute } from "@intentmesh/contracts";
import { documentedBody } from "./openapi";
import type { RouteCall } from "./app";
import { UUID_PARAMS } from "./route-input";

/**
 * The MCP endpoint's tools, derived from the route catalogue (libs/contracts/src/api): one tool
 * per operation, named by its operationId, its input schema the JSON Schema of what the route
 * reads (path parameters, query, body, If-Match, named headers), generated from the same zod
 * contract the route validates with. A new route is a new tool; nothing here names an operation.
 *
 * A tool call becomes the route's request (toolCall) and runs through the same runner as REST
 * (app.ts `handle`): the same role gate, acting-agent binding, validation and service rules.
 */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchemaObject;
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  route: ApiRoute;
}

export interface JsonSchemaObject {
  type: "object";
  properties: Record<string, unknown>;
  required?: string[];
  additionalProperties: false;
  [key: string]: unknown;
}

/** The tool argument carrying If-Match. */
export const IF_MATCH_ARGUMENT = "if_match";

/** The path parameters of a route template, in order. */
export const pathParams = (route: Pick<ApiRoute, "path">): string[] => [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

/** What a path parameter is: a UUID one that is not a UUID names nothing (404, as in REST). */
const paramSchema = (name: string) =>
  UUID_PARAMS[name] ? { type: "string", format: "uuid", description: `The ${UUID_PARAMS[name]}'s id (the REST path's {${name}})` } : { type: "string", minLength: 1, description: `The REST path's {${name}}` };

export function toolOf(route: ApiRoute): McpTool {
  const shape = (route.command.input as z.ZodObject).shape as Record<string, z.ZodType>;
  const params = pathParams(route);
  const properties: Record<string, unknown> = {};
  const required: string[] = [...params];
  for (const name of params) properties[name] = paramSchema(name);
  if (route.query && shape.query) {
    const query = jsonSchemaOf(shape.query);
    // query+path: the path parameters travel in `query` for the service; the tool takes them once, at the top.
    const queryProperties = { ...((query.properties as Record<string, unknown> | undefined) ?? {}) };
    for (const name of params) delete queryProperties[name];
    query.properties = queryProperties;
    if (Array.isArray(query.required)) {
      query.required = (query.required as string[]).filter((name) => !params.includes(name));
      if (!(query.required as string[]).length) delete query.required;
    }
    properties.query = { ...query, description: "The query string's parameters (text values, as in a URL; numbers and booleans are written as text)" };
    if (Array.isArray(query.required) && query.required.length) required.push("query");
  }
  const body = documentedBody(route, shape);
  if (body && route.method !== "get") {
    properties.body = { ...jsonSchemaOf(body), description: "The JSON body of the REST operation" };
    if (!body.safeParse({}).success) required.push("body");
  }
  if (route.ifMatch) {
    properties[IF_MATCH_ARGUMENT] = {
      type: ["integer", "string"],
      description: `The version the change is based on (the resource's \`version\`; the REST If-Match header)${route.ifMatch === "required" ? ": required" : ""}`,
    };
    if (route.ifMatch === "required") required.push(IF_MATCH_ARGUMENT);
  }
  for (const [field, header] of Object.entries(route.headers ?? {})) {
    properties[field] = { type: "string", description: `The REST ${header} header` };
  }
  const inputSchema: JsonSchemaObject = { type: "object", properties, additionalProperties: false };
  if (required.length) inputSchema.required = required;
  const readOnly = route.method === "get";
  return {
    name: route.operationId,
    title: route.summary,
    description: `${route.summary}. REST: ${route.method.toUpperCase()} /api/v1${route.path}. Open to ${route.access.roles.join(", ")} keys.`,
    inputSchema,
    annotations: {
      title: route.summary,
      readOnlyHint: readOnly,
      destructiveHint: route.method === "delete",
      idempotentHint: readOnly || route.method === "put" || route.method === "delete",
      openWorldHint: route.tag === "Federation",
    },
    route,
  };
}

export const mcpTools = (routes: readonly ApiRoute[]): McpTool[] => routes.map(toolOf);

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A query value as a URL carries it: text (numbers and booleans written out), or a list of text. */
function queryText(name: string, value: unknown): string | string[] {
  const scalar = (item: unknown): string => {
    if (typeof item === "string") return item;
    if (typeof item === "number" || typeof item === "boolean") return String(item);
    throw errors.validation(`query.${name} must be text, a number or a boolean (or a list of them)`, [{ path: `query.${name}`, message: "is not a query value", code: "invalid_type" }]);
  };
  return Array.isArray(value) ? value.map(scalar) : scalar(value);
}

/**
 * A tool call's arguments as the route's request: what REST takes from the path, the query string,
 * the body and headers, the tool takes from its arguments. Only the shape of the call is checked
 * here (which arguments exist, path parameters as text); everything the operation means is the
 * route runner's, exactly as for REST. UUID path parameters are made canonical as the REST router
 * makes them (a value that is not a UUID names nothing: 404).
 */
export function toolCall(tool: McpTool, args: Record<string, unknown> | undefined): RouteCall {
  const given = args ?? {};
  const known = new Set(Object.keys(tool.inputSchema.properties));
  const unknown = Object.keys(given).filter((key) => !known.has(key));
  if (unknown.length) {
    throw errors.validation(`${tool.name} takes no argument ${unknown.map((key) => JSON.stringify(key.slice(0, 60))).join(", ")}: its arguments are ${[...known].join(", ") || "none"}`, unknown.map((key) => ({ path: key, message: "is not an argument of this tool", code: "unrecognized_keys" })));
  }
  const params: Record<string, string> = {};
  for (const name of pathParams(tool.route)) {
    const value = given[name];
    if (typeof value !== "string" || value === "") {
      throw errors.validation(`${name} is required: the ${name} of the REST path, as text`, [{ path: name, message: "expected a non-empty string", code: "invalid_type" }]);
    }
    const resource = UUID_PARAMS[name];
    if (resource) {
      const parsed = Uuid.safeParse(value);
      if (!parsed.success) throw errors.notFound(resource, value);
      params[name] = parsed.data;
    } else params[name] = value;
  }
  let query: Record<string, unknown> = {};
  if (given.query !== undefined) {
    if (!isPlainObject(given.query)) throw errors.validation("query must be an object of query parameters", [{ path: "query", message: "expected an object", code: "invalid_type" }]);
    query = Object.fromEntries(Object.entries(given.query).filter(([, value]) => value !== undefined && value !== null).map(([name, value]) => [name, queryText(name, value)]));
  }
  const headers = new Map<string, string>();
  const ifMatch = given[IF_MATCH_ARGUMENT];
  if (ifMatch !== undefined && ifMatch !== null) {
    if (typeof ifMatch !== "string" && typeof ifMatch !== "number") {
      throw errors.validation(`${IF_MATCH_ARGUMENT} must be the version, a number`, [{ path: IF_MATCH_ARGUMENT, message: "expected a number", code: "invalid_type" }]);
    }
    headers.set("if-match", String(ifMatch));
  }
  for (const [field, header] of Object.entries(tool.route.headers ?? {})) {
    const value = given[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== "string") throw errors.validation(`${field} must be text`, [{ path: field, message: "expected a string", code: "invalid_type" }]);
    headers.set(header.toLowerCase(), value);
  }
  const bodyAbsent = !("body" in given) || given.body === undefined;
  return {
    params,
    query,
    body: bodyAbsent ? {} : given.body,
    bodyAbsent,
    get: (name) => headers.get(name.toLowerCase()),
  };
}
