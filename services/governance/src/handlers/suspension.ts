import { appError, type Caller, type InputResponse, type Intent, isAppError, type RespondBody, suspensionCommands, type SuspensionRecord, type SuspensionRequest, Uuid, validateResponseValue } from "@intentmesh/contracts";
import type { GovernanceContext } from "../context";
import { endTracking, trackSuspension } from "../tracking";

/**
 * The platform default human retry policy (cascade level 3, spec 4.5) applies to a request that
 * says nothing about time: no retry_policy and no timeout_seconds. A timeout_seconds alone is
 * the call site's own single-attempt policy (spec 2.9: no retry_policy, single attempt).
 */
export function withPlatformDefault(request: SuspensionRequest, platform: GovernanceContext["defaultRetryPolicy"]): SuspensionRequest {
  if (!platform || request.retry_policy || request.timeout_seconds !== undefined) return request;
  return { ...request, retry_policy: { ...platform, final_fallback_policy: request.fallback_policy ?? platform.final_fallback_policy } };
}

/**
 * POST /intents/{id}/suspend. The intents service checks the caller's `write` permission and
 * commits the whole move in one transaction (state._suspension with suspended_at and expires_at
 * on the server clock, status, version, intent.suspended, blocked tasks, the portfolio
 * due_before check); then the suspension is tracked here for its timeouts (the consumer of
 * intent.suspended would track it too, a few milliseconds later; tracking is idempotent).
 */
export async function suspend(ctx: GovernanceContext, input: { intent_id: string; if_match: number | null; body: SuspensionRequest }, caller: Caller): Promise<Intent> {
  const request = withPlatformDefault(input.body, ctx.defaultRetryPolicy);
  const intent = await ctx.client.request(suspensionCommands.begin, caller, { intent_id: input.intent_id, if_match: input.if_match, suspension: request });
  const record = intent.state._suspension as SuspensionRecord;
  // Unless the tracker, following intent.suspended, got there first (tracking.ts).
  if (!ctx.settled.isTracked(record.id)) {
    await trackSuspension(ctx.db, intent.id, record, ctx.clock.now());
    ctx.settled.tracked(record.id);
  }
  return intent;
}

/** Names no suspension: what an answer naming something that is not a suspension id asks the intents service to end. */
const NO_SUSPENSION = "00000000-0000-0000-0000-000000000000";

/**
 * POST /intents/{id}/suspend/respond (spec 4.5, part 7). The intents service is the authority on
 * ending a suspension and decides everything in one step under the intent's row lock: the
 * caller's `write` permission (403), that the intent is suspended (409 NOT_SUSPENDED), that the id
 * is the waiting suspension's (409 SUSPENSION_MISMATCH), and that the value fits the record's
 * response_type (422 INVALID_RESPONSE_VALUE, validate_response), so of two answers (or an answer
 * and the timeout) exactly one wins and the others get 409. This side reads nothing first; it
 * answers with the matched choice read from the ended record.
 */
export async function respond(
  ctx: GovernanceContext,
  input: { intent_id: string; body: RespondBody },
  caller: Caller,
  /** The route's permission, asked of the intents service only where this side refuses on its own. */
  assertMayRespond: () => Promise<void>,
): Promise<InputResponse> {
  const { body } = input;
  if (!body.suspension_id || body.suspension_id.trim() === "") {
    await assertMayRespond();
    throw appError("SUSPENSION_ID_REQUIRED", "suspension_id is required and must not be empty", { field: "suspension_id" });
  }
  const named = body.suspension_id.trim().toLowerCase();
  const respondedBy = body.responded_by ?? caller.actor;
  let ended: Intent;
  try {
    ended = await ctx.client.request(suspensionCommands.end, caller, {
      intent_id: input.intent_id,
      suspension_id: Uuid.safeParse(named).success ? named : NO_SUSPENSION,
      resolution: "responded",
      // Held to the waiting record there: a missing value is its 422, after the 409s.
      ...(body.value !== undefined ? { response: body.value } : {}),
      responded_by: respondedBy,
      validate_response: true,
    });
  } catch (error) {
    if (isAppError(error) && error.code === "SUSPENSION_MISMATCH") {
      // The active id is never echoed (it is a capability, spec 5.5): the refusal names the id as written.
      throw appError("SUSPENSION_MISMATCH", `suspension ${body.suspension_id} is not the active suspension of intent ${input.intent_id}`, { suspension_id: body.suspension_id });
    }
    throw error;
  }
  // Unless the tracker, following intent.resumed, got there first (tracking.ts).
  if (!ctx.settled.isEnded(named) && (await endTracking(ctx.db, named, "responded", ctx.clock.now()))) ctx.settled.ended(named);
  const stored = ended.state._suspension as SuspensionRecord;
  return {
    intent_id: ended.id,
    suspension_id: stored.id,
    resolution: "responded",
    value: body.value,
    ...validateResponseValue(stored, body.value),
    responded_by: respondedBy,
    responded_at: stored.responded_at!,
    ...(body.metadata ? { metadata: body.metadata } : {}),
  };
}
