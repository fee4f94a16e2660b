import { appError } from "@intentmesh/contracts";
import express, { type Express, type Request, type Response } from "express";
import { federationCommands as f, type Caller, type SignedRequest } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";

/** Requests from other servers and the public documents carry no API key: a server's signature (receive, callbacks) or nothing (documents). */
const PUBLIC_CALLER: Caller = { principal: "federation-peer", roles: [], actor: "federation-peer", agent_id: null };

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
 * The public part of federation: GET /.well-known/openintent-federation.json and
 * /.well-known/did.json, and the signed POSTs of other servers (receive and callbacks), mounted
 * before the API-key router. Bodies are kept as bytes: the signature covers their digest.
 */
export function mountPublicFederationRoutes(app: Express, client: BusClient, slowClient: BusClient, prefixes: string[]): void {
  const send = (res: Response, reply: { body: Uint8Array }, type = "application/json") =>
    void res.status(200).type(type).send(Buffer.from(reply.body.buffer, reply.body.byteOffset, reply.body.byteLength));
  app.get("/.well-known/openintent-federation.json", async (_req, res) => send(res, await client.requestRaw(f.discovery, PUBLIC_CALLER, {})));
  app.get("/.well-known/did.json", async (_req, res) => send(res, await client.requestRaw(f.did, PUBLIC_CALLER, {}), "application/did+json"));
  const raw = express.raw({ type: () => true, limit: FEDERATION_BODY_LIMIT });
  app.post(
    prefixes.map((p) => `${p}/federation/receive`),
    raw,
    // Slow: verifying may fetch the sender's did.json (up to the 10-second outbound deadline).
    async (req, res) => send(res, await slowClient.requestRaw(f.receive, PUBLIC_CALLER, { request: signedRequest(req) })),
  );
  app.post(
    prefixes.map((p) => `${p}/federation/callbacks/:dispatchId`),
    raw,
    async (req, res) => {
      const dispatchId = String(req.params.dispatchId).toLowerCase();
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(dispatchId)) throw appError("NOT_FOUND", `dispatch ${dispatchId.slice(0, 64)} was not found`);
      send(res, await slowClient.requestRaw(f.callback, PUBLIC_CALLER, { dispatch_id: dispatchId, request: signedRequest(req) }));
    },
  );
}
