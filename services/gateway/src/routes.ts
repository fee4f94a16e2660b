import type { Request } from "express";
import { intentsCommands as c, type CommandDef, type z } from "@intentmesh/contracts";
import { id, ifMatch } from "./route-params";
import { registryRoutes } from "./routes-registry";
import { attachmentRoutes } from "./routes-attachments";
import { retryRoutes } from "./routes-retries";
import { portfolioRoutes } from "./routes-portfolios";
import { costRoutes } from "./routes-costs";
import { taskRoutes } from "./routes-tasks";
import { memoryRoutes } from "./routes-memory";
import { federationRoutes } from "./routes-federation";
import { governanceRoutes } from "./routes-governance";
import { channelRoutes } from "./routes-channels";

/**
 * The REST surface: each route names one bus command and how to build its input from the
 * request. The gateway does nothing else with a request: no business rule lives here.
 */
export interface Route {
  method: "get" | "post" | "put" | "patch" | "delete";
  path: string;
  command: CommandDef<z.ZodType>;
  input: (req: Request) => unknown;
  /** HTTP status of a success; 200 when absent. */
  status?: number;
  /** Sends the result's version as ETag (intents). */
  etag?: boolean;
  /** The body field, if any, that names the acting agent: it must be bound to the calling key, like X-Agent-ID. */
  actingAgentField?: "agent_id" | "sender";
  /**
   * Body fields that say who did something (`actor`, `created_by`): free labels for people, but
   * when one names a registered agent, that agent must be bound to the calling key.
   */
  claimsIdentity?: ("actor" | "created_by")[];
  /** The body as the client sends it, for the OpenAPI document, when the route reshapes it into the command's input. */
  documentedBody?: z.ZodType;
  /** Registration: an X-Agent-ID naming the agent it registers is not bound yet, and is not checked. */
  registersAgent?: boolean;
  /** How long the gateway waits for the service's answer when longer than the default (federation dispatch). */
  busTimeoutMs?: number;
  summary: string;
}


const renewLease = (method: "post" | "patch", path: string, summary: string): Route => ({
  method,
  path,
  command: c.renewLease,
  input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), lease_id: String(req.params.leaseId), body: req.body }),
  summary,
});

const intentRoutes: Route[] = [
  { method: "post", path: "/intents", command: c.create, input: (req) => ({ body: req.body }), status: 201, etag: true, claimsIdentity: ["created_by"], summary: "Create an intent" },
  { method: "get", path: "/intents", command: c.list, input: (req) => ({ query: req.query }), summary: "List intents (filters status, created_by; cursor pagination)" },
  { method: "get", path: "/intents/:id", command: c.get, input: (req) => ({ intent_id: id(req) }), etag: true, summary: "Read an intent" },
  {
    method: "post",
    path: "/intents/:id/state",
    command: c.patchState,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), patches: req.body }),
    etag: true,
    summary: "Patch the state atomically (If-Match required)",
  },
  {
    method: "post",
    path: "/intents/:id/status",
    command: c.transition,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    etag: true,
    summary: "Change the status following table 3.1 (If-Match required)",
  },
  {
    method: "post",
    path: "/intents/:id/events",
    command: c.appendEvent,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    status: 201,
    claimsIdentity: ["actor"],
    summary: "Append an event to the log",
  },
  { method: "get", path: "/intents/:id/events", command: c.listEvents, input: (req) => ({ intent_id: id(req), query: req.query }), summary: "Read the event log, oldest first" },
  {
    method: "post",
    path: "/intents/:id/agents",
    command: c.assignAgent,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    status: 201,
    summary: "Assign an agent",
  },
  { method: "get", path: "/intents/:id/agents", command: c.listAgents, input: (req) => ({ intent_id: id(req) }), summary: "List assigned agents" },
  {
    method: "delete",
    path: "/intents/:id/agents/:agentId",
    command: c.unassignAgent,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), agent_id: String(req.params.agentId) }),
    summary: "Unassign an agent",
  },
  {
    method: "post",
    path: "/intents/:id/leases",
    command: c.acquireLease,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    status: 201,
    actingAgentField: "agent_id",
    summary: "Acquire a lease on a scope",
  },
  { method: "get", path: "/intents/:id/leases", command: c.listLeases, input: (req) => ({ intent_id: id(req), query: req.query }), summary: "List leases" },
  { method: "get", path: "/intents/:id/leases/:leaseId", command: c.getLease, input: (req) => ({ intent_id: id(req), lease_id: String(req.params.leaseId) }), summary: "Read a lease" },
  renewLease("post", "/intents/:id/leases/:leaseId/renew", "Renew a lease ({ttl_seconds} or {duration_seconds})"),
  renewLease("patch", "/intents/:id/leases/:leaseId", "Renew a lease (alias of POST .../renew used by the OpenIntent clients)"),
  {
    method: "delete",
    path: "/intents/:id/leases/:leaseId",
    command: c.releaseLease,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), lease_id: String(req.params.leaseId) }),
    summary: "Release a lease",
  },
];

/** Every route of the API; each area of the API keeps its routes in its own module. */
export const routes: Route[] = [...intentRoutes, ...registryRoutes, ...attachmentRoutes, ...retryRoutes, ...portfolioRoutes, ...costRoutes, ...taskRoutes, ...governanceRoutes, ...memoryRoutes, ...channelRoutes, ...federationRoutes];
