import type { ErrorCode, OperationId } from "./types";

/** The error body every failure of the server has: `{code, message, details}`, plus the spec's top-level fields. */
export interface ErrorBody {
  code: string;
  message: string;
  details?: Record<string, unknown>;
  request_id?: string;
  /** VERSION_MISMATCH (409). */
  current_version?: number;
  /** INVALID_RESPONSE_VALUE (422). */
  valid_choices?: unknown[];
  [extra: string]: unknown;
}

/** Codes of failures that happen on the client's side of the wire. */
export type ClientErrorCode =
  /** Nothing could be exchanged with the server (refused, reset before a request was sent, DNS). */
  | "NETWORK_ERROR"
  /** A write was sent and its answer was lost: it may or may not have been applied. Never replayed blindly. */
  | "OUTCOME_UNKNOWN"
  /** The server answered something that is not the API's JSON (a proxy's HTML page, say). */
  | "INVALID_RESPONSE"
  /** The per-attempt timeout passed. */
  | "TIMEOUT";

/** Any failure the SDK reports: a catalogued server code, or a client-side one. */
export class IntentmeshError extends Error {
  override readonly name: string = "IntentmeshError";
  constructor(
    /** A code of the error catalogue (libs/contracts/src/error-catalogue.ts), or a ClientErrorCode. */
    readonly code: ErrorCode | ClientErrorCode,
    message: string,
    /** The HTTP status (0 when there was no answer). */
    readonly status: number,
    /** The server's error body, when it sent one. */
    readonly body?: ErrorBody,
    /** The operation that failed. */
    readonly operationId?: OperationId | string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  get details(): Record<string, unknown> {
    return this.body?.details ?? {};
  }

  get requestId(): string | undefined {
    return this.body?.request_id;
  }
}

/**
 * A write whose outcome is unknown: the request left, and the answer was lost (connection dropped,
 * timeout, 504), or a replay of a replayable write was refused in a way the first attempt may have
 * caused (a 409 after a conditional write, a 404 after a delete). The SDK never sends the write
 * again by itself; re-read the resource to learn what happened.
 */
export class OutcomeUnknownError extends IntentmeshError {
  override readonly name = "OutcomeUnknownError";
  constructor(operationId: string, cause: unknown, readonly replayError?: IntentmeshError) {
    super(
      "OUTCOME_UNKNOWN",
      `${operationId}: the request was sent and its answer was lost${replayError ? ` (a replay answered ${replayError.code})` : ""}; it may have been applied, re-read before writing again`,
      replayError?.status ?? 0,
      replayError?.body,
      operationId,
      { cause },
    );
  }
}

/** True when `error` is an IntentmeshError with one of `codes` (any code when none are given); narrows the code. */
export function isApiError<C extends ErrorCode | ClientErrorCode>(error: unknown, ...codes: C[]): error is IntentmeshError & { code: C } {
  return error instanceof IntentmeshError && (codes.length === 0 || (codes as string[]).includes(error.code));
}

/** An abort of the caller's signal, rethrown as the DOMException fetch itself uses. */
export function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason;
  return new DOMException("The operation was aborted", "AbortError");
}
