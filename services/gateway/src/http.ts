import { appError } from "@intentmesh/contracts";
import express, { type NextFunction, type Request, type Response } from "express";
import { AppError, errors, findUnsafeJsonValue, isAppError, parseJsonStrict, retryAfterSecondsOf, unsafeJsonError, type Caller } from "@intentmesh/contracts";
import type { Logger } from "@intentmesh/telemetry";
import { byteLimit, canReadDirectly, readDirectly } from "./body-read";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by authentication: who calls, with which roles, acting as which agent. */
      caller?: Caller;
    }
  }
}

/** If-Match accepts 3, "3" and W/"3"; absent is null; anything else is a 400. */
export function parseIfMatch(header: string | undefined): number | null {
  if (header === undefined || header.trim() === "") return null;
  const match = /^\s*(?:W\/"(\d{1,9})"|"(\d{1,9})"|(\d{1,9}))\s*$/.exec(header);
  if (!match) throw errors.badIfMatch(header);
  return Number(match[1] ?? match[2] ?? match[3]);
}

export const etagOf = (version: number) => `"${version}"`;

/**
 * 5xx answers that are an outcome the caller asked for, not a failure of the server: an ask whose
 * recipient did not answer within the caller's own timeout (POST /channels/{id}/ask). Logged at
 * info; every other 5xx is an error worth an operator's look.
 */
const EXPECTED_5XX: ReadonlySet<string> = new Set(["RESPONSE_TIMEOUT"]);

/** The one place errors become HTTP: {code, message, details} plus the spec's top-level fields. */
export function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const appError = toAppError(error);
    if (appError.status >= 500) {
      const fields = { err: error, method: req.method, path: req.path };
      if (EXPECTED_5XX.has(appError.code)) logger.info({ ...fields, code: appError.code }, "request ended without the answer it waited for");
      else logger.error(fields, "request failed");
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    // A dependency that is down (503), or a conflict the catalogue says resolves by itself, comes
    // back by itself: tell the client when to try again.
    const retryAfter = appError.status === 503 ? RETRY_AFTER_SECONDS : retryAfterSecondsOf(appError.code);
    if (retryAfter !== undefined) res.set("Retry-After", String(retryAfter));
    res.status(appError.status).json({ ...appError.toBody(), request_id: res.get("X-Request-Id") });
  };
}

/** Anything thrown while serving a request, as the catalogued error it answers. */
export function toAppError(error: unknown): AppError {
  if (isAppError(error)) return error;
  const e = error as { type?: string; status?: number; limit?: number };
  if (e?.type === "entity.parse.failed") return errors.invalidJson("the request body is not valid JSON");
  if (e?.type === "entity.too.large") return errors.payloadTooLarge(`${e.limit} bytes`);
  if (e?.type === "encoding.unsupported" || e?.type === "charset.unsupported") {
    return appError("UNSUPPORTED_ENCODING", "the request body encoding is not supported");
  }
  if (typeof e?.status === "number" && e.status >= 400 && e.status < 500) {
    return appError("BAD_REQUEST", "the request could not be read", { parser_status: e.status });
  }
  return errors.internal();
}

/** What a 503 tells a client to wait before it tries again. */
export const RETRY_AFTER_SECONDS = 2;

const JSON_TYPES = ["application/json", "application/*+json"];
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Reads a JSON body as bytes and parses it strictly (parseJsonStrict): invalid UTF-8, NUL, lone
 * surrogates, numbers that would not read back as written, and nesting past the limit are 400s
 * naming the place, before anything reaches a service. An empty body is {} (the official clients
 * send Content-Type: application/json on bodiless POSTs).
 */
export function jsonBody(limit: string, options: { direct?: boolean } = {}) {
  const raw = express.raw({ type: JSON_TYPES, limit });
  // TEST-ONLY `direct: false`: every body through express.raw (tests compare the two readers).
  const directLimit = options.direct === false ? undefined : byteLimit(limit);
  return (req: Request, res: Response, next: NextFunction) => {
    // Content-Length: 0 (what many clients send with a GET or a bodiless POST) has nothing to
    // read: the empty body is taken as it is, without waiting on the stream, and means what it
    // meant when read (a JSON type: {} and absent, its charset checked; another type: no body).
    const { headers } = req;
    // No Content-Length and no Transfer-Encoding (a GET, nearly all reads): there is no body, and
    // body-parser would only find that out (type-is's hasBody) and go on: go on without it.
    if (headers["content-length"] === undefined && headers["transfer-encoding"] === undefined) {
      markBodyUnread(req);
      return next();
    }
    if (headers["content-length"] === "0" && headers["transfer-encoding"] === undefined && headers["content-encoding"] === undefined) {
      if (req.is(JSON_TYPES)) return parseRead(req, res, next, EMPTY);
      return next();
    }
    // A plain body (a Content-Length, no encoding): read directly, as express.raw would read it.
    if (directLimit !== undefined && canReadDirectly(req)) {
      markBodyUnread(req);
      if (!req.is(JSON_TYPES)) return next();
      return readDirectly(req, directLimit, (error, bytes) => {
        if (error) return next(error);
        req.body = bytes;
        parseRead(req, res, next, bytes!);
      });
    }
    return raw(req, res, (error?: unknown) => {
      if (error) return next(error);
      if (!Buffer.isBuffer(req.body)) return next();
      parseRead(req, res, next, req.body);
    });
  };
}

const EMPTY = Buffer.alloc(0);

/** What body-parser leaves on a request it did not read: a `body` property, undefined. */
function markBodyUnread(req: Request): void {
  if (!("body" in req)) (req as { body?: unknown }).body = undefined;
}

/** A JSON body read as bytes: its charset, its UTF-8, then strict JSON (or {} when empty). */
function parseRead(req: Request, res: Response, next: NextFunction, bytes: Buffer): void {
  try {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.get("content-type") ?? "")?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      throw appError("UNSUPPORTED_ENCODING", `send JSON bodies as UTF-8, not ${charset.slice(0, 40)}`);
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw appError("INVALID_UTF8", "the request body is not valid UTF-8");
    }
    if (text.trim() === "") {
      req.body = {};
      res.locals.bodyAbsent = true;
    } else req.body = parseJsonStrict(text);
    next();
  } catch (failure) {
    next(failure);
  }
}

/** Query values are text that reaches SQL: NUL and the like are 400s, as in bodies. */
export function refuseUnsafeQuery(req: Request, _res: Response, next: NextFunction) {
  const unsafe = findUnsafeJsonValue(req.query);
  if (unsafe) throw unsafeJsonError(unsafe, "the query string");
  next();
}

/** Path parameters too (a percent-encoded NUL decodes into one). */
export function refuseUnsafeParams(req: { params: unknown }): void {
  const unsafe = findUnsafeJsonValue(req.params);
  if (unsafe) throw unsafeJsonError(unsafe, "the path");
}
