import { IntentmeshError } from "@intentmesh/sdk";

/**
 * Exit codes scripts can rely on (docs/cli.md lists them). They group the error catalogue's HTTP
 * statuses by what a script would do next, and never change meaning.
 */
export const EXIT = {
  OK: 0,
  /** Anything unexpected (a bug, an answer that is not the API's). */
  FAILURE: 1,
  /** The command line is wrong (unknown command or option, missing argument) or no server is configured. */
  USAGE: 2,
  /** 404: the intent, task, agent... does not exist. */
  NOT_FOUND: 3,
  /** 409, 412, 428: the resource is not in the state the command needs (a version moved, a task already claimed). */
  CONFLICT: 4,
  /** 401, 403: the key is missing, wrong, or not allowed to do this. */
  REFUSED: 5,
  /** 400, 413, 415, 422, 429: the server refused the input. */
  INVALID: 6,
  /** 5xx, or the server could not be reached. */
  UNAVAILABLE: 7,
  /** A write was sent and its answer lost: it may have been applied. Re-read before trying again. */
  OUTCOME_UNKNOWN: 8,
  /** Interrupted (Ctrl-C), as shells count SIGINT. */
  INTERRUPTED: 130,
} as const;

/** A usage mistake found after parsing (an argument that is not JSON, no server configured). */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError) return EXIT.USAGE;
  if (error instanceof DOMException && error.name === "AbortError") return EXIT.INTERRUPTED;
  if (!(error instanceof IntentmeshError)) return EXIT.FAILURE;
  if (error.code === "OUTCOME_UNKNOWN") return EXIT.OUTCOME_UNKNOWN;
  if (error.code === "NETWORK_ERROR" || error.code === "TIMEOUT") return EXIT.UNAVAILABLE;
  if (error.code === "INVALID_RESPONSE") return EXIT.FAILURE;
  const status = error.status;
  if (status === 404) return EXIT.NOT_FOUND;
  if (status === 409 || status === 412 || status === 428) return EXIT.CONFLICT;
  if (status === 401 || status === 403) return EXIT.REFUSED;
  if (status === 410) return EXIT.NOT_FOUND;
  if (status >= 400 && status < 500) return EXIT.INVALID;
  if (status >= 500) return EXIT.UNAVAILABLE;
  return EXIT.FAILURE;
}
