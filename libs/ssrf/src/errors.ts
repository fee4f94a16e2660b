/**
 * The one error type of the outbound guard. `code` is what callers branch on (the federation
 * service maps DISPATCH_TIMEOUT and DISPATCH_FAILED to 502 and SSRF_BLOCKED to 400); `reason`
 * narrows it for logs and tests. Messages name the refused class or the failure, never a
 * header, a body or a credential.
 */
export type OutboundErrorCode = "SSRF_BLOCKED" | "DISPATCH_TIMEOUT" | "DISPATCH_FAILED";

/** Why a destination was refused: one value per rule of docs/federation.md. */
export type RefusedClass =
  | "invalid_url"
  | "scheme"
  | "userinfo"
  | "internal_hostname"
  | "not_an_address"
  | "zone_id"
  | "metadata"
  | "unspecified"
  | "broadcast"
  | "multicast"
  | "link_local"
  | "loopback"
  | "carrier_grade_nat"
  | "private"
  | "reserved"
  | "documentation"
  | "as112"
  | "amt"
  | "unique_local"
  | "site_local"
  | "discard"
  | "ipv4_translated"
  | "nat64_local"
  | "teredo"
  | "benchmarking"
  | "orchid"
  | "segment_routing"
  | "not_global_unicast"
  | "no_address";

export type FailureReason =
  | "dns_failed"
  | "connection_failed"
  | "response_too_large"
  | "too_many_redirects"
  | "bad_redirect"
  | "timeout";

export class OutboundError extends Error {
  override readonly name = "OutboundError";

  constructor(
    readonly code: OutboundErrorCode,
    message: string,
    readonly refusedClass?: RefusedClass,
    readonly reason?: FailureReason,
  ) {
    super(message);
  }
}

export function blocked(refusedClass: RefusedClass, sentence: string): OutboundError {
  return new OutboundError("SSRF_BLOCKED", sentence, refusedClass);
}

export function failed(reason: Exclude<FailureReason, "timeout">, sentence: string): OutboundError {
  return new OutboundError("DISPATCH_FAILED", sentence, undefined, reason);
}

export function timedOut(timeoutMs: number): OutboundError {
  return new OutboundError("DISPATCH_TIMEOUT", `the outbound call did not complete within ${timeoutMs} ms`, undefined, "timeout");
}

export function isOutboundError(value: unknown): value is OutboundError {
  return value instanceof OutboundError;
}
