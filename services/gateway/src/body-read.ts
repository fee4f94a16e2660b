import { AsyncResource } from "node:async_hooks";
import type { IncomingMessage } from "node:http";

/**
 * Reads a request body that is plainly there: identity encoding (no Content-Encoding header) and
 * a Content-Length (node's parser has checked it is digits and delivers exactly that many bytes).
 * It is what express.raw (body-parser + raw-body) does for such a request, without the machinery
 * it needs for the other cases (issue 32): a length over the limit is a 413 entity.too.large,
 * answered once the body has been read off (the connection stays usable); a request that breaks
 * off is a 400 request.aborted; the bytes otherwise. The callback runs in the caller's async
 * context (request id, trace span), as raw-body arranges with an AsyncResource.
 *
 * Everything else (Content-Encoding, Transfer-Encoding, a request already read) stays with
 * express.raw: see canReadDirectly.
 */
export function readDirectly(req: IncomingMessage, limit: number, callback: (error: BodyError | null, body?: Buffer) => void): void {
  // One resource per request, entered when the body is in. AsyncResource.bind would do the same
  // but also defines a deprecated getter on every bound function (util.deprecate per call): 10 µs
  // a request in the gateway's profile.
  const resource = new AsyncResource("IntentmeshBodyRead");
  const done = (error: BodyError | null, body?: Buffer) => resource.runInAsyncScope(callback, null, error, body);
  const length = Number(req.headers["content-length"]);
  if (length > limit) {
    // raw-body stops reading and body-parser then reads the request off before it answers.
    return dump(req, () => done(bodyError(413, "request entity too large", { expected: length, length, limit, type: "entity.too.large" })));
  }
  const chunks: Buffer[] = [];
  let received = 0;
  const finish = (error: BodyError | null) => {
    req.removeListener("data", onData);
    req.removeListener("end", onEnd);
    req.removeListener("aborted", onAborted);
    req.removeListener("error", onError);
    if (error) {
      req.pause();
      return dump(req, () => done(error));
    }
    done(null, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
  };
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    received += chunk.length;
  };
  const onEnd = () => {
    // node's parser ends a request with a Content-Length only after that many bytes; kept as raw-body has it.
    if (received !== length) return finish(bodyError(400, "request size did not match content length", { expected: length, length, received, type: "request.size.invalid" }));
    finish(null);
  };
  const onAborted = () => finish(bodyError(400, "request aborted", { code: "ECONNABORTED", expected: length, length, received, type: "request.aborted" }));
  const onError = (error: Error) => finish(Object.assign(error, { status: 400, statusCode: 400 }) as BodyError);
  req.on("aborted", onAborted);
  req.on("data", onData);
  req.on("end", onEnd);
  req.on("error", onError);
}

/** Whether readDirectly reads this request as express.raw would; the rest goes to express.raw. */
export function canReadDirectly(req: IncomingMessage): boolean {
  const { headers } = req;
  if (headers["content-length"] === undefined || headers["transfer-encoding"] !== undefined || headers["content-encoding"] !== undefined) return false;
  // What on-finished calls a finished request (body-parser then reads nothing), and a stream that
  // is not readable (raw-body's 500): express.raw answers those itself.
  const socket = req.socket as { readable?: boolean } | null;
  return !(req as { upgrade?: boolean }).upgrade && Boolean(socket?.readable) && !req.complete && req.readable && !req.readableEncoding;
}

export type BodyError = Error & { status: number; statusCode: number; type: string; limit?: number };

/** The error as http-errors makes it for body-parser (status, statusCode, type and the rest as fields). */
function bodyError(status: number, message: string, fields: Record<string, unknown>): BodyError {
  return Object.assign(new Error(message), { status, statusCode: status, expose: true }, fields) as unknown as BodyError;
}

/** Reads the rest of the request off and calls back once it has ended (or its connection closed). */
function dump(req: IncomingMessage, callback: () => void): void {
  let called = false;
  const once = () => {
    if (called) return;
    called = true;
    req.removeListener("end", once);
    req.removeListener("close", once);
    req.removeListener("error", once);
    callback();
  };
  if (req.complete && !req.readable) return void setImmediate(once);
  req.on("end", once);
  req.on("close", once);
  req.on("error", once);
  req.resume();
}

/**
 * bytes.parse (how body-parser reads `limit`) for the forms it reads plainly: digits with kb, mb or
 * gb (1024-based, fractions floored) and bare digits with or without b; undefined for the rest,
 * which then stays with express.raw.
 */
export function byteLimit(limit: string): number | undefined {
  const scaled = /^(\d+(?:\.\d+)?) *(kb|mb|gb)$/i.exec(limit);
  if (scaled) return Math.floor({ kb: 1 << 10, mb: 1 << 20, gb: 1 << 30 }[scaled[2]!.toLowerCase() as "kb"] * Number.parseFloat(scaled[1]!));
  if (/^\d+b?$/i.test(limit)) return Number.parseInt(limit, 10);
  return undefined;
}
