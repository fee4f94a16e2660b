import { appError } from "@intentmesh/contracts";
import http from "node:http";
import express, { type NextFunction, type Request, type Response } from "express";
import swaggerUi from "swagger-ui-express";
import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { AgentId, ALL_ROLES, AppError, CLUSTER_SERVICES, COMMON_ROUTE_ERRORS, apiRoutes, routeAdmits, routeErrors, routeResponse, FEDERATION_BUS_TIMEOUT_MS, type ApiRoute, type NotFoundResource, channelStream, type Message, errors, z, governanceCommands, healthCommand, portfoliosCommands, registryCommands, agentSubjectToken, streams, type Caller } from "@intentmesh/contracts";
import { BusClient, ensureStream, validationError, type Bus, type RawReply } from "@intentmesh/bus";
import { METRICS_CONTENT_TYPE, StartupError, metrics, metricsText, requestIdFrom, withRequestId, type Logger } from "@intentmesh/telemetry";
import type { ApiKeys } from "./api-keys";
import { errorHandler, etagOf, jsonBody, refuseUnsafeParams, refuseUnsafeQuery } from "./http";
import { canonicalUuidParam, commandInput, expressPath, requireUuidParam, UUID_PARAMS, type RouteRequest } from "./route-input";
import { compileRouteTable } from "./route-table";
import { directDispatch, type DirectRoute, type Step } from "./direct-dispatch";
import { expressServerClasses } from "./express-classes";
import { AgentBindings } from "./agent-bindings";
import { buildOpenApi } from "./openapi";
import { discoveryDocument } from "./discovery";
import { EventFeed } from "./event-feed";
import { busEventSource, streamEvents, streamIntentEvents } from "./sse";
import { agentStreamFrame } from "./client-frames";
import { channelFrame, streamChannel } from "./channel-sse";
import { InboxFeed, streamInbox } from "./inbox-sse";
import { cors } from "./cors";
import { mountPublicFederationRoutes } from "./federation-public";
import { createMcp, MCP_LIVE_PATH, MCP_PATH, mcpBody, mcpMethodNotAllowed, type McpOptions } from "./mcp";
import { mountConsole } from "./console";

export const VERSION = "0.1.0";
export const API_PREFIXES = ["/api/v1", "/v1"];

export interface GatewayOptions {
  bus: Bus;
  keys: ApiKeys;
  logger: Logger;
  bodyLimit?: string;
  ssePingMs?: number;
  busTimeoutMs?: number;
  /** Federation is enabled in this cluster: the discovery document lists it. */
  federation?: boolean;
  /** Browser origins allowed by CORS (CORS_ORIGINS); none: CORS off. */
  corsOrigins?: string[];
  /** Where the console's built files are (default packages/console/dist). */
  consoleDir?: string;
  /**
   * TEST-ONLY: what the gateway does with the error codes its routes answer. `record` sees every
   * one; `strict` turns a code the route does not declare (libs/contracts/src/api) into a 500, so
   * a test that meets an undeclared code fails and the catalogue cannot drift from the services.
   */
  routeErrors?: { record?: (operationId: string, code: string) => void; strict?: boolean };
  /**
   * TEST-ONLY: every success body of a route with a `response` schema is parsed against it, and a
   * body that does not match becomes a 500 naming the first difference.
   */
  checkResponses?: boolean;
  /**
   * TEST-ONLY: every body a route accepted (a success) is given to this check with the route's
   * operationId; a problem it names becomes a 500. Test gateways check it against the OpenAPI
   * document's request schema, so a documented body cannot drift from what the server takes.
   */
  checkRequest?: (operationId: string, body: unknown) => string | undefined;
  /**
   * TEST-ONLY: false sends every request through express's router, the catalogue's routes too
   * (the direct path, directDispatch, is on by default): tests compare the two.
   */
  directRoutes?: boolean;
  /** Sessions of the live MCP endpoint (/mcp/live): how many per replica, when an idle one closes, subscriptions per session. */
  mcpSessions?: McpOptions["sessions"];
}

/** A request to one route, from REST or from an MCP tool call. */
export interface RouteCall extends RouteRequest {
  /** The body was absent (it reads as {}). */
  bodyAbsent: boolean;
  /**
   * The request's path and query (REST): a route with `pageInHeaders` answers the bare list and
   * puts its paging in headers built from it. Absent (MCP): the command's page as it is.
   */
  url?: string;
}

export interface RouteReply {
  status: number;
  body: Uint8Array;
  headers: Record<string, string>;
  /** The resource's version, where the service answered one (the ETag of a REST reply). */
  version?: number;
}

export type RouteRunner = (caller: Caller, call: RouteCall) => Promise<RouteReply>;

export interface Gateway {
  app: express.Express;
  feed: EventFeed;
  /** Live portfolio events (stream IM_PORTFOLIOS) for GET /subscribe/portfolios/{id}. */
  portfolioFeed: EventFeed;
  /** Live agent events (stream IM_REGISTRY) for GET /subscribe/agents/{id}. */
  agentFeed: EventFeed;
  listen(port: number, host?: string): Promise<http.Server>;
  stop(): Promise<void>;
}

export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const { bus, keys, logger } = options;
  const client = new BusClient(bus, options.busTimeoutMs ?? 5000);
  const slowClient = new BusClient(bus, Math.max(options.busTimeoutMs ?? 5000, FEDERATION_BUS_TIMEOUT_MS));
  const bindings = new AgentBindings(client);
  // A route that waits longer than the default (federation dispatch, a channel ask) gets a client with its own wait.
  const routeClients = new Map<number, BusClient>();
  const clientFor = (route: ApiRoute): BusClient => {
    if (!route.busTimeoutMs) return client;
    const wait = Math.max(options.busTimeoutMs ?? 5000, route.busTimeoutMs);
    let found = routeClients.get(wait);
    if (!found) routeClients.set(wait, (found = new BusClient(bus, wait)));
    return found;
  };
  await ensureStream(bus, streams.intents);
  const feed = new EventFeed(bus, streams.intents.name, streams.intents.subjects[0], 3, logger);
  await feed.start();
  await ensureStream(bus, streams.portfolios);
  const portfolioFeed = new EventFeed(bus, streams.portfolios.name, streams.portfolios.subjects[0], 3, logger);
  await portfolioFeed.start();
  await ensureStream(bus, streams.registry);
  const agentFeed = new EventFeed(bus, streams.registry.name, streams.registry.subjects[0], 3, logger, agentStreamFrame);
  await agentFeed.start();
  await ensureStream(bus, channelStream);
  const channelFeed = new EventFeed(bus, channelStream.name, channelStream.subjects[0], 3, logger, (event) => channelFrame(event as unknown as Message));
  await channelFeed.start();
  const inboxFeed = new InboxFeed(bus, logger);
  inboxFeed.start();

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  // What every request meets first; the catalogue's direct path (directDispatch) runs the same ones.
  const prefixSteps: Step[] = [assignRequestId, ...(options.corsOrigins?.length ? [cors(options.corsOrigins)] : []), traceRequests, accessLog(logger)];
  for (const step of prefixSteps) app.use(step);
  // The API's prefixes first: its requests, nearly all of the traffic, meet none of the layers of
  // the public pages below (each one more path match per request). Filled further down: the
  // peer servers' signed deliveries and /server/config, then every route of the catalogue.
  const apiPrefixed = express.Router();
  app.use(API_PREFIXES, apiPrefixed);

  // Public: the root's links, liveness, readiness, the API description and the discovery document carry no data.
  app.get("/", (_req, res) =>
    void res.json({
      name: "intentmesh",
      version: VERSION,
      api: API_PREFIXES[0],
      docs: "/docs",
      console: "/console/",
      openapi: "/openapi.json",
      discovery: "/.well-known/openintent.json",
      mcp: MCP_PATH,
      health: { live: "/healthz", ready: "/readyz" },
    }),
  );
  app.get("/healthz", (_req, res) => void res.json({ status: "ok" }));
  // Prometheus text (docs/operations.md); like /healthz it carries no data, and a NetworkPolicy keeps it in the cluster.
  app.get("/metrics", async (_req, res) => void res.type(METRICS_CONTENT_TYPE).send(await metricsText()));
  app.get("/readyz", async (_req, res) => {
    const report = await readiness(bus, client);
    res.status(report.ready ? 200 : 503).json(report);
  });
  const openapi = buildOpenApi(apiRoutes, VERSION);
  app.get("/openapi.json", (_req, res) => void res.json(openapi));
  app.use("/docs", swaggerUi.serve, swaggerUi.setup(openapi, { customSiteTitle: "intentmesh API" }));
  // The operator console's static files (public) and its GET /console/session (docs/console.md).
  mountConsole(app, keys, options.consoleDir);
  app.get("/.well-known/openintent.json", (_req, res) => void res.json(discoveryDocument(VERSION, { federation: options.federation })));
  // Federation's documents (anonymous: did:web resolution) and the signed requests of other servers (a federation key, then the signature).
  mountPublicFederationRoutes(app, apiPrefixed, client, slowClient, keys);
  // The official clients read the platform default human retry policy here, without a key (CLIENTS.md).
  const serverConfig = async (_req: Request, res: Response) => {
    const config = await client.request(governanceCommands.serverConfig, { principal: "anonymous", roles: [], actor: "anonymous", agent_id: null }, {});
    res.json(config);
  };
  app.get("/server/config", serverConfig);
  apiPrefixed.get("/server/config", serverConfig);

  const api = express.Router();
  const apiSteps: Step[] = [authenticate(keys), jsonBody(options.bodyLimit ?? "1mb"), requireJsonBody, refuseUnsafeQuery];
  for (const step of apiSteps) api.use(step);
  const uuidParams = UUID_PARAMS;

  for (const [name, resource] of Object.entries(uuidParams)) api.param(name, requireUuidParam(resource));
  /**
   * One operation run for a verified caller, whatever carried the request: REST (below) and the
   * MCP endpoint's tool calls (mcp.ts) both come here, so a rule is enforced in one place. Test
   * gateways record or police the codes it answers (GatewayOptions.routeErrors).
   */
  const handle = (route: ApiRoute): RouteRunner => {
    const run = runRoute(route);
    const declared = declaredErrors(route);
    const { record, strict } = options.routeErrors ?? {};
    if (!record && !strict) return run;
    return async (caller, call) => {
      try {
        return await run(caller, call);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        record?.(route.operationId, error.code);
        if (strict && !declared.has(error.code)) {
          logger.error({ operation: route.operationId, code: error.code }, "a route answered an error code its catalogue entry does not declare");
          throw appError("INTERNAL_ERROR", `${route.operationId} answered ${error.code}, which libs/contracts/src/api does not declare for it`);
        }
        throw error;
      }
    };
  };
  const runRoute =
    (route: ApiRoute): RouteRunner =>
    async (caller, call) => {
      assertRole(route, caller);
      refuseUnsafeParams(call);
      const input = commandInput(route, call);
      let reply: RawReply;
      try {
        await assertActingAgentsBound(bindings, keys, caller, call.body, route);
        if (route.access.registersAgent) assertAgentIdFree(keys, caller, call.body);
        // The service's JSON goes out as it came: the gateway neither parses nor re-encodes it.
        reply = await clientFor(route).requestRaw(route.command, caller, input as never);
      } catch (error) {
        throw invalidInputFirst(route, input, error);
      }
      const headers: Record<string, string> = {};
      const paged = route.pageInHeaders && call.url !== undefined;
      const body = paged ? pageInHeaders(route.pageInHeaders!, reply.body, call.url!, headers) : reply.body;
      if (options.checkResponses) assertDocumentedResponse(paged || !route.pageInHeaders ? routeResponse(route) : route.command.output, route, body);
      if (options.checkRequest && route.body && !call.bodyAbsent) {
        const problem = options.checkRequest(route.operationId, call.body);
        if (problem) throw appError("INTERNAL_ERROR", `the server accepted a body its OpenAPI document refuses: ${problem}`);
      }
      if (route.etag && reply.version !== undefined) headers.ETag = etagOf(reply.version);
      return { status: route.status ?? 200, body, headers, version: reply.version };
    };
  /** REST: the request as a route call, the reply as the response. */
  const rest = (route: ApiRoute) => {
    const run = handle(route);
    return async (req: Request, res: Response) => {
      // The route template names the request in the access log (never the raw path with its ids).
      res.locals.route = route.path;
      const call: RouteCall = {
        params: req.params as Record<string, string>,
        query: req.query,
        body: req.body,
        get: (name) => req.get(name),
        bodyAbsent: Boolean(res.locals.bodyAbsent),
        url: req.originalUrl,
      };
      sendReply(req, res, await run(req.caller!, call));
    };
  };
  const direct = new Map<ApiRoute, DirectRoute>();
  const expressRoutes = mountRoutes(api, apiRoutes, (route) => {
    const handler = rest(route);
    direct.set(route, { expressRoute: undefined, checkParams: paramChecks(route, uuidParams), handler });
    return handler;
  }, uuidParams);
  for (const [route, expressRoute] of expressRoutes) direct.get(route)!.expressRoute = expressRoute;
  // MCP (docs/mcp.md): the same key and roles, each tool an operation of the catalogue run by its REST runner.
  const mcp = createMcp({ runner: handle, logger, version: VERSION, feed, sessions: options.mcpSessions });
  app.post(MCP_PATH, authenticate(keys), mcpBody(jsonBody(options.bodyLimit ?? "1mb")), mcp.stateless);
  app.all(MCP_PATH, authenticate(keys), mcpMethodNotAllowed);
  app.post(MCP_LIVE_PATH, authenticate(keys), mcpBody(jsonBody(options.bodyLimit ?? "1mb")), mcp.live);
  app.get(MCP_LIVE_PATH, authenticate(keys), mcp.live);
  app.delete(MCP_LIVE_PATH, authenticate(keys), mcp.live);
  // SSE (4.10) at the spec's /subscribe/<kind>/{id} and at the paths the official clients call,
  // /<kind>/{id}/subscribe. The acting agent of a subscription is checked like any request's.
  const bound = async (req: Request, _res: Response, next: NextFunction) => {
    // A peer server's key (role federation) delivers signed requests; it does not follow streams.
    if (!req.caller!.roles.some((role) => ALL_ROLES.includes(role))) {
      throw errors.forbidden("event streams are open to admin, coordinator, operator and agent keys only", { required_roles: ALL_ROLES, roles: req.caller!.roles });
    }
    refuseUnsafeParams(req);
    await assertActingAgentsBound(bindings, keys, req.caller!, req.body);
    next();
  };
  const pingMs = options.ssePingMs ?? 15_000;
  api.get(["/subscribe/intents/:id", "/intents/:id/subscribe"], bound, (req, res) => streamIntentEvents(req, res, { bus: client, feed, pingMs, logger }));
  api.get(["/subscribe/portfolios/:portfolioId", "/portfolios/:portfolioId/subscribe"], bound, (req, res) => {
    const portfolioId = String(req.params.portfolioId);
    const source = busEventSource(client, req.caller!, portfoliosCommands.listEvents, portfolioId, { portfolio_id: portfolioId });
    return streamEvents(req, res, { kind: "portfolios", feed: portfolioFeed, source, pingMs, logger });
  });
  api.get(["/subscribe/agents/:agentId", "/agents/:agentId/subscribe"], bound, (req, res) => {
    const agentId = String(req.params.agentId);
    // The feed dispatches on the subject token, the escaped form of the agent id.
    const source = busEventSource(client, req.caller!, registryCommands.listEvents, agentSubjectToken(agentId), { agent_id: agentId });
    return streamEvents(req, res, { kind: "agents", feed: agentFeed, source, pingMs, logger });
  });
  // The inbox (docs/console.md): hints about the intents whose waiting items changed, each only
  // to subscribers who may read that intent. Open to every role the other streams are: an agent's
  // key sees the inbox (without the answers) in the console too.
  api.get("/subscribe/inbox", bound, (req, res) => streamInbox(req, res, { bus: client, feed: inboxFeed, pingMs, logger }));
  api.get(["/subscribe/channels/:channelId", "/channels/:channelId/subscribe"], bound, (req, res) => streamChannel(req, res, { bus: client, feed: channelFeed, intentFeed: feed, pingMs, logger }));
  api.use((req) => {
    throw errors.routeNotFound(req.method, req.originalUrl.split("?")[0]!);
  });
  apiPrefixed.use(api);
  app.use((req) => {
    throw errors.routeNotFound(req.method, req.originalUrl.split("?")[0]!);
  });
  const onError = errorHandler(logger);
  app.use(onError);
  // The catalogue's routes served in front of express (issue 32): the same steps, without the
  // router's matching. The paths apiPrefixed serves before the catalogue stay express's: a route
  // added to apiPrefixed above `api` (mountPublicFederationRoutes, /server/config) belongs in `front`.
  const table = compileRouteTable(
    API_PREFIXES,
    apiRoutes.map((route) => ({ method: route.method, path: route.path, value: direct.get(route)! })),
    ["/federation/receive", "/federation/callbacks/{dispatchId}", "/server/config"],
  );
  const dispatch = directDispatch(app, table, [...prefixSteps, ...apiSteps], onError);
  const serve: http.RequestListener = options.directRoutes === false ? app : (req, res) => void (dispatch(req, res) || app(req, res));

  const servers: http.Server[] = [];
  return {
    app,
    feed,
    portfolioFeed,
    agentFeed,
    listen: (port, host = "0.0.0.0") =>
      new Promise((resolve, reject) => {
        const server = http.createServer(expressServerClasses(app), serve);
        server.keepAliveTimeout = 65_000;
        server.once("error", (error: NodeJS.ErrnoException) => {
          if (error.code === "EADDRINUSE") reject(new StartupError("PORT", `port ${port} on ${host} is already in use: stop what holds it, or set PORT (and HOST) to a free address`));
          else if (error.code === "EACCES") reject(new StartupError("PORT", `port ${port} on ${host} may not be opened by this user: set PORT above 1023`));
          else if (error.code === "EADDRNOTAVAIL") reject(new StartupError("HOST", `${host} is not an address of this machine: set HOST to one (0.0.0.0 for all)`));
          else reject(error);
        });
        server.listen(port, host, () => resolve(server));
        servers.push(server);
      }),
    stop: async () => {
      await mcp.close();
      await feed.stop();
      await portfolioFeed.stop();
      await agentFeed.stop();
      await channelFeed.stop();
      inboxFeed.stop();
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
    },
  };
}

/**
 * A route's reply as the response: the service's bytes as they came, application/json with its
 * length. What express's send would add matters only to conditional requests (a 304 when the
 * ETag matches) and to bodiless statuses, which go through it; the rest is written directly.
 */
function sendReply(req: Request, res: Response, reply: RouteReply): void {
  const body = Buffer.from(reply.body.buffer, reply.body.byteOffset, reply.body.byteLength);
  const { headers } = req;
  if (headers["if-none-match"] !== undefined || headers["if-modified-since"] !== undefined || reply.status === 204 || reply.status === 304) {
    res.set(reply.headers);
    res.status(reply.status).type("application/json").send(body);
    return;
  }
  for (const name in reply.headers) res.setHeader(name, reply.headers[name]!);
  res.statusCode = reply.status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", body.byteLength);
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

/**
 * Opens a server span per request, continuing a caller's `traceparent` when one is sent. The bus
 * client injects the active context into NATS headers, so the trace crosses into the services.
 */
function traceRequests(req: Request, res: Response, next: NextFunction) {
  const parent = propagation.extract(context.active(), req.headers);
  // Named by the route template once it is known (never by the raw path with its ids).
  const span = trace.getTracer("intentmesh.gateway").startSpan(`${req.method}`, { kind: SpanKind.SERVER }, parent);
  res.on("finish", () => {
    const route = (res.locals.route as string | undefined) ?? (req.route ? String(req.route.path) : undefined);
    span.updateName(route ? `${req.method} ${route}` : req.method);
    if (route) span.setAttribute("http.route", route);
    span.setAttribute("http.response.status_code", res.statusCode);
    span.end();
  });
  context.with(trace.setSpan(parent, span), next);
}

/**
 * One line per request: method, path, status, duration; never headers (they hold the key).
 * Successful requests log at debug, so a busy server at info logs only what needs a look.
 */
/**
 * One request id per request: the client's X-Request-Id when it is acceptable, else a new UUID.
 * It is answered in X-Request-Id (and in error bodies), and opened as the current request id, so
 * every log line of the request, here and in the services the bus carries it to, bears it.
 */
function assignRequestId(req: Request, res: Response, next: NextFunction) {
  const requestId = requestIdFrom(req.get("x-request-id"));
  res.set("X-Request-Id", requestId);
  withRequestId(requestId, next);
}

/**
 * One line per request at info (error for a 5xx): method, route template, status, duration, the
 * caller's principal and acting agent, and the request id. Never a key.
 */
function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const status = res.statusCode;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const route = (res.locals.route as string | undefined) ?? (req.route ? String(req.route.path) : "unmatched");
      metrics.httpRequests.inc({ method: req.method, route, status: String(status) });
      metrics.httpDuration.observe({ method: req.method, route }, ms / 1000);
      const level = status >= 500 ? "error" : "info";
      if (!logger.isLevelEnabled(level)) return;
      const line = {
        request_id: res.get("X-Request-Id"),
        method: req.method,
        route,
        status,
        ms: Math.round(ms * 10) / 10,
        principal: req.caller?.principal,
        agent_id: req.caller?.agent_id ?? undefined,
      };
      logger[level](line, "request");
    });
    next();
  };
}

/** X-API-Key is required; X-Agent-ID, when sent, names the acting agent. */
function authenticate(keys: ApiKeys) {
  return (req: Request, _res: Response, next: NextFunction) => {
    const identity = keys.identify(req.get("x-api-key"));
    if (!identity) throw errors.unauthorized(req.get("x-api-key") ? "the X-API-Key is not valid" : "the X-API-Key header is required");
    const agentHeader = req.get("x-agent-id");
    if (agentHeader !== undefined && !AgentId.safeParse(agentHeader).success) {
      throw errors.validation("X-Agent-ID must be an agent id: 1 to 200 characters without whitespace, not *, . or .., not beginning with role:", [
        { path: "X-Agent-ID", message: "is not an agent id", code: "custom" },
      ]);
    }
    const caller: Caller = {
      principal: identity.principal,
      roles: identity.roles,
      actor: agentHeader || identity.principal,
      agent_id: agentHeader || null,
    };
    req.caller = caller;
    next();
  };
}

/**
 * Routes grouped by their first path segment, one router per group: express tries a request
 * against a handful of prefixes and then only its group's routes, instead of every route of the
 * API in turn (measurable on the hottest endpoints). Path parameters keep their checks. Returns
 * each route's express Route (the direct path sets it as req.route, as express does).
 */
export function mountRoutes(api: express.Router, all: readonly ApiRoute[], handle: (route: ApiRoute) => express.RequestHandler, uuidParams: Record<string, NotFoundResource>): Map<ApiRoute, unknown> {
  const groups = new Map<string, ApiRoute[]>();
  for (const route of all) {
    const prefix = `/${route.path.split("/")[1]}`;
    groups.set(prefix, [...(groups.get(prefix) ?? []), route]);
  }
  const routes = new Map<ApiRoute, unknown>();
  for (const [prefix, group] of groups) {
    const router = express.Router();
    for (const [name, resource] of Object.entries(uuidParams)) router.param(name, requireUuidParam(resource));
    for (const route of group) {
      const expressRoute = router.route(expressPath(route).slice(prefix.length) || "/");
      expressRoute[route.method](handle(route));
      routes.set(route, expressRoute);
    }
    api.use(prefix, router);
  }
  return routes;
}

/** The uuid checks of a route's path parameters, in path order: what its router's param callbacks do. */
function paramChecks(route: ApiRoute, uuidParams: Record<string, NotFoundResource>): (req: Request) => void {
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).filter((name) => Object.hasOwn(uuidParams, name));
  return (req) => {
    for (const name of names) req.params[name] = canonicalUuidParam(uuidParams[name]!, req.params[name] as string);
  };
}

/**
 * The acting agent of a request (X-Agent-ID, and the body field a route names as the acting
 * agent): a registered agent must be bound to the calling key; an unregistered id is the caller's
 * standalone label, unless it is another key's principal (that key's requests act under that
 * name). Admins and coordinators may act for any agent. The one exception: a registration whose
 * X-Agent-ID names the agent it registers (an agent registering itself is not bound yet).
 */
async function assertActingAgentsBound(bindings: AgentBindings, keys: ApiKeys, caller: Caller, requestBody: unknown, route?: ApiRoute): Promise<void> {
  const access = route?.access;
  const acting = new Set<string>();
  const body = requestBody as Record<string, unknown> | null | undefined;
  const registersItself = access?.registersAgent && caller.agent_id === body?.agent_id;
  if (caller.agent_id && !registersItself) acting.add(caller.agent_id);
  const fromBody = access?.actingAgentField ? body?.[access.actingAgentField] : undefined;
  if (typeof fromBody === "string" && fromBody) acting.add(fromBody);
  for (const agentId of acting) await bindings.assertMayActAs(agentId, caller, (name) => keys.hasPrincipal(name));
  for (const field of access?.claimsIdentity ?? []) {
    const name = body?.[field];
    if (typeof name === "string" && name && !acting.has(name) && name !== caller.principal) await bindings.assertNotAnothers(name, caller);
  }
}

/**
 * A route whose paging goes into headers (ApiRoute.pageInHeaders): the page's list is the body;
 * while there is more, X-Next-Cursor carries the cursor and Link rel="next" the same request with
 * the cursor parameter set to it (its other query parameters kept).
 */
function pageInHeaders(paging: NonNullable<ApiRoute["pageInHeaders"]>, reply: Uint8Array, url: string, headers: Record<string, string>): Uint8Array {
  const page = JSON.parse(new TextDecoder().decode(reply)) as Record<string, unknown> & { next_cursor?: string | null; has_more?: boolean };
  if (page.has_more && page.next_cursor) {
    const [path, search] = url.split("?", 2) as [string, string | undefined];
    const query = new URLSearchParams(search);
    query.set(paging.cursorParam, page.next_cursor);
    headers["X-Next-Cursor"] = page.next_cursor;
    headers.Link = `<${path}?${query.toString()}>; rel="next"`;
  }
  return new TextEncoder().encode(JSON.stringify(page[paging.items] ?? []));
}

/** Test gateways: the reply must be what the catalogue documents (the route's response, else its command's output). */
function assertDocumentedResponse(schema: z.ZodType, route: ApiRoute, body: Uint8Array): void {
  const checked = schema.safeParse(JSON.parse(new TextDecoder().decode(body)));
  if (checked.success) return;
  const issue = checked.error.issues[0]!;
  throw appError("INTERNAL_ERROR", `${route.operationId} answered a body that is not its documented response: ${issue.path.join(".") || "(body)"}: ${issue.message}`);
}

/** What a route may answer: its own codes, the common ones, and the 404 of each id in its path. */
function declaredErrors(route: ApiRoute): Set<string> {
  const notFound = [...route.path.matchAll(/\{(\w+)_id\}/g)].map((m) => `${m[1]!.toUpperCase()}_NOT_FOUND`);
  return new Set<string>([...routeErrors(route), ...COMMON_ROUTE_ERRORS, ...notFound]);
}

/** The route's roles (libs/contracts/src/api): a key with none of them is refused before anything is sent. */
function assertRole(route: ApiRoute, caller: Caller): void {
  if (routeAdmits(route, caller.roles)) return;
  throw errors.forbidden(`${route.method.toUpperCase()} ${route.path} is open to ${route.access.roles.join(", ")} keys only`, {
    required_roles: route.access.roles,
    roles: caller.roles,
  });
}

/**
 * The error a failed request answers. The service that runs a command validates its input with
 * the catalogue's schema (libs/bus/src/rpc.ts) before anything else, so the gateway does not
 * validate it again on the way (issue 32: once per request, not twice). Only when the request
 * failed does the gateway check it, so that invalid input is answered 400 whatever failed first
 * (another key's agent, a service down): the precedence of a check up front, without its cost on
 * every request that succeeds.
 */
function invalidInputFirst(route: ApiRoute, input: unknown, error: unknown): unknown {
  const parsed = route.command.input.safeParse(input);
  return parsed.success ? error : validationError(parsed.error);
}

/**
 * An agent id that is another key's principal would let its holder act as that key's requests
 * without X-Agent-ID do (they act under the principal's name): refused at registration.
 */
function assertAgentIdFree(keys: ApiKeys, caller: Caller, body: unknown): void {
  const agentId = (body as Record<string, unknown> | null | undefined)?.agent_id;
  if (typeof agentId === "string" && agentId !== caller.principal && keys.hasPrincipal(agentId)) {
    throw appError("AGENT_ID_RESERVED", `agent id ${agentId} is the name of another API key's principal; choose another id`, { agent_id: agentId });
  }
}

/** A body sent as something other than JSON is refused; an empty or absent body reads as {} (JSON null is not absent). */
function requireJsonBody(req: Request, res: Response, next: NextFunction) {
  if (req.body === undefined) {
    const length = Number(req.get("content-length") ?? 0);
    const chunked = req.get("transfer-encoding") !== undefined;
    if ((length > 0 || chunked) && !["GET", "HEAD", "DELETE"].includes(req.method)) {
      throw appError("UNSUPPORTED_MEDIA_TYPE", "send request bodies as application/json");
    }
    req.body = {};
    res.locals.bodyAbsent = true;
  }
  next();
}

/**
 * The gateway's readiness: its own dependency is NATS. One backing service down leaves it ready
 * (that service's routes answer 503 SERVICE_UNAVAILABLE, the others work) and is listed under
 * `degraded`; with NATS down, or no service answering at all (PostgreSQL down takes every service
 * with it), there is nothing it can serve and it is not ready.
 */
async function readiness(bus: Bus, client: BusClient) {
  const nats = !bus.nc.isClosed() && !bus.nc.isDraining();
  const services: Record<string, unknown> = {};
  const degraded: string[] = [];
  await Promise.all(
    CLUSTER_SERVICES.map(async (service) => {
      try {
        services[service] = await client.request(healthCommand(service), { principal: "gateway", roles: ["admin"], actor: "gateway", agent_id: null }, {});
      } catch (error) {
        degraded.push(service);
        services[service] = { error: error instanceof AppError ? error.message : "unreachable" };
      }
    }),
  );
  const ready = nats && degraded.length < CLUSTER_SERVICES.length;
  return { ready, nats: nats ? "ok" : "disconnected", degraded: degraded.sort(), services };
}
