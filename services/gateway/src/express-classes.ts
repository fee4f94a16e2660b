import http from "node:http";
import type { Socket } from "node:net";
import type express from "express";

/**
 * Node's request and response classes with express's prototypes (app.request, app.response),
 * for http.createServer: each request and response is made with the prototype express would give
 * it. express (app.handle) and the direct path (direct-dispatch.ts) set those prototypes on every
 * request; on an object that already has them that is a no-op, where changing the prototype of a
 * live object costs V8 a map change on each of the two objects per request.
 */
export function expressServerClasses(app: express.Express): http.ServerOptions {
  // Node's own classes are constructor functions (not `class`), so a constructor that calls them
  // on `this` and carries express's prototype is what they are with a prototype of its own.
  function Request(this: http.IncomingMessage, socket: Socket) {
    http.IncomingMessage.call(this, socket);
  }
  Request.prototype = app.request;
  function Response(this: http.ServerResponse, req: http.IncomingMessage, options?: unknown) {
    (http.ServerResponse as unknown as (this: http.ServerResponse, req: http.IncomingMessage, options?: unknown) => void).call(this, req, options);
  }
  Response.prototype = app.response;
  return {
    IncomingMessage: Request as unknown as typeof http.IncomingMessage,
    ServerResponse: Response as unknown as typeof http.ServerResponse,
  };
}
