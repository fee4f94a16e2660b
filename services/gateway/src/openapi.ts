import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import { listErrors, z } from "@intentmesh/contracts";
import type { Route } from "./routes";

/**
 * The OpenAPI document, generated from the same zod contracts the gateway and services validate
 * with, so the description cannot drift from the behaviour.
 */
/** The SSE streams the gateway serves (app.ts), described beside the REST routes. */
const SSE_STREAMS = [
  { resource: "intents", param: "id", what: "an intent" },
  { resource: "portfolios", param: "portfolioId", what: "a portfolio (its own log: membership, member status changes, aggregate status)" },
  { resource: "agents", param: "agentId", what: "an agent (its own log: lifecycle, assignments, pending commands, warnings)" },
];

export function buildOpenApi(routes: Route[], version: string) {
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
    const params = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    const openPath = route.path.replace(/:(\w+)/g, "{$1}");
    const body = route.documentedBody ?? shape.body ?? shape.patches;
    registry.registerPath({
      method: route.method,
      path: `/api/v1${openPath}`,
      summary: route.summary,
      security: [{ ApiKey: [] }],
      request: {
        params: params.length ? z.object(Object.fromEntries(params.map((p) => [p, z.string()]))) : undefined,
        query: shape.query as z.ZodObject | undefined,
        body: body && route.method !== "get" ? { content: { "application/json": { schema: body } } } : undefined,
        headers: shape.if_match ? z.object({ "If-Match": z.string().optional().openapi({ description: 'version: 3, "3" or W/"3"' }) }) : undefined,
      },
      responses: {
        [route.status ?? 200]: { description: "success" },
        400: { description: "validation failure", content: { "application/json": { schema: ErrorBody } } },
        401: { description: "missing or invalid X-API-Key", content: { "application/json": { schema: ErrorBody } } },
        404: { description: "not found", content: { "application/json": { schema: ErrorBody } } },
        409: { description: "version mismatch, invalid transition or lease collision", content: { "application/json": { schema: ErrorBody } } },
      },
    });
  }
  for (const stream of SSE_STREAMS) {
    const paths = [`/api/v1/subscribe/${stream.resource}/{${stream.param}}`, `/api/v1/${stream.resource}/{${stream.param}}/subscribe`];
    for (const [i, path] of paths.entries()) {
      registry.registerPath({
        method: "get",
        path,
        summary:
          `Server-sent events of ${stream.what} (event: <event_type>, id: <event id>, data: <event JSON>); Last-Event-ID resumes` +
          (i ? " (alias used by the OpenIntent clients)" : ""),
        security: [{ ApiKey: [] }],
        request: { params: z.object({ [stream.param]: z.string() }) },
        responses: { 200: { description: "text/event-stream" } },
      });
    }
  }
  // Federation's public side (docs/federation.md): no API key; receive and callbacks carry an RFC 9421 signature instead.
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
    ["/api/v1/federation/receive", "Receive a signed dispatch envelope from another server (no API key: RFC 9421 signature by the sender's did:web)"],
    ["/api/v1/federation/callbacks/{dispatch_id}", "Receive a signed callback (state change, completion, failure, budget warning) for a dispatch this server sent"],
  ] as const) {
    registry.registerPath({
      method: "post",
      path,
      summary,
      security: [],
      request: { headers: signed, ...(path.includes("{") ? { params: z.object({ dispatch_id: z.string() }) } : {}) },
      responses: {
        200: { description: "accepted" },
        401: { description: "SIGNATURE_INVALID", content: { "application/json": { schema: ErrorBody } } },
        403: { description: "UNTRUSTED_SERVER or DELEGATION_DEPTH_EXHAUSTED", content: { "application/json": { schema: ErrorBody } } },
        409: { description: "FEDERATION_LOOP or DISPATCH_IN_PROGRESS", content: { "application/json": { schema: ErrorBody } } },
      },
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: { title: "intentmesh", version, description: "Coordination server for humans and agents working on shared intents." },
    servers: [{ url: "/" }],
  });
}
