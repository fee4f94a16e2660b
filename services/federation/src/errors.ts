import { appError } from "@intentmesh/contracts";
import { AppError } from "@intentmesh/contracts";
import { isOutboundError, type OutboundError } from "@intentmesh/ssrf";

/** The error codes of federation (docs/federation.md, "Errors"). */
export const federationErrors = {
  disabled: () => appError("FEDERATION_DISABLED", "federation is not enabled on this server"),
  loop: (message: string, details: Record<string, unknown> = {}) => appError("FEDERATION_LOOP", message, details),
  signatureInvalid: (message: string) => appError("SIGNATURE_INVALID", `the request signature was refused: ${message}`),
  untrusted: (did: string) => appError("UNTRUSTED_SERVER", `${did} is not a peer of this server and the trust policy is allowlist`, { server_did: did }),
  depthExhausted: (message: string) => appError("DELEGATION_DEPTH_EXHAUSTED", message),
  inProgress: (key: string) => appError("DISPATCH_IN_PROGRESS", `a dispatch with idempotency key ${key} is being sent right now; retry in a few seconds to get its answer`),
  keyReused: (key: string) => appError("IDEMPOTENCY_KEY_REUSED", `idempotency key ${key} was used for a different dispatch; use a new key`),
  remoteRefused: (status: number, body: unknown) =>
    appError("DISPATCH_FAILED", `the remote server refused the dispatch with HTTP ${status}`, { remote_status: status, remote_error: remoteError(body) }),
};

/** An OutboundError of the SSRF guard as an API error: SSRF_BLOCKED 400, DISPATCH_TIMEOUT / DISPATCH_FAILED 502. */
export function outboundAppError(error: OutboundError): AppError {
  const details: Record<string, unknown> = {};
  if (error.refusedClass) details.refused_class = error.refusedClass;
  if (error.reason) details.reason = error.reason;
  return new AppError(error.code, error.message, details);
}

export function asOutboundAppError(error: unknown): AppError | null {
  return isOutboundError(error) ? outboundAppError(error) : null;
}

/** Only the code and message of a peer's error body, cut short: a peer's answer is not ours to relay whole. */
export function remoteError(body: unknown): { code?: string; message?: string } | null {
  if (!body || typeof body !== "object") return null;
  const error = (body as { error?: unknown }).error ?? body;
  if (!error || typeof error !== "object") return null;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return {
    ...(typeof code === "string" ? { code: code.slice(0, 64) } : {}),
    ...(typeof message === "string" ? { message: message.slice(0, 300) } : {}),
  };
}
