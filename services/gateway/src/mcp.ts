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
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { apiRoutes, routeAdmits, type ApiRoute, type AppError, type Caller } from "@intentmesh/contracts";
import type { Logger } from "@intentmesh/telemetry";
import type { RouteCall, RouteReply, RouteRunner } from "./app";
import { toAppError } from "./http";
import { mcpTools, toolCall, type McpTool } from "./mcp-tools";

/** Where the gateway serves MCP (Streamable HTTP); docs/mcp.md. */
export const MCP_PATH = "/mcp";

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

export interface McpOptions {
  /** The route runner of an operation: the one REST uses (app.ts `handle`). */
  runner: (route: ApiRoute) => RouteRunner;
  logger: Logger;
  version: string;
}

/**
 * The MCP endpoint: POST /mcp, Streamable HTTP, stateless (each request is served on its own, so
 * any replica answers any request and nothing is held between them). The caller is the request's
 * verified API key and X-Agent-ID, as for REST (authentication runs before this handler).
 *
 * Every tool is an operation of the catalogue and every call runs that operation's runner; a
 * refusal is a tool result with isError and the error body ({code, message, details}) as its
 * structured content, so the model reads the catalogued code.
 */
export function mcpHandler(options: McpOptions) {
  const tools = mcpTools(apiRoutes);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const runners = new Map(tools.map((tool) => [tool.name, options.runner(tool.route)]));
  const routeOf = (operationId: string) => byName.get(operationId)!;

  const run = (caller: Caller, tool: McpTool, call: RouteCall): Promise<RouteReply> => runners.get(tool.name)!(caller, call);

  const serverFor = (caller: Caller) => {
    const server = new Server(
      { name: "intentmesh", version: options.version },
      {
        capabilities: { tools: {}, resources: {} },
        instructions:
          "intentmesh coordinates humans and agents on shared intents. Each tool is one REST operation (its description names it); path parameters, `query`, `body` and `if_match` are its arguments. A refusal carries the catalogued error code.",
      },
    );
    // The tools this key may call (the others would answer FORBIDDEN).
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: tools
        .filter((tool) => routeAdmits(tool.route, caller.roles))
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
      const match = RESOURCE_URI.exec(uri);
      if (!match) throw new McpError(RESOURCE_NOT_FOUND, `no resource ${uri.slice(0, 200)}: intentmesh://intents/{intent_id} and intentmesh://intents/{intent_id}/events are served`, { uri });
      const tool = routeOf(match[2] ? "intentsListEvents" : "intentsGet");
      let intentId: string;
      try {
        intentId = decodeURIComponent(match[1]!);
      } catch {
        throw new McpError(RESOURCE_NOT_FOUND, `no resource ${uri.slice(0, 200)}`, { uri });
      }
      try {
        const reply = await run(caller, tool, toolCall(tool, { intent_id: intentId }));
        return { contents: [{ uri, mimeType: "application/json", text: new TextDecoder().decode(reply.body) }] };
      } catch (error) {
        throw mcpErrorOf(refusalOf(error, options.logger, tool.name));
      }
    });
    return server;
  };

  return async (req: Request, res: Response) => {
    res.locals.route = MCP_PATH;
    const server = serverFor(req.caller!);
    // Stateless, answering plain JSON: a request is one exchange, with no session to keep.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
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

/** GET and DELETE /mcp: a stateless endpoint has no stream to open and no session to end. */
export function mcpMethodNotAllowed(_req: Request, res: Response) {
  res
    .status(405)
    .set("Allow", "POST")
    .json({ jsonrpc: "2.0", error: { code: ErrorCode.ConnectionClosed, message: "this MCP endpoint is stateless: send JSON-RPC requests with POST" }, id: null });
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
