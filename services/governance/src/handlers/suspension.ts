import {
  AppError,
  intentsCommands,
  suspensionCommands,
  type Caller,
  type InputResponse,
  type Intent,
  type RespondBody,
  type SuspensionRecord,
  type SuspensionRequest,
} from "@intentmesh/contracts";
import type { GovernanceContext } from "../context";
import { validateResponseValue } from "../domain/response";
import { endTracking, trackSuspension } from "../tracking";
import { assertHumanRole } from "./access";

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
  await trackSuspension(ctx.db, intent.id, intent.state._suspension as SuspensionRecord, ctx.clock.now());
  return intent;
}

/**
 * POST /intents/{id}/suspend/respond (spec 4.5, part 7). The checks read the intent; the end
 * itself is the intents primitive, which checks the status and the id again under the row lock,
 * so of two answers (or an answer and the timeout) exactly one wins and the other is 409.
 */
export async function respond(ctx: GovernanceContext, input: { intent_id: string; body: RespondBody }, caller: Caller): Promise<InputResponse> {
  assertHumanRole(caller, "answer a suspension");
  const { body } = input;
  if (!body.suspension_id || body.suspension_id.trim() === "") {
    throw new AppError("SUSPENSION_ID_REQUIRED", 422, "suspension_id is required and must not be empty", { field: "suspension_id" });
  }
  const intent = await ctx.client.request(intentsCommands.get, caller, { intent_id: input.intent_id });
  if (intent.status !== "suspended_awaiting_input") {
    throw new AppError("NOT_SUSPENDED", 409, `intent ${intent.id} is ${intent.status}, not suspended_awaiting_input`, { status: intent.status });
  }
  const record = intent.state._suspension as SuspensionRecord | undefined;
  // The active id is never echoed: it is a capability (spec 5.5).
  if (!record || record.resolution || record.id !== body.suspension_id.trim().toLowerCase()) {
    throw new AppError("SUSPENSION_MISMATCH", 409, `suspension ${body.suspension_id} is not the active suspension of intent ${intent.id}`, { suspension_id: body.suspension_id });
  }
  const matched = validateResponseValue(record, body.value);
  const respondedBy = body.responded_by ?? caller.actor;
  const ended = await ctx.client.request(suspensionCommands.end, caller, {
    intent_id: intent.id,
    suspension_id: record.id,
    resolution: "responded",
    response: body.value,
    responded_by: respondedBy,
  });
  await endTracking(ctx.db, record.id, "responded", ctx.clock.now());
  const stored = ended.state._suspension as SuspensionRecord;
  return {
    intent_id: intent.id,
    suspension_id: record.id,
    resolution: "responded",
    value: body.value,
    ...matched,
    responded_by: respondedBy,
    responded_at: stored.responded_at!,
    ...(body.metadata ? { metadata: body.metadata } : {}),
  };
}
