import { activeRecord, appError, isoTimestamp, type IntentStatus, type JsonObject, type SuspensionEndInput, type SuspensionRecord, type SuspensionRequest } from "@intentmesh/contracts";

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

/**
 * The moves of suspension that table 3.1 does not spell out, as pure decisions: which status the
 * intent must be in, which record must be waiting, and what the record keeps when it ends. The
 * handlers read the intent under its lock, ask these, and write what they answer.
 */
export const SUSPENDED: IntentStatus = "suspended_awaiting_input";

/**
 * active -> suspended_awaiting_input, the only way in. `via` is how it was asked: begun by the
 * governance service (409 names the status it may start from) or through POST /status, where
 * the transition table's own answer lists what the client may do next (nothing, from here).
 */
export function assertMaySuspend(intentId: string, status: IntentStatus, via: "begin" | "status"): void {
  if (status === "active") return;
  throw appError("INVALID_TRANSITION", `only an active intent can be suspended; intent ${intentId} is ${status}`, {
    from: status,
    to: SUSPENDED,
    ...(via === "begin" ? { allowed_from: ["active"] } : { allowed: [] }),
  });
}

/**
 * Ending a suspension: the intent must be suspended and the suspension named must be the one
 * waiting (its id is not echoed back: it is a capability, spec 5.5). Answers the waiting record.
 */
export function suspensionToEnd(intentId: string, status: IntentStatus, state: JsonObject, suspensionId: string): SuspensionRecord {
  if (status !== SUSPENDED) {
    throw appError("NOT_SUSPENDED", `intent ${intentId} is ${status}, not suspended_awaiting_input`, { status });
  }
  // Only the waiting record may end: one already resolved is not the active suspension.
  const active = activeRecord(state);
  if (!active || active.id !== suspensionId) {
    throw appError("SUSPENSION_MISMATCH", `suspension ${suspensionId} is not the active suspension of intent ${intentId}`, { suspension_id: suspensionId });
  }
  return active;
}

/**
 * What the ended record keeps: the response and its responder when answered; the fallback_value
 * as the response when an expiry continues with it (spec 2.10), with no responder; nothing more
 * when cancelled. `responded` is also what intent.resumed carries.
 */
export function endedRecord(
  active: SuspensionRecord,
  end: Pick<SuspensionEndInput, "resolution" | "response" | "responded_by">,
  actor: string,
  now: Date,
): { record: SuspensionRecord; responded: { response?: unknown; responded_by?: string; responded_at?: string } } {
  const responded =
    end.resolution === "responded"
      ? { response: end.response, responded_by: end.responded_by ?? actor, responded_at: isoTimestamp(now) }
      : end.resolution === "expired" && end.response !== undefined
        ? { response: end.response }
        : {};
  return { record: { ...active, ...responded, resolution: end.resolution }, responded };
}

/**
 * Step 2 of the clients' sequence (`set _suspension`): only on an intent suspended through
 * POST /status and still without a waiting record; `_suspension` is the server's otherwise.
 */
export function assertMayAdoptRecord(intentId: string, status: IntentStatus, state: JsonObject): void {
  if (status !== SUSPENDED) {
    throw appError("PATCH_FAILED", `_suspension is managed by the server; it may be set only on a suspended intent awaiting its record (intent ${intentId} is ${status})`, {
      index: 0,
      op: "set",
      path: "_suspension",
    });
  }
  if (activeRecord(state)) {
    throw appError("SUSPENSION_ACTIVE", `intent ${intentId} already has a waiting suspension; answer or cancel it first`, { intent_id: intentId });
  }
}

/**
 * suspended_awaiting_input -> abandoned through POST /status: the waiting record, if any, is
 * cancelled (spec 3.5). Answers the state to write and the record that was cancelled.
 */
export function cancelledByAbandon(intentId: string, status: IntentStatus, state: JsonObject): { state: JsonObject; cancelled: SuspensionRecord | undefined } {
  if (status !== SUSPENDED) {
    throw appError("INVALID_TRANSITION", `intent ${intentId} is ${status}, not suspended_awaiting_input`, { from: status, to: "abandoned" });
  }
  const active = activeRecord(state);
  return { state: active ? { ...state, _suspension: { ...active, resolution: "cancelled" } } : state, cancelled: active };
}
