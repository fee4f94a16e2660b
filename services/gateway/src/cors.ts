import type { NextFunction, Request, Response } from "express";

/** Request headers a browser client may send cross-origin: the API's own. */
const ALLOWED_HEADERS = "Content-Type, X-API-Key, X-Agent-ID, If-Match, Last-Event-ID, X-Request-Id, Idempotency-Key";
/** Response headers it may read. */
const EXPOSED_HEADERS = "ETag, X-Request-Id, Retry-After, X-Next-Cursor, Link";

/**
 * CORS for browser clients (CORS_ORIGINS, off by default): `*` or a list of exact origins. A
 * preflight (OPTIONS with Access-Control-Request-Method) is answered here, before any key is
 * asked for; other requests get the allow headers and go on. Credentials (cookies) are never
 * allowed: the API authenticates with X-API-Key.
 */
export function cors(origins: readonly string[]) {
  const any = origins.includes("*");
  const allowed = new Set(origins);
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.get("origin");
    if (!origin || (!any && !allowed.has(origin))) return next();
    res.set("Access-Control-Allow-Origin", any ? "*" : origin);
    if (!any) res.vary("Origin");
    res.set("Access-Control-Expose-Headers", EXPOSED_HEADERS);
    if (req.method === "OPTIONS" && req.get("access-control-request-method")) {
      res.set({
        "Access-Control-Allow-Methods": "GET, POST, PUT, PATCH, DELETE, OPTIONS",
        "Access-Control-Allow-Headers": ALLOWED_HEADERS,
        "Access-Control-Max-Age": "600",
      });
      res.status(204).end();
      return;
    }
    next();
  };
}

/** CORS_ORIGINS: unset or empty is off; `*`; or origins separated by commas (scheme://host[:port]). */
export function parseCorsOrigins(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
