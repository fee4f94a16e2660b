import { z } from "./zod";
import { ActorId, JsonObject, Timestamp, Uuid, boundedJsonObject, withinBytes } from "./common";
import { command, IfMatch, IntentRef } from "./command";
import { Intent } from "./intents";

/**
 * The whole contract of suspensions (spec 2.9, 4.5) in one place: the records the intents
 * service stores in `state._suspension`, the REST requests and answers (suspend, respond), the
 * governance service's commands behind them, and the bus-only primitives the governance service
 * calls to suspend and resume an intent (`im.intents.suspension.begin` / `.end`). The intents
 * service is the authority on both moves; its routes are in api/suspension.ts.
 */
export const RESPONSE_TYPES = ["choice", "confirm", "text", "form"] as const;
export const FALLBACK_POLICIES = ["fail", "complete_with_fallback", "use_default_and_continue"] as const;
export const SUSPENSION_RESOLUTIONS = ["responded", "expired", "cancelled"] as const;
export const FallbackPolicy = z.enum(FALLBACK_POLICIES);
export const SuspensionResolution = z.enum(SUSPENSION_RESOLUTIONS);

export const SuspensionChoice = z
  .object({
    value: z.string().min(1).max(500),
    label: z.string().min(1).max(500),
    description: z.string().max(2000).optional(),
    style: z.string().max(50).optional(),
    metadata: JsonObject.optional(),
  })
  .strict();

const MAX_SUSPENSION_SECONDS = 365 * 24 * 3600;

/**
 * An escalation step (spec 2.9: after_attempt, channel, notify). The official clients write
 * `{attempt, channel_hint, notify_to}`; both spellings are read (each strict, so the document
 * describes both: a client generator accepts what the server accepts) and stored in the spec's names.
 */
const SpecEscalationStep = z.object({ after_attempt: z.number().int().min(1).max(100), channel: z.string().max(200), notify: z.unknown() }).strict();
const ClientEscalationStep = z
  .object({ attempt: z.number().int().min(1).max(100), channel_hint: z.string().max(200), notify_to: z.unknown() })
  .strict()
  .transform((step) => ({ after_attempt: step.attempt, channel: step.channel_hint, notify: step.notify_to }));
export const EscalationStep = z.union([SpecEscalationStep, ClientEscalationStep]);

export const HumanRetryPolicy = z
  .object({
    max_attempts: z.number().int().min(1).max(100),
    interval_seconds: z.number().int().min(1).max(MAX_SUSPENSION_SECONDS),
    strategy: z.enum(["fixed", "linear", "exponential"]).default("fixed"),
    escalation_ladder: z.array(EscalationStep).max(100).default([]),
    final_fallback_policy: FallbackPolicy.optional(),
  })
  .strict();
export type HumanRetryPolicy = z.infer<typeof HumanRetryPolicy>;

/**
 * What the caller of suspension.begin supplies. The server adds `suspended_at` (its clock),
 * `expires_at` (the total deadline, spec 2.9) and `id` when absent, and takes `fallback_policy`
 * from `retry_policy.final_fallback_policy` when only that one is given.
 */
export const SuspensionRequest = z
  .object({
    id: Uuid.optional(),
    question: z.string().trim().min(1, "question must not be empty").max(5000),
    response_type: z.enum(RESPONSE_TYPES).default("choice"),
    choices: z.array(SuspensionChoice).max(100).optional(),
    context: JsonObject.optional(),
    channel_hint: z.string().max(200).optional(),
    timeout_seconds: z.number().int().min(1).max(MAX_SUSPENSION_SECONDS).optional(),
    fallback_value: z.unknown().optional(),
    fallback_policy: FallbackPolicy.optional(),
    retry_policy: HumanRetryPolicy.optional(),
    confidence_at_suspension: z.number().min(0).max(1).optional(),
    decision_record: JsonObject.optional(),
  })
  .strict()
  .superRefine((record, ctx) => {
    if (record.response_type === "choice" && !record.choices?.length) {
      ctx.addIssue({ code: "custom", path: ["choices"], message: "response_type choice needs at least one choice" });
    }
    const final = record.retry_policy?.final_fallback_policy;
    if (!record.fallback_policy && !final) {
      ctx.addIssue({ code: "custom", path: ["fallback_policy"], message: "fallback_policy is required (or retry_policy.final_fallback_policy)" });
    }
    if (record.fallback_policy && final && record.fallback_policy !== final) {
      ctx.addIssue({ code: "custom", path: ["fallback_policy"], message: "fallback_policy is an alias of retry_policy.final_fallback_policy; they differ" });
    }
  });
export type SuspensionRequest = z.infer<typeof SuspensionRequest>;

/** The record as stored in intent.state._suspension. */
export const SuspensionRecord = z
  .object({
    id: Uuid,
    question: z.string(),
    response_type: z.enum(RESPONSE_TYPES),
    choices: z.array(SuspensionChoice).optional(),
    context: JsonObject.optional(),
    channel_hint: z.string().optional(),
    suspended_at: Timestamp,
    timeout_seconds: z.number().int().optional(),
    expires_at: Timestamp.nullable(),
    fallback_value: z.unknown().optional(),
    fallback_policy: FallbackPolicy,
    retry_policy: HumanRetryPolicy.optional(),
    confidence_at_suspension: z.number().optional(),
    decision_record: JsonObject.optional(),
    response: z.unknown().optional(),
    responded_by: z.string().optional(),
    responded_at: Timestamp.optional(),
    resolution: SuspensionResolution.optional(),
  })
  .openapi("SuspensionRecord");
export type SuspensionRecord = z.infer<typeof SuspensionRecord>;

/**
 * How a suspension ends. `responded` and `cancelled` return the intent to active (intent.resumed);
 * `expired` returns it to active, or to abandoned when `status: "abandoned"` is asked for (the
 * `fail` fallback, spec 3.1), with intent.suspension_expired.
 */
const SuspensionEndFields = {
  suspension_id: Uuid,
  resolution: SuspensionResolution,
  response: z.unknown().optional(),
  responded_by: ActorId.optional(),
  status: z.enum(["active", "abandoned"]).default("active"),
};

/** The rules of an end that a schema alone cannot say; shared by every schema carrying the fields. */
function refineEnd(end: { resolution: string; response?: unknown; status: string; validate_response?: boolean }, ctx: z.RefinementCtx): void {
  // An end that holds the response to the record answers a missing one itself (422 INVALID_RESPONSE_VALUE).
  if (end.resolution === "responded" && end.response === undefined && !end.validate_response) {
    ctx.addIssue({ code: "custom", path: ["response"], message: "a responded suspension carries the response" });
  }
  if (end.status === "abandoned" && end.resolution !== "expired") {
    ctx.addIssue({ code: "custom", path: ["status"], message: "only an expired suspension may abandon the intent" });
  }
}

export const SuspensionEnd = z.object(SuspensionEndFields).strict().superRefine(refineEnd);
export type SuspensionEnd = z.infer<typeof SuspensionEnd>;

/**
 * The input of im.intents.suspension.end: the intent, an optional If-Match, and the end itself.
 * `validate_response`: the response is an answer to be held to the waiting record's response_type
 * (spec 2.9; 422 INVALID_RESPONSE_VALUE, after the status and id checks, under the intent's row
 * lock), as POST /intents/{id}/suspend/respond asks.
 */
export const SuspensionEndInput = z
  .object({ intent_id: Uuid, if_match: z.number().int().nullable().default(null), ...SuspensionEndFields, validate_response: z.boolean().default(false) })
  .strict()
  .superRefine(refineEnd);
export type SuspensionEndInput = z.infer<typeof SuspensionEndInput>;

/** Fields of a record the server sets itself; a client's own copy of them is dropped, not trusted. */
const SERVER_SET_SUSPENSION_FIELDS = ["suspended_at", "expires_at", "response", "responded_at", "responded_by", "resolution"];

/**
 * The value of the official clients' `set _suspension` state patch (CLIENTS.md §1: status change,
 * then this patch, then an intent.suspended event). It is read as a SuspensionRequest: the
 * server computes suspended_at and expires_at on its own clock, as for POST /intents/{id}/suspend.
 */
export const AdoptedSuspension = z.preprocess((value) => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    if (!SERVER_SET_SUSPENSION_FIELDS.includes(key) && member !== null) copy[key] = member;
  }
  return copy;
}, SuspensionRequest);

// What the commands answer (each command carries its output schema).
export const SuspensionResponse = z
  .object({ intent_id: Uuid, suspension_id: Uuid, resolution: z.string(), responded_by: z.string(), responded_at: Timestamp })
  .passthrough()
  .openapi("SuspensionResponse");

/** A record that is still waiting for its answer (absent or resolved records are not). */
export function activeRecord(state: Record<string, unknown>): SuspensionRecord | undefined {
  const record = state._suspension as SuspensionRecord | undefined;
  return record && typeof record === "object" && !record.resolution ? record : undefined;
}

/** POST /intents/{id}/suspend/respond (spec 4.5). suspension_id is checked by the handler: missing or empty is 422. */
export const RespondBody = z
  .object({
    suspension_id: z.string().max(200).optional(),
    value: z.unknown().optional(),
    responded_by: ActorId.optional(),
    metadata: boundedJsonObject().optional(),
  })
  .strict()
  // Not "SuspensionResponse": that is the 200 body's component (responses.ts); one name for two
  // schemas made the document describe this request as the response.
  .openapi("SuspensionRespond");
export type RespondBody = z.infer<typeof RespondBody>;

/** InputResponse (spec 2.9), the 200 body of respond. */
export interface InputResponse {
  intent_id: string;
  suspension_id: string;
  resolution: "responded";
  value: unknown;
  choice_label?: string;
  choice_description?: string;
  responded_by: string;
  responded_at: string;
  metadata?: Record<string, unknown>;
}


/** The REST surface, served by the governance service (which times suspensions out). */
export const suspensionRequestCommands = {
  suspend: command("governance", "suspend", IntentRef.merge(IfMatch).extend({ body: withinBytes(SuspensionRequest) }), Intent, ["INTENT_NOT_FOUND", "INVALID_TRANSITION", "VERSION_MISMATCH"]),
  respond: command("governance", "respond", IntentRef.extend({ body: RespondBody }), SuspensionResponse, ["INTENT_NOT_FOUND", "INVALID_RESPONSE_VALUE", "NOT_SUSPENDED", "SUSPENSION_ID_REQUIRED", "SUSPENSION_MISMATCH"]),
} as const;

/**
 * Bus-only primitives (no HTTP route) for the governance service: suspend an active intent
 * (state._suspension written, status suspended_awaiting_input, intent.suspended) and end that
 * suspension (intent.resumed or intent.suspension_expired). Both emit status_changed.
 */
export const suspensionCommands = {
  begin: command(
    "intents",
    "suspension.begin",
    IntentRef.extend({ if_match: z.number().int().nullable().default(null), suspension: withinBytes(SuspensionRequest) }),
    Intent,
    ["INTENT_NOT_FOUND", "INVALID_TRANSITION", "SUSPENSION_PAST_DUE_BEFORE", "VERSION_MISMATCH", "SUSPENSION_ACTIVE"],
  ),
  end: command("intents", "suspension.end", withinBytes(SuspensionEndInput), Intent, ["INTENT_NOT_FOUND", "INVALID_RESPONSE_VALUE", "NOT_SUSPENDED", "SUSPENSION_MISMATCH", "VERSION_MISMATCH"]),
} as const;
