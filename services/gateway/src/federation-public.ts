import { appError } from "@intentmesh/contracts";
import express, { type Express, type NextFunction, type Request, type Response, type Router } from "express";
import { errors, FEDERATION_PEER_ROLE, federationCommands as f, type Caller, type SignedRequest } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { ApiKeys } from "./api-keys";

/** The public documents carry no key: did:web resolution is an anonymous GET (the one exception to SPEC 5.1). */
const PUBLIC_CALLER: Caller = { principal: "anonymous", roles: [], actor: "anonymous", agent_id: null };

/**
 * SPEC 5.1 for the requests of other servers: an X-API-Key with the `federation` role (a key this
 * server gave the peer), checked before anything else (before the body is read), then the RFC
 * 9421 signature in the service (5.7). 401 without a key or with an unknown one, 403 for a key of
 * another role: a person's or an agent's key does not deliver envelopes.
 */
function requirePeerKey(keys: ApiKeys) {
  return (req: Request, _res: Response, next: NextFunction) => {
    const presented = req.get("x-api-key");
    const identity = keys.identify(presented);
    if (!identity) throw errors.unauthorized(presented ? "the X-API-Key is not valid" : "the X-API-Key header is required: a peer server sends the key this server gave it (role federation)");
    if (!identity.roles.includes(FEDERATION_PEER_ROLE)) {
      throw errors.forbidden(`${req.method} ${req.path} is open to federation keys only (the keys given to peer servers)`, { required_roles: [FEDERATION_PEER_ROLE], roles: identity.roles });
    }
    req.caller = { principal: identity.principal, roles: identity.roles, actor: identity.principal, agent_id: null };
    next();
  };
}

/** The headers a signature may cover, lower-cased, passed to the service with the exact body text. */
const SIGNED_HEADERS = ["content-type", "content-digest", "idempotency-key", "signature-input", "signature"];

/** Received envelopes and callbacks are small; a peer's body over this is refused before it is read whole. */
export const FEDERATION_BODY_LIMIT = "256kb";

function signedRequest(req: Request): SignedRequest {
  if (!Buffer.isBuffer(req.body)) throw appError("UNSUPPORTED_MEDIA_TYPE", "send the envelope as application/json");
  let body: string;
  try {
    body = new TextDecoder("utf-8", { fatal: true }).decode(req.body);
  } catch {
    throw appError("INVALID_UTF8", "the request body is not valid UTF-8");
  }
  const headers: Record<string, string> = {};
  for (const name of SIGNED_HEADERS) {
    const value = req.get(name);
    if (value !== undefined) headers[name] = value.slice(0, 8192);
  }
  return { method: req.method, path: req.originalUrl.slice(0, 4096), headers, body };
}

/**
 * The server-to-server part of federation: GET /.well-known/openintent-federation.json and
 * /.well-known/did.json (anonymous), and the signed POSTs of other servers (receive and
 * callbacks: a federation key, then the signature) on `api`, the router of the API prefixes, ahead
 * of the catalogue's routes. Bodies are
 * kept as bytes: the signature covers their digest.
 */
export function mountPublicFederationRoutes(app: Express, api: Router, client: BusClient, slowClient: BusClient, keys: ApiKeys): void {
  const send = (res: Response, reply: { body: Uint8Array }, type = "application/json") =>
    void res.status(200).type(type).send(Buffer.from(reply.body.buffer, reply.body.byteOffset, reply.body.byteLength));
  app.get("/.well-known/openintent-federation.json", async (_req, res) => send(res, await client.requestRaw(f.discovery, PUBLIC_CALLER, {})));
  app.get("/.well-known/did.json", async (_req, res) => send(res, await client.requestRaw(f.did, PUBLIC_CALLER, {}), "application/did+json"));
  const raw = express.raw({ type: () => true, limit: FEDERATION_BODY_LIMIT });
  const peerKey = requirePeerKey(keys);
  api.post(
    "/federation/receive",
    peerKey,
    raw,
    // Slow: verifying may fetch the sender's did.json (up to the 10-second outbound deadline).
    async (req, res) => send(res, await slowClient.requestRaw(f.receive, req.caller!, { request: signedRequest(req) })),
  );
  api.post(
    "/federation/callbacks/:dispatchId",
    peerKey,
    raw,
    async (req, res) => {
      const dispatchId = String(req.params.dispatchId).toLowerCase();
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(dispatchId)) throw appError("NOT_FOUND", `dispatch ${dispatchId.slice(0, 64)} was not found`);
      send(res, await slowClient.requestRaw(f.callback, req.caller!, { dispatch_id: dispatchId, request: signedRequest(req) }));
    },
  );
}
