import { activeRecord, appError, type Caller, type InputResponse, type Intent, intentsCommands, isAppError, type RespondBody, suspensionCommands, type SuspensionRecord, type SuspensionRequest, Uuid } from "@intentmesh/contracts";
import type { GovernanceContext } from "../context";
import { validateResponseValue } from "../domain/response";
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
 * POST /intents/{id}/suspend. The intents service commits the whole move in one transaction
 * (state._suspension with suspended_at and expires_at on the server clock, status, version,
 * intent.suspended, blocked tasks, the portfolio due_before check); then the suspension is
 * tracked here for its timeouts (the consumer of intent.suspended would track it too, a few
 * milliseconds later; tracking is idempotent).
 */
export async function suspend(ctx: GovernanceContext, input: { intent_id: string; if_match: number | null; body: SuspensionRequest }, caller: Caller): Promise<Intent> {
  const request = withPlatformDefault(input.body, ctx.defaultRetryPolicy);
  const intent = await ctx.client.request(suspensionCommands.begin, caller, { intent_id: input.intent_id, if_match: input.if_match, suspension: request });
  const record = intent.state._suspension as SuspensionRecord;
  await trackSuspension(ctx.db, intent.id, record, ctx.clock.now());
  ctx.settled.tracked(record.id);
  return intent;
}

/** Names no suspension: what an answer naming something that is not a suspension id asks the intents service to end. */
const NO_SUSPENSION = "00000000-0000-0000-0000-000000000000";

/** How many times an answer is tried when the intent moved between reading it and ending its suspension. */
const RESPOND_ATTEMPTS = 3;

/**
 * POST /intents/{id}/suspend/respond (spec 4.5, part 7). The intents service is the authority on
 * ending a suspension: it checks, under the intent's row lock, that the intent is suspended and
 * that the id is the waiting suspension's, so of two answers (or an answer and the timeout)
 * exactly one wins and the other is 409. This side reads the intent only to hold the value to the
 * waiting record's response_type (422 before anything moves) and decides nothing about status or
 * id: when no waiting record carries the id, the end is still asked, pinned to the version read,
 * and the intents service's refusal is the answer (NOT_SUSPENDED, or SUSPENSION_MISMATCH naming
 * the id as the responder wrote it). If the intent moved since it was read, it is read again.
 */
export async function respond(ctx: GovernanceContext, input: { intent_id: string; body: RespondBody }, caller: Caller): Promise<InputResponse> {
  const { body } = input;
  if (!body.suspension_id || body.suspension_id.trim() === "") {
    throw appError("SUSPENSION_ID_REQUIRED", "suspension_id is required and must not be empty", { field: "suspension_id" });
  }
  const named = body.suspension_id.trim().toLowerCase();
  const respondedBy = body.responded_by ?? caller.actor;
  for (let attempt = 1; ; attempt++) {
    const intent = await ctx.client.request(intentsCommands.get, caller, { intent_id: input.intent_id });
    const waiting = intent.status === "suspended_awaiting_input" ? activeRecord(intent.state) : undefined;
    const record = waiting?.id === named ? waiting : undefined;
    const matched = record ? validateResponseValue(record, body.value) : {};
    let ended: Intent;
    try {
      ended = await ctx.client.request(suspensionCommands.end, caller, {
        intent_id: intent.id,
        suspension_id: record?.id ?? (Uuid.safeParse(named).success ? named : NO_SUSPENSION),
        resolution: "responded",
        // Without a waiting record the end is refused whatever it carries; the value is held to its type above.
        response: record ? body.value : (body.value ?? null),
        responded_by: respondedBy,
        ...(record ? {} : { if_match: intent.version }),
      });
    } catch (error) {
      if (!record && isAppError(error) && error.code === "VERSION_MISMATCH" && attempt < RESPOND_ATTEMPTS) continue;
      if (isAppError(error) && error.code === "SUSPENSION_MISMATCH") {
        // The active id is never echoed (it is a capability, spec 5.5): the refusal names the id as written.
        throw appError("SUSPENSION_MISMATCH", `suspension ${body.suspension_id} is not the active suspension of intent ${intent.id}`, { suspension_id: body.suspension_id });
      }
      throw error;
    }
    if (await endTracking(ctx.db, named, "responded", ctx.clock.now())) ctx.settled.ended(named);
    const stored = ended.state._suspension as SuspensionRecord;
    return {
      intent_id: intent.id,
      suspension_id: stored.id,
      resolution: "responded",
      value: body.value,
      ...matched,
      responded_by: respondedBy,
      responded_at: stored.responded_at!,
      ...(body.metadata ? { metadata: body.metadata } : {}),
    };
  }
}
