import type { NextFunction, Request, Response } from "express";
import { AppError, errors, isAppError, type Caller } from "@intentmesh/contracts";
import type { Logger } from "@intentmesh/telemetry";

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

/** The one place errors become HTTP: {code, message, details} plus the spec's top-level fields. */
export function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const appError = toAppError(error);
    if (appError.status >= 500) logger.error({ err: error, method: req.method, path: req.path }, "request failed");
    if (res.headersSent) {
      res.end();
      return;
    }
    res.status(appError.status).json(appError.toBody());
  };
}

function toAppError(error: unknown): AppError {
  if (isAppError(error)) return error;
  const e = error as { type?: string; status?: number; limit?: number };
  if (e?.type === "entity.parse.failed") return errors.invalidJson("the request body is not valid JSON");
  if (e?.type === "entity.too.large") return errors.payloadTooLarge(`${e.limit} bytes`);
  if (e?.type === "encoding.unsupported" || e?.type === "charset.unsupported") {
    return new AppError("UNSUPPORTED_ENCODING", 415, "the request body encoding is not supported");
  }
  if (typeof e?.status === "number" && e.status >= 400 && e.status < 500) {
    return new AppError("BAD_REQUEST", e.status, "the request could not be read");
  }
  return errors.internal();
}
