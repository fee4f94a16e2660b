import { NON_RETRYABLE_ERROR_CODES, type RetryStrategy } from "@intentmesh/contracts";

/**
 * Retry rules of spec 2.8: the delay before retry n, and what a failure leads to.
 *
 * Attempts count from 1 (the first try). After attempt n fails, retry n follows if the policy
 * has one left: max_retries = 3 allows attempts 1 to 4, so the failures of attempts 1, 2 and 3
 * schedule retries and the failure of attempt 4 (attempt_number > max_retries) exhausts them.
 */
export interface RetryRules {
  strategy: RetryStrategy;
  max_retries: number;
  base_delay_ms: number;
  max_delay_ms: number;
  failure_threshold: number;
}

/** Exponents past this already exceed any allowed max_delay_ms; capping it keeps the arithmetic finite. */
const MAX_EXPONENT = 52;

/**
 * The delay before the retry that follows failed attempt `attempt` (1-based), capped at
 * max_delay_ms; null for strategy none. With base 1 s: fixed 1,1,1; exponential 1,2,4,8;
 * linear 1,2,3,4.
 */
export function retryDelayMs(rules: Pick<RetryRules, "strategy" | "base_delay_ms" | "max_delay_ms">, attempt: number): number | null {
  const base = rules.base_delay_ms;
  let delay: number;
  switch (rules.strategy) {
    case "none":
      return null;
    case "fixed":
      delay = base;
      break;
    case "exponential":
      delay = base * 2 ** Math.min(attempt - 1, MAX_EXPONENT);
      break;
    case "linear":
      delay = base * attempt;
      break;
  }
  return Math.min(delay, rules.max_delay_ms);
}

/** Why no retry follows a failure. */
export type NoRetryReason =
  /** BUDGET_EXCEEDED: not retryable and needs a human; another agent would spend from the same budget. */
  | "needs_human"
  /** PERMISSION_DENIED: not retryable by this agent; another agent may hold the permission. */
  | "not_retryable"
  | "strategy_none"
  | "retries_exhausted"
  | "failure_threshold";

export interface FailureDecision {
  /** Whether another attempt may follow. */
  retryAllowed: boolean;
  /** The server's delay before that attempt; null when it schedules none (no retry, or no policy). */
  delayMs: number | null;
  /** Whether the failing agent's leases pass to the policy's fallback agent (when it has one). */
  handOver: boolean;
  reason: NoRetryReason | null;
}

/**
 * What a failure leads to. `unresolvedFailures` counts the failing agent's unresolved failures
 * on the intent, this one included. Without a policy the server schedules nothing and hands
 * nothing over; the non-retryable codes still forbid a retry.
 */
export function decideAfterFailure(input: {
  policy: RetryRules | null;
  attemptNumber: number;
  errorCode: string;
  unresolvedFailures: number;
}): FailureDecision {
  const { policy, attemptNumber, errorCode, unresolvedFailures } = input;
  const stop = (reason: NoRetryReason, handOver: boolean): FailureDecision => ({ retryAllowed: false, delayMs: null, handOver: handOver && policy !== null, reason });
  if (errorCode === "BUDGET_EXCEEDED") return stop("needs_human", false);
  if (NON_RETRYABLE_ERROR_CODES.includes(errorCode)) return stop("not_retryable", true);
  if (!policy) return { retryAllowed: true, delayMs: null, handOver: false, reason: null };
  if (policy.strategy === "none") return stop("strategy_none", true);
  if (attemptNumber > policy.max_retries) return stop("retries_exhausted", true);
  if (unresolvedFailures >= policy.failure_threshold) return stop("failure_threshold", true);
  return { retryAllowed: true, delayMs: retryDelayMs(policy, attemptNumber), handOver: false, reason: null };
}
