import type { Request, Response } from "express";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  isInitializeRequest,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { randomUUID } from "node:crypto";
import { apiRoutes, appError, errors, routeAdmits, systemClock, type ApiRoute, type ApiTag, type AppError, type Caller, type Clock } from "@intentmesh/contracts";
import type { Logger } from "@intentmesh/telemetry";
import type { RouteCall, RouteReply, RouteRunner } from "./app";
import { toAppError } from "./http";
import type { EventFeed } from "./event-feed";
import { mcpTools, toolCall, type McpTool } from "./mcp-tools";

/** Where the gateway serves MCP (Streamable HTTP); docs/mcp.md. */
export const MCP_PATH = "/mcp";

/** A tool group: the route's tag, lower case, words joined by `-` (`access-control`). */
export const toolGroup = (tag: ApiTag): string => tag.toLowerCase().replace(/ /g, "-");
/** Every group, in catalogue order. */
export const TOOL_GROUPS: readonly string[] = [...new Set(apiRoutes.map((route) => toolGroup(route.tag)))];

/**
 * `?tools=intents,tasks,...` on the endpoint's URL: tools/list shows only those groups (a client
 * that works on intents need not read 145 schemas). Absent: every group. A group that does not
 * exist is 400, naming the groups. Calls are not narrowed: any tool the key may call still runs.
 */
export function toolGroups(value: unknown): ReadonlySet<string> | null {
  if (value === undefined || value === "") return null;
  const names = (Array.isArray(value) ? value : [value]).flatMap((item) => String(item).split(",")).map((name) => name.trim().toLowerCase()).filter(Boolean);
  const unknown = names.filter((name) => !TOOL_GROUPS.includes(name));
  if (unknown.length) {
    throw errors.validation(`tools names groups of tools: ${TOOL_GROUPS.join(", ")}; not ${unknown.map((name) => JSON.stringify(name.slice(0, 40))).join(", ")}`, [{ path: "tools", message: "is not a group of tools", code: "invalid_value" }]);
  }
  return new Set(names);
}

/** The resources: an intent and its event log, each read through the same route as REST. */
export const RESOURCE_TEMPLATES = [
  { uriTemplate: "intentmesh://intents/{intent_id}", name: "intent", title: "An intent", description: "The intent as GET /api/v1/intents/{intent_id} answers it", mimeType: "application/json", operationId: "intentsGet" },
  { uriTemplate: "intentmesh://intents/{intent_id}/events", name: "intent-events", title: "An intent's event log", description: "The intent's events as GET /api/v1/intents/{intent_id}/events answers them (the first page)", mimeType: "application/json", operationId: "intentsListEvents" },
] as const;
const RESOURCE_URI = /^intentmesh:\/\/intents\/([^/?#]+)(\/events)?$/;
/** resources/list names the intents the caller can read, newest first, up to this many (the rest by the intentsList tool). */
export const RESOURCE_LIST_LIMIT = 50;
/** MCP's code for a resource that does not exist (the specification's resources section). */
const RESOURCE_NOT_FOUND = -32002;

/** Where the gateway serves MCP with sessions, for clients that subscribe to resources (docs/mcp.md). */
export const MCP_LIVE_PATH = "/mcp/live";

export interface McpOptions {
  /** The route runner of an operation: the one REST uses (app.ts `handle`). */
  runner: (route: ApiRoute) => RouteRunner;
  logger: Logger;
  version: string;
  /** Live intent events of this replica (the SSE streams' feed): what resource subscriptions follow. */
  feed: EventFeed;
  sessions?: { max?: number; idleMs?: number; subscriptionsPerSession?: number };
  /** Idle sessions are measured on this clock. */
  clock?: Clock;
}

/** One session of the live endpoint, held by the replica that initialized it. */
interface LiveSession {
  id?: string;
  principal: string;
  agentId: string | null;
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** Subscribed resource URI -> how to stop following it. */
  subscriptions: Map<string, () => void>;
  /** Open GET streams: a session that is listening is not idle. */
  streams: number;
  /** When it last served a request or closed a stream (the clock's time). */
  lastSeen: number;
}

export const MCP_SESSION_DEFAULTS = { max: 1000, idleMs: 30 * 60_000, subscriptionsPerSession: 100 };

/**
 * The MCP endpoint: POST /mcp, Streamable HTTP, stateless (each request is served on its own, so
 * any replica answers any request and nothing is held between them). The caller is the request's
 * verified API key and X-Agent-ID, as for REST (authentication runs before this handler).
 *
 * Every tool is an operation of the catalogue and every call runs that operation's runner; a
 * refusal is a tool result with isError and the error body ({code, message, details}) as its
 * structured content, so the model reads the catalogued code.
 */
export function createMcp(options: McpOptions) {
  const limits = { ...MCP_SESSION_DEFAULTS, ...options.sessions };
  const clock = options.clock ?? systemClock;
  const sessions = new Map<string, LiveSession>();
  const tools = mcpTools(apiRoutes);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const runners = new Map(tools.map((tool) => [tool.name, options.runner(tool.route)]));
  const routeOf = (operationId: string) => byName.get(operationId)!;

  const run = (caller: Caller, tool: McpTool, call: RouteCall): Promise<RouteReply> => runners.get(tool.name)!(caller, call);

  const serverFor = (caller: Caller, groups: ReadonlySet<string> | null, live?: Pick<LiveSession, "subscriptions">) => {
    const server = new Server(
      { name: "intentmesh", version: options.version },
      {
        capabilities: { tools: {}, resources: live ? { subscribe: true } : {} },
        instructions:
          "intentmesh coordinates humans and agents on shared intents. Each tool is one REST operation (its description names it); path parameters, `query`, `body` and `if_match` are its arguments. A refusal carries the catalogued error code.",
      },
    );
    // The tools this key may call (the others would answer FORBIDDEN), of the groups the URL names (all when none).
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: tools
        .filter((tool) => routeAdmits(tool.route, caller.roles) && (!groups || groups.has(toolGroup(tool.route.tag))))
        .map(({ name, title, description, inputSchema, annotations }) => ({ name, title, description, inputSchema, annotations })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
      const tool = byName.get(request.params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `there is no tool ${JSON.stringify(request.params.name.slice(0, 100))}: tools/list names them`);
      const started = process.hrtime.bigint();
      // One line per tool call, as the access log has one per request: the operation, its outcome, the caller; never arguments.
      const logCall = (outcome: string, status: number) => {
        const level = status >= 500 ? "error" : "info";
        if (!options.logger.isLevelEnabled(level)) return;
        const ms = Math.round(Number(process.hrtime.bigint() - started) / 1e5) / 10;
        options.logger[level]({ tool: tool.name, route: tool.route.path, outcome, status, ms, principal: caller.principal, agent_id: caller.agent_id ?? undefined }, "mcp tool call");
      };
      try {
        const reply = await run(caller, tool, toolCall(tool, request.params.arguments));
        logCall("ok", reply.status);
        const text = new TextDecoder().decode(reply.body);
        const value: unknown = JSON.parse(text);
        return {
          content: [{ type: "text", text }],
          ...(value && typeof value === "object" && !Array.isArray(value) ? { structuredContent: value as Record<string, unknown> } : {}),
        };
      } catch (error) {
        const refusal = refusalOf(error, options.logger, tool.name);
        logCall(refusal.code, refusal.status);
        const body = refusal.toBody();
        return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
      }
    });
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
      resourceTemplates: RESOURCE_TEMPLATES.map(({ operationId: _operationId, ...template }) => template),
    }));
    server.setRequestHandler(ListResourcesRequestSchema, async () => {
      const tool = routeOf("intentsList");
      const reply = await run(caller, tool, toolCall(tool, { query: { limit: RESOURCE_LIST_LIMIT } })).catch((error: unknown) => {
        throw mcpErrorOf(refusalOf(error, options.logger, tool.name));
      });
      const page = JSON.parse(new TextDecoder().decode(reply.body)) as { intents?: { id: string; title: string; status: string }[] };
      return {
        resources: (page.intents ?? []).map((intent) => ({
          uri: `intentmesh://intents/${intent.id}`,
          name: intent.title,
          description: `intent ${intent.id} (${intent.status})`,
          mimeType: "application/json",
        })),
      };
    });
    server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
      const uri = request.params.uri;
      const target = resourceTarget(uri);
      try {
        const reply = await run(caller, target.tool, toolCall(target.tool, { intent_id: target.intentId }));
        return { contents: [{ uri, mimeType: "application/json", text: new TextDecoder().decode(reply.body) }] };
      } catch (error) {
        throw mcpErrorOf(refusalOf(error, options.logger, target.tool.name));
      }
    });
    if (live) {
      // A subscription follows the intent's live events (the feed the SSE streams read): any event of
      // the intent changes both its resources, and the client is told the URI, never the data; it
      // reads the resource again through the route, with the checks of the moment.
      server.setRequestHandler(SubscribeRequestSchema, async (request) => {
        const { uri } = request.params;
        const target = resourceTarget(uri);
        const call = (() => {
          try {
            return toolCall(target.tool, { intent_id: target.intentId });
          } catch (error) {
            throw mcpErrorOf(refusalOf(error, options.logger, target.tool.name));
          }
        })();
        // May the caller read it? The read's own route answers, exactly as a read would.
        await run(caller, target.tool, call).catch((error: unknown) => {
          throw mcpErrorOf(refusalOf(error, options.logger, target.tool.name));
        });
        if (live.subscriptions.has(uri)) return {};
        if (live.subscriptions.size >= limits.subscriptionsPerSession) {
          throw new McpError(ErrorCode.InvalidRequest, `a session follows at most ${limits.subscriptionsPerSession} resources: unsubscribe from one first`);
        }
        live.subscriptions.set(
          uri,
          options.feed.subscribe(call.params.intent_id!, () => {
            server.sendResourceUpdated({ uri }).catch((err: unknown) => options.logger.debug({ err }, "MCP resource update not delivered"));
          }),
        );
        return {};
      });
      server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
        live.subscriptions.get(request.params.uri)?.();
        live.subscriptions.delete(request.params.uri);
        return {};
      });
    }
    return server;
  };

  /** A resource URI as the read that serves it (intentsGet or intentsListEvents) and its intent id. */
  const resourceTarget = (uri: string) => {
    const match = RESOURCE_URI.exec(uri);
    let intentId: string | undefined;
    try {
      intentId = match ? decodeURIComponent(match[1]!) : undefined;
    } catch {
      intentId = undefined;
    }
    if (!match || !intentId) throw new McpError(RESOURCE_NOT_FOUND, `no resource ${uri.slice(0, 200)}: intentmesh://intents/{intent_id} and intentmesh://intents/{intent_id}/events are served`, { uri });
    return { tool: routeOf(match[2] ? "intentsListEvents" : "intentsGet"), intentId };
  };

  const stateless = async (req: Request, res: Response) => {
    res.locals.route = MCP_PATH;
    const server = serverFor(req.caller!, toolGroups(req.query.tools));
    // Stateless, answering plain JSON: a request is one exchange, with no session to keep.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };

  const endSession = (session: LiveSession) => {
    if (session.id) sessions.delete(session.id);
    for (const stop of session.subscriptions.values()) stop();
    session.subscriptions.clear();
  };
  const touch = (session: LiveSession) => {
    session.lastSeen = clock.now().getTime();
  };
  /**
   * Closes the sessions idle for idleMs (no request, no open stream), their subscriptions with
   * them: a client that vanished without DELETE holds nothing for long. Runs on a timer and
   * before each new session.
   */
  const sweepIdle = async () => {
    const cutoff = clock.now().getTime() - limits.idleMs;
    const idle = [...sessions.values()].filter((session) => session.streams === 0 && session.lastSeen <= cutoff);
    await Promise.all(idle.map((session) => session.transport.close()));
    return idle.length;
  };
  const sweeper = setInterval(() => void sweepIdle(), Math.min(limits.idleMs, 60_000));
  sweeper.unref();

  /**
   * The live endpoint (POST, GET and DELETE /mcp/live): MCP with sessions, for resource
   * subscriptions. A session is held by the replica that initialized it (a load balancer keeps a
   * session on one replica by its Mcp-Session-Id); an unknown session is 404, and the client
   * initializes again. Every request is authenticated as any other, and a session answers only
   * the key and acting agent that opened it.
   */
  const live = async (req: Request, res: Response) => {
    res.locals.route = MCP_LIVE_PATH;
    const caller = req.caller!;
    const sessionId = req.get("mcp-session-id");
    if (sessionId) {
      const session = sessions.get(sessionId);
      if (!session) {
        res.status(404).json({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.InvalidRequest, message: "no such MCP session on this server (it ended, or another replica holds it): initialize again" } });
        return;
      }
      if (session.principal !== caller.principal || session.agentId !== caller.agent_id) {
        throw errors.forbidden("this MCP session belongs to another key or acting agent");
      }
      if (req.method === "GET") {
        session.streams += 1;
        res.on("close", () => {
          session.streams -= 1;
          touch(session);
        });
      }
      touch(session);
      await session.transport.handleRequest(req, res, req.body);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(req.body)) {
      res.status(400).json({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.InvalidRequest, message: "send Mcp-Session-Id, or initialize a session first" } });
      return;
    }
    await sweepIdle();
    if (sessions.size >= limits.max) throw appError("SERVICE_UNAVAILABLE", `this gateway holds its most MCP sessions (${limits.max}); use the stateless ${MCP_PATH}, or try again`);
    const subscriptions = new Map<string, () => void>();
    const server = serverFor(caller, toolGroups(req.query.tools), { subscriptions });
    const session: LiveSession = {
      principal: caller.principal,
      agentId: caller.agent_id,
      server,
      subscriptions,
      streams: 0,
      lastSeen: clock.now().getTime(),
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          session.id = id;
          sessions.set(id, session);
          touch(session);
        },
      }),
    };
    session.transport.onclose = () => endSession(session);
    await server.connect(session.transport);
    await session.transport.handleRequest(req, res, req.body);
  };

  return {
    stateless,
    live,
    get sessionCount() {
      return sessions.size;
    },
    sweepIdle,
    close: async () => {
      clearInterval(sweeper);
      await Promise.all([...sessions.values()].map((session) => session.transport.close()));
    },
  };
}

/**
 * The body of POST /mcp is read as REST bodies are (jsonBody: strict JSON, the size limit, NUL,
 * lone surrogates, numbers that would not read back, depth), before any tool runs; its refusal
 * goes out as a JSON-RPC error (parse error) whose data is the catalogued error body, with the
 * catalogued HTTP status.
 */
export function mcpBody(read: (req: Request, res: Response, next: (error?: unknown) => void) => void) {
  return (req: Request, res: Response, next: (error?: unknown) => void) =>
    read(req, res, (error?: unknown) => {
      if (!error) return next();
      const refusal = toAppError(error);
      if (refusal.status >= 500) return next(error);
      res.status(refusal.status).json({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.ParseError, message: `${refusal.code}: ${refusal.message}`, data: refusal.toBody() } });
    });
}

/** GET and DELETE /mcp: a stateless endpoint has no stream to open and no session to end (the live endpoint has both). */
export function mcpMethodNotAllowed(_req: Request, res: Response) {
  res
    .status(405)
    .set("Allow", "POST")
    .json({ jsonrpc: "2.0", error: { code: ErrorCode.ConnectionClosed, message: `this MCP endpoint is stateless: send JSON-RPC requests with POST (${MCP_LIVE_PATH} keeps sessions, with resource subscriptions)` }, id: null });
}

function refusalOf(error: unknown, logger: Logger, tool: string): AppError {
  const refusal = toAppError(error);
  if (refusal.status >= 500) logger.error({ err: error, tool }, "MCP tool call failed");
  return refusal;
}

/** A refusal outside tools (resources): a JSON-RPC error whose data is the error body, its message led by the code. */
function mcpErrorOf(refusal: AppError): McpError {
  const code = refusal.status === 404 ? RESOURCE_NOT_FOUND : refusal.status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidParams;
  return new McpError(code, `${refusal.code}: ${refusal.message}`, refusal.toBody());
}
