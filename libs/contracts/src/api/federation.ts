import { ALL_ROLES, type ApiRoute, FEDERATION_BUS_TIMEOUT_MS } from "../api-route";
import { federationCommands } from "../federation";

/** Federation behind an API key (4.11); the signed public routes are mounted by the gateway itself. */
export const federationRoutes = [
  {
    operationId: "federationStatus",
    tag: "Federation",
    method: "get",
    path: "/federation/status",
    command: federationCommands.status,
    access: { roles: ALL_ROLES },
    summary: "Federation status: this server's did:web, trust policy, peers and counters",
  },
  {
    operationId: "federationAgents",
    tag: "Federation",
    method: "get",
    path: "/federation/agents",
    command: federationCommands.agents,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "Local agents offered to federation, by visibility (public by default; ?visibility=public,unlisted,private)",
  },
  {
    operationId: "federationDispatch",
    tag: "Federation",
    method: "post",
    path: "/federation/dispatch",
    command: federationCommands.dispatch,
    body: "body",
    headers: {idempotency_key: "idempotency-key"},
    busTimeoutMs: FEDERATION_BUS_TIMEOUT_MS,
    access: { roles: ALL_ROLES },
    documentedBody: federationCommands.dispatch.input.shape.body,
    summary: "Send an intent to an agent on another server as a signed envelope (10 s timeout, 502 on timeout or failure; Idempotency-Key honoured)",
  },
] as const satisfies readonly ApiRoute[];
