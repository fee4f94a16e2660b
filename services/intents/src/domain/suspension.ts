import { appError } from "@intentmesh/contracts";
import { isoTimestamp, type SuspensionRecord, type SuspensionRequest } from "@intentmesh/contracts";

/**
 * The total deadline of a suspension (spec 2.9): suspended_at + interval_seconds x max_attempts
 * with a retry policy, otherwise suspended_at + timeout_seconds; null when neither bounds it.
 */
export function suspensionDeadline(request: Pick<SuspensionRequest, "retry_policy" | "timeout_seconds">, suspendedAt: Date): Date | null {
  const seconds = request.retry_policy
    ? request.retry_policy.interval_seconds * request.retry_policy.max_attempts
    : request.timeout_seconds;
  return seconds === undefined ? null : new Date(suspendedAt.getTime() + seconds * 1000);
}

/** The record stored in state._suspension: the request, its id, when it began and its deadline. */
export function buildSuspensionRecord(request: SuspensionRequest, id: string, suspendedAt: Date): SuspensionRecord {
  const { retry_policy, fallback_policy, ...rest } = request;
  const deadline = suspensionDeadline(request, suspendedAt);
  return {
    ...rest,
    id,
    ...(retry_policy ? { retry_policy } : {}),
    // fallback_policy is an alias of retry_policy.final_fallback_policy; the contract ensures one is set.
    fallback_policy: (fallback_policy ?? retry_policy?.final_fallback_policy)!,
    suspended_at: isoTimestamp(suspendedAt),
    expires_at: deadline ? isoTimestamp(deadline) : null,
  };
}

export interface DueBeforeConstraint {
  portfolio_id: string;
  due_before: Date;
}

/**
 * Spec 8: a suspension deadline must not exceed the due_before of any portfolio holding the
 * intent. A suspension without a deadline would run past any due_before, so it is refused too.
 * Throws 409 SUSPENSION_PAST_DUE_BEFORE naming the first portfolio (earliest due_before) violated.
 */
export function assertDeadlineWithinDueBefore(intentId: string, deadline: Date | null, constraints: DueBeforeConstraint[]): void {
  const violated = constraints
    .filter((c) => deadline === null || deadline.getTime() > c.due_before.getTime())
    .sort((a, b) => a.due_before.getTime() - b.due_before.getTime())[0];
  if (!violated) return;
  const due = isoTimestamp(violated.due_before);
  const message =
    deadline === null
      ? `intent ${intentId} belongs to portfolio ${violated.portfolio_id}, due before ${due}; a suspension of it needs a deadline (timeout_seconds or retry_policy) no later than that`
      : `the suspension deadline ${isoTimestamp(deadline)} of intent ${intentId} is past the due_before ${due} of portfolio ${violated.portfolio_id}`;
  throw appError("SUSPENSION_PAST_DUE_BEFORE", message, {
    intent_id: intentId,
    portfolio_id: violated.portfolio_id,
    due_before: due,
    expires_at: deadline ? isoTimestamp(deadline) : null,
  });
}
