import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { PinnedDestination } from "./destination";
import { failed } from "./errors";

export type ResponseHeaders = Readonly<Record<string, string | string[] | undefined>>;

export interface ConnectRequest {
  readonly destination: PinnedDestination;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
  readonly maxResponseBytes: number;
  /** Certificate authorities (PEM) to trust instead of Node's default roots (tls `ca` semantics). */
  readonly ca?: string | readonly string[];
  /** Aborted when the overall deadline passes; the connection must be torn down then. */
  readonly signal: AbortSignal;
}

export interface ConnectResponse {
  readonly status: number;
  readonly headers: ResponseHeaders;
  readonly body: Buffer;
}

/**
 * The one step that sends packets. Injected in tests so that reaching it for a refused
 * destination fails the test instead of sending traffic.
 */
export type Connector = (request: ConnectRequest) => Promise<ConnectResponse>;

/**
 * A lookup that can only answer the pinned address. Node does not call lookup for an address
 * literal host, which is what we pass; this is here so that no code path (a proxy agent, a
 * future Node change) can fall back to the system resolver.
 */
function pinnedLookup(destination: PinnedDestination): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) {
      (callback as unknown as (err: null, addresses: { address: string; family: number }[]) => void)(null, [
        { address: destination.address, family: destination.family },
      ]);
    } else {
      callback(null, destination.address, destination.family);
    }
  };
}

/**
 * Connects over node:http / node:https to the pinned address while keeping the name for the
 * Host header, TLS SNI and certificate check, reading at most maxResponseBytes of body.
 */
export const pinnedConnector: Connector = (request) =>
  new Promise<ConnectResponse>((resolvePromise, rejectPromise) => {
    // Tearing a response down emits its own errors; the first outcome is the one that counts.
    let settled = false;
    const resolve = (value: ConnectResponse) => {
      if (settled) return;
      settled = true;
      resolvePromise(value);
    };
    const reject = (error: unknown) => {
      if (settled) return;
      settled = true;
      rejectPromise(error);
    };
    const { destination } = request;
    const isHttps = destination.url.protocol === "https:";
    const options: https.RequestOptions = {
      host: destination.address,
      family: destination.family,
      port: destination.port,
      path: `${destination.url.pathname}${destination.url.search}`,
      method: request.method,
      headers: { ...request.headers, host: destination.url.host },
      lookup: pinnedLookup(destination),
      // No pooled sockets: a socket opened for one pinned address is never reused for another.
      agent: false,
      signal: request.signal,
    };
    // The certificate is checked against the name the caller asked for, not the address.
    if (isHttps && destination.hostIsName) options.servername = destination.hostname;
    if (isHttps && request.ca !== undefined) options.ca = typeof request.ca === "string" ? request.ca : [...request.ca];
    const req = (isHttps ? https : http).request(options, (res) => {
      const declared = Number(res.headers["content-length"]);
      if (Number.isFinite(declared) && declared > request.maxResponseBytes) {
        reject(failed("response_too_large", `the response declares ${declared} bytes, over the cap of ${request.maxResponseBytes}`));
        res.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      let received = 0;
      res.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > request.maxResponseBytes) {
          reject(failed("response_too_large", `the response exceeds the cap of ${request.maxResponseBytes} bytes`));
          res.destroy();
          return;
        }
        chunks.push(chunk);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
      res.on("aborted", () => reject(failed("connection_failed", "the peer closed the connection mid-response")));
    });
    req.on("error", reject);
    if (request.body !== undefined) req.end(request.body);
    else req.end();
  });
