import type { RouteSpec } from "./route-spec";

/**
 * Whether the SDK may send a request again after its answer was lost. The rule is read off the
 * route catalogue, so a new route is classified without a hand-written list (docs/sdk.md,
 * "Retries and idempotency", states the guarantees):
 *
 * - `read`: GET. Replayed freely.
 * - `keyed`: the route takes an idempotency key (federation dispatch). The SDK sends one on every
 *   call (the caller's, or a fresh random one) and replays with the same key; the server answers
 *   the first outcome again.
 * - `conditional`: the write requires If-Match and bumps the version it guards (state, status,
 *   governance, memory PATCH, agent status, task PATCH, portfolio PATCH, budget). A replay carries
 *   the same If-Match, so it cannot apply a second time: after an applied first attempt it is a 409.
 * - `idempotent`: PUT (replaces a whole resource), and DELETE of one resource (a second delete
 *   finds nothing to delete). A DELETE with a body deletes by filter and is not idempotent.
 * - `unsafe`: everything else (POSTs that create or append, optional-If-Match writes whose version
 *   does not move). Sent again only when the first attempt certainly never reached the server
 *   (connection refused); a lost answer is an OutcomeUnknownError.
 *
 * When a replay of a `conditional` or `idempotent` write after a lost answer is refused with a 4xx,
 * the refusal may be the first attempt's own doing (its 409, its 404), so the SDK reports
 * OUTCOME_UNKNOWN rather than a misleading conflict.
 */
export type ReplaySafety = "read" | "keyed" | "conditional" | "idempotent" | "unsafe";

export function replaySafety(route: RouteSpec, hasIfMatch: boolean): ReplaySafety {
  if (route.method === "GET") return "read";
  if (route.headers && Object.keys(route.headers).includes("idempotency_key")) return "keyed";
  if (route.ifMatch === "required" && hasIfMatch) return "conditional";
  if (route.method === "PUT") return "idempotent";
  if (route.method === "DELETE" && !route.body) return "idempotent";
  return "unsafe";
}
