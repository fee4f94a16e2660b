import type { HumanRetryPolicy, SuspensionRecord } from "@intentmesh/contracts";

/**
 * When a waiting suspension next needs the server (spec 2.9, 3.5), as pure arithmetic.
 *
 * - Without a retry policy: one attempt; the final fallback runs at expires_at
 *   (suspended_at + timeout_seconds); no deadline, no timer.
 * - With one: attempt k lasts the strategy's window (fixed: interval; linear: interval x k;
 *   exponential: interval x 2^(k-1)). When attempt k ends unanswered and k < max_attempts,
 *   attempt k + 1 begins (intent.suspension_renotified) and the escalation steps with
 *   after_attempt = k run (intent.suspension_escalated). The final fallback runs at expires_at,
 *   the spec's total deadline (suspended_at + interval x max_attempts), whatever the strategy: an
 *   attempt that would begin at or after it is not made.
 */
export type Policy = Pick<HumanRetryPolicy, "max_attempts" | "interval_seconds" | "strategy" | "escalation_ladder">;

export function attemptWindowSeconds(policy: Pick<Policy, "interval_seconds" | "strategy">, attempt: number): number {
  switch (policy.strategy) {
    case "linear":
      return policy.interval_seconds * attempt;
    case "exponential":
      return policy.interval_seconds * 2 ** (attempt - 1);
    default:
      return policy.interval_seconds;
  }
}

/** When attempt `attempt` began: suspended_at plus the windows of the attempts before it. */
export function attemptStart(policy: Policy, suspendedAt: Date, attempt: number): Date {
  let ms = suspendedAt.getTime();
  for (let k = 1; k < attempt; k++) ms += attemptWindowSeconds(policy, k) * 1000;
  return new Date(ms);
}

/** The moment the server must act next for a suspension in attempt `attempt`; null when nothing will ever be due. */
export function nextDueAt(record: Pick<SuspensionRecord, "retry_policy" | "suspended_at" | "expires_at">, attempt: number): Date | null {
  const expiresAt = record.expires_at ? new Date(record.expires_at) : null;
  const policy = record.retry_policy;
  if (!policy || attempt >= policy.max_attempts) return expiresAt;
  const end = new Date(attemptStart(policy, new Date(record.suspended_at), attempt).getTime() + attemptWindowSeconds(policy, attempt) * 1000);
  return expiresAt && end.getTime() >= expiresAt.getTime() ? expiresAt : end;
}

export type DueStep =
  | { kind: "renotify"; attempt: number; escalations: Array<{ after_attempt: number; channel: string; notify: unknown }>; nextDueAt: Date | null }
  | { kind: "final" };

/**
 * What is due for a suspension in attempt `attempt` at its due time: the next attempt (with the
 * escalations of the one that passed) or the final fallback.
 */
export function dueStep(record: Pick<SuspensionRecord, "retry_policy" | "suspended_at" | "expires_at">, attempt: number): DueStep {
  const policy = record.retry_policy;
  const due = nextDueAt(record, attempt);
  const expiresAt = record.expires_at ? new Date(record.expires_at).getTime() : null;
  if (!policy || !due || (expiresAt !== null && due.getTime() >= expiresAt)) return { kind: "final" };
  const next = attempt + 1;
  return {
    kind: "renotify",
    attempt: next,
    escalations: (policy.escalation_ladder ?? []).filter((step) => step.after_attempt === attempt) as Array<{ after_attempt: number; channel: string; notify: unknown }>,
    nextDueAt: nextDueAt(record, next),
  };
}
