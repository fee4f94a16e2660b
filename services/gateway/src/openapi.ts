import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import { COMMON_ROUTE_ERRORS, errorCatalogue, listErrors, routeErrors, routeResponse, z, type ApiRoute, type ErrorCode } from "@intentmesh/contracts";

/**
 * The OpenAPI document, generated from the same zod contracts the gateway and services validate
 * with, so the description cannot drift from the behaviour.
 */
/** The SSE streams the gateway serves (app.ts), described beside the REST routes. */
const SSE_STREAMS = [
  { resource: "intents", param: "intent_id", what: "an intent", tag: "Intents" },
  { resource: "portfolios", param: "portfolio_id", what: "a portfolio (its own log: membership, member status changes, aggregate status)", tag: "Portfolios" },
  { resource: "agents", param: "agent_id", what: "an agent (its own log: lifecycle, assignments, pending commands, warnings)", tag: "Agents" },
  { resource: "channels", param: "channel_id", what: "a channel (channel_message frames carrying the whole message; members only)", tag: "Channels" },
];

/** The error responses of an operation: its own codes and the common ones, one response per status naming every code. */
function errorResponses(codes: readonly ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...codes, ...COMMON_ROUTE_ERRORS])) {
    const status = errorCatalogue[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, list]) => [
      status,
      {
        description: list.map((code) => `${code}: ${errorCatalogue[code].title}`).join("; "),
        content: { "application/json": { schema: { allOf: [{ $ref: "#/components/schemas/Error" }, { type: "object", properties: { code: { type: "string", enum: list.sort() } } }] } } },
      },
    ]),
  );
}

const X_AGENT_ID = z.string().optional().openapi({ description: "The acting agent; a registered agent must be bound to the calling key" });

/**
 * The request body as a client sends it, derived from the command input the server validates:
 * the input's body field, with the fields the route lifts out of the body (POST /tasks names its
 * intent there) put back in it.
 */
export function documentedBody(route: ApiRoute, shape: Record<string, z.ZodType>): z.ZodType | undefined {
  if (!route.body) return undefined;
  const body = shape[route.body]!;
  if (!route.liftFromBody?.length) return body;
  return (body as z.ZodObject).safeExtend(Object.fromEntries(route.liftFromBody.map((field) => [field, shape[field]!])));
}

export function buildOpenApi(routes: readonly ApiRoute[], version: string) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "ApiKey", { type: "apiKey", in: "header", name: "X-API-Key" });
  const ErrorBody = registry.register(
    "Error",
    z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }).passthrough(),
  );
  // Every catalogued error as a response component (#/components/responses/<CODE>), so a client
  // generator knows each code, its status and title (libs/contracts/src/error-catalogue.ts).
  for (const error of listErrors()) {
    registry.registerComponent("responses", error.code, {
      description: `${error.status} ${error.code}: ${error.title}`,
      content: {
        "application/json": {
          schema: { $ref: "#/components/schemas/Error" },
          example: { code: error.code, message: error.title, details: {} },
        },
      },
    });
  }
  for (const route of routes) {
    const shape = (route.command.input as z.ZodObject).shape as Record<string, z.ZodType>;
    const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const body = documentedBody(route, shape);
    // Required exactly when the contract refuses an empty body: an absent body reads as {} (README).
    const bodyRequired = body !== undefined && !body.safeParse({}).success;
    const headers: Record<string, z.ZodType> = { "X-Agent-ID": X_AGENT_ID };
    if (route.ifMatch) {
      const ifMatch = z.string().openapi({ description: 'The version the change is based on: 3, "3" or W/"3"' });
      headers["If-Match"] = route.ifMatch === "required" ? ifMatch : ifMatch.optional();
    }
    for (const header of Object.values(route.headers ?? {})) headers[header.replace(/(^|-)(\w)/g, (_m, dash: string, c: string) => dash + c.toUpperCase())] = z.string().optional();
    registry.registerPath({
      operationId: route.operationId,
      tags: [route.tag],
      method: route.method,
      path: `/api/v1${route.path}`,
      summary: route.summary,
      description: `Runs \`${route.command.subject}\`. Open to ${route.access.roles.join(", ")} keys.`,
      security: [{ ApiKey: [] }],
      request: {
        params: params.length ? z.object(Object.fromEntries(params.map((p) => [p, z.string()]))) : undefined,
        query: route.query ? (shape.query as z.ZodObject | undefined) : undefined,
        body: body && route.method !== "get" ? { content: { "application/json": { schema: body } }, required: bodyRequired } : undefined,
        headers: z.object(headers),
      },
      responses: {
        [route.status ?? 200]: {
          description: route.etag ? "success; ETag carries the new version" : "success",
          content: { "application/json": { schema: routeResponse(route) } },
          ...(route.pageInHeaders
            ? {
                headers: {
                  "X-Next-Cursor": { description: `present while there are more: the \`${route.pageInHeaders.cursorParam}\` of the next page`, schema: { type: "string" } },
                  Link: { description: `present while there are more: \`<this request with ${route.pageInHeaders.cursorParam}=<cursor>>; rel="next"\` (RFC 8288)`, schema: { type: "string" } },
                },
              }
            : {}),
        },
        ...errorResponses(routeErrors(route)),
      },
    });
  }
  for (const stream of SSE_STREAMS) {
    const paths = [`/api/v1/subscribe/${stream.resource}/{${stream.param}}`, `/api/v1/${stream.resource}/{${stream.param}}/subscribe`];
    for (const [i, path] of paths.entries()) {
      registry.registerPath({
        method: "get",
        path,
        operationId: `subscribe${stream.resource[0]!.toUpperCase()}${stream.resource.slice(1)}${i ? "Alias" : ""}`,
        tags: [stream.tag],
        summary:
          `Server-sent events of ${stream.what} (event: <event_type>, id: <event id>, data: <event JSON>); Last-Event-ID resumes` +
          (i ? " (alias used by the OpenIntent clients)" : ""),
        security: [{ ApiKey: [] }],
        request: {
          params: z.object({ [stream.param]: z.string() }),
          headers: z.object({ "Last-Event-ID": z.string().optional().openapi({ description: "Resume after this event id" }), "X-Agent-ID": X_AGENT_ID }),
        },
        responses: {
          200: { description: "An endless stream of events", content: { "text/event-stream": { schema: z.string() } } },
          ...errorResponses(["INTENT_NOT_FOUND", "NOT_FOUND", "NOT_A_MEMBER", "CHANNEL_NOT_FOUND", "PORTFOLIO_NOT_FOUND", "AGENT_NOT_FOUND"]),
        },
      });
    }
  }
  registry.registerPath({
    method: "get",
    path: "/api/v1/subscribe/inbox",
    operationId: "subscribeInbox",
    tags: ["Governance"],
    summary:
      "Server-sent hints for operators' inboxes (event: inbox, data: {intent_id, cause}) each time an intent's suspension or approvals change, only about intents the key may read; no ids, no replay: read the inbox again on connecting (docs/console.md)",
    security: [{ ApiKey: [] }],
    request: { headers: z.object({ "X-Agent-ID": X_AGENT_ID }) },
    responses: {
      200: { description: "An endless stream of hints", content: { "text/event-stream": { schema: z.string() } } },
      ...errorResponses(["UNAUTHORIZED", "FORBIDDEN"]),
    },
  });
  // Federation between servers (docs/federation.md): the documents are anonymous (did:web resolution is an anonymous GET);
  // receive and callbacks need a peer's key (role federation), then an RFC 9421 signature.
  const signed = z.object({
    "Content-Digest": z.string().openapi({ description: "sha-256 of the body (RFC 9530)" }),
    "Idempotency-Key": z.string(),
    "Signature-Input": z.string().openapi({ description: 'fed=("@method" "@target-uri" "content-digest" "content-type" "idempotency-key");created;expires;nonce;keyid="did:web:…#key-1";alg="ed25519"' }),
    Signature: z.string().openapi({ description: "fed=:<base64 Ed25519 signature>:" }),
  });
  for (const [path, summary] of [
    ["/.well-known/openintent-federation.json", "Federation document: did:web, trust policy, visibility, peers, endpoints, public key (404 when federation is off)"],
    ["/.well-known/did.json", "did:web document whose Ed25519 key verifies this server's signatures"],
  ] as const) {
    registry.registerPath({ method: "get", path, summary, security: [], responses: { 200: { description: "JSON" }, 404: { description: "FEDERATION_DISABLED" } } });
  }
  for (const [path, summary] of [
    ["/api/v1/federation/receive", "Receive a signed dispatch envelope from another server: an X-API-Key of role federation (the key this server gave the peer), then an RFC 9421 signature by the sender's did:web"],
    ["/api/v1/federation/callbacks/{dispatch_id}", "Receive a signed callback (state change, completion, failure, budget warning) for a dispatch this server sent: a federation key, then the signature"],
  ] as const) {
    registry.registerPath({
      method: "post",
      path,
      summary,
      security: [{ ApiKey: [] }],
      request: { headers: signed, ...(path.includes("{") ? { params: z.object({ dispatch_id: z.string() }) } : {}) },
      responses: {
        200: { description: "accepted" },
        401: { description: "UNAUTHORIZED (no key, or an unknown one: checked first) or SIGNATURE_INVALID", content: { "application/json": { schema: ErrorBody } } },
        403: { description: "FORBIDDEN (a key without the federation role), UNTRUSTED_SERVER or DELEGATION_DEPTH_EXHAUSTED", content: { "application/json": { schema: ErrorBody } } },
        404: { description: "FEDERATION_DISABLED, or (callbacks) DISPATCH_NOT_FOUND", content: { "application/json": { schema: ErrorBody } } },
        409: { description: "FEDERATION_LOOP or DISPATCH_IN_PROGRESS", content: { "application/json": { schema: ErrorBody } } },
      },
    });
  }
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: { title: "intentmesh", version, description: "Coordination server for humans and agents working on shared intents." },
    servers: [{ url: "/" }],
  });
  dropRegexFlags(document);
  return document;
}

/**
 * zod-to-openapi writes a regex with flags as `source/flags` (it strips the slashes of
 * RegExp#toString only at both ends), so `/^[^\s\p{Cc}]+$/u` became the pattern
 * `^[^\s\p{Cc}]+$/u`, which no value matches: every agent id field was unusable for a generated
 * client. The contracts use the `u` flag only, and JSON Schema 2020-12 patterns are Unicode
 * regular expressions already, so the flag is dropped.
 */
function dropRegexFlags(node: unknown): void {
  if (Array.isArray(node)) for (const item of node) dropRegexFlags(item);
  else if (node && typeof node === "object") {
    const object = node as Record<string, unknown>;
    if (typeof object.pattern === "string" && object.pattern.endsWith("$/u")) object.pattern = object.pattern.slice(0, -2);
    for (const value of Object.values(object)) dropRegexFlags(value);
  }
}
