import { z } from "./zod";
import { ActorId, JsonObject, Timestamp, Uuid, boundedJsonObject, pageLimit, seqCursor } from "./common";
import { command, IfMatch, IntentRef } from "./command";
import { RecordCostBody } from "./costs";

/**
 * Retry policies and failure records (spec 2.8, 4.4). The delays and the decision to hand over
 * to a fallback agent are computed by the intents service (services/intents/src/failures/retry-delay.ts).
 */

export const RETRY_STRATEGIES = ["none", "fixed", "exponential", "linear"] as const;
export const RetryStrategy = z.enum(RETRY_STRATEGIES);
export type RetryStrategy = z.infer<typeof RetryStrategy>;

/** Ceilings that keep every value inside a PostgreSQL integer and a sane range. */
export const MAX_RETRIES_LIMIT = 1000;
export const MAX_RETRY_DELAY_MS = 7 * 24 * 3600 * 1000;
export const MAX_FAILURE_THRESHOLD = 1000;

/** Defaults for fields a PUT leaves out (a PUT replaces the whole policy; omitted fields are not kept from before). */
export const RETRY_POLICY_DEFAULTS = {
  strategy: "exponential" as RetryStrategy,
  max_retries: 3,
  base_delay_ms: 1000,
  /** At least the base delay. */
  max_delay_ms: 60_000,
  fallback_agent_id: null as string | null,
  // failure_threshold defaults to max_retries + 1: the failure that exhausts the retries.
};

export const RetryPolicy = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    strategy: RetryStrategy,
    max_retries: z.number().int(),
    base_delay_ms: z.number().int(),
    max_delay_ms: z.number().int(),
    fallback_agent_id: z.string().nullable(),
    failure_threshold: z.number().int(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("RetryPolicy");
export type RetryPolicy = z.infer<typeof RetryPolicy>;

export const PutRetryPolicyBody = z
  .object({
    strategy: RetryStrategy.optional().openapi({ description: "default exponential" }),
    max_retries: z.number().int().min(0).max(MAX_RETRIES_LIMIT).optional().openapi({ description: "retries after the first attempt; default 3" }),
    base_delay_ms: z.number().int().min(0).max(MAX_RETRY_DELAY_MS).optional().openapi({ description: "default 1000" }),
    max_delay_ms: z
      .number()
      .int()
      .min(0)
      .max(MAX_RETRY_DELAY_MS)
      .optional()
      .openapi({ description: "cap of every delay, at least base_delay_ms; default the larger of 60000 and base_delay_ms" }),
    fallback_agent_id: ActorId.nullable().optional().openapi({ description: "agent that takes over when retries are exhausted; default null" }),
    failure_threshold: z
      .number()
      .int()
      .min(1)
      .max(MAX_FAILURE_THRESHOLD)
      .optional()
      .openapi({ description: "unresolved failures of one agent that hand over to the fallback; default max_retries + 1" }),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.max_delay_ms !== undefined && body.max_delay_ms < (body.base_delay_ms ?? RETRY_POLICY_DEFAULTS.base_delay_ms)) {
      ctx.addIssue({
        code: "custom",
        path: ["max_delay_ms"],
        message: `max_delay_ms must be at least base_delay_ms (${body.base_delay_ms ?? RETRY_POLICY_DEFAULTS.base_delay_ms})`,
      });
    }
  })
  .transform((body) => {
    const maxRetries = body.max_retries ?? RETRY_POLICY_DEFAULTS.max_retries;
    const baseDelay = body.base_delay_ms ?? RETRY_POLICY_DEFAULTS.base_delay_ms;
    return {
      strategy: body.strategy ?? RETRY_POLICY_DEFAULTS.strategy,
      max_retries: maxRetries,
      base_delay_ms: baseDelay,
      max_delay_ms: body.max_delay_ms ?? Math.max(RETRY_POLICY_DEFAULTS.max_delay_ms, baseDelay),
      fallback_agent_id: body.fallback_agent_id ?? null,
      failure_threshold: body.failure_threshold ?? Math.min(maxRetries + 1, MAX_FAILURE_THRESHOLD),
    };
  })
  .openapi("PutRetryPolicy");
export type PutRetryPolicyBody = z.output<typeof PutRetryPolicyBody>;

/** The failure codes of spec 2.8. Others are accepted and treated as retryable. */
export const FAILURE_ERROR_CODES = ["RATE_LIMIT", "TIMEOUT", "NETWORK_ERROR", "INVALID_OUTPUT", "BUDGET_EXCEEDED", "PERMISSION_DENIED"] as const;
/** The code of a failure recorded without one. */
export const UNKNOWN_ERROR_CODE = "UNKNOWN";
/** Codes that never schedule a retry (spec 2.8: "not retryable"). */
export const NON_RETRYABLE_ERROR_CODES: readonly string[] = ["BUDGET_EXCEEDED", "PERMISSION_DENIED"];

/**
 * The cost of a failed attempt (spec 2.8: failed attempts still record costs): a cost body of
 * POST /costs, recorded for the failing agent in the failure's transaction.
 */
export const FailureCost = RecordCostBody;
export type FailureCost = z.output<typeof FailureCost>;

export const RecordFailureBody = z
  .object({
    agent_id: ActorId.optional().openapi({ description: "the failing agent; default the acting agent (X-Agent-ID or the key's principal)" }),
    task_id: Uuid.optional().openapi({ description: "the task of the intent that failed; its retry policy, when it has one, overrides the intent's" }),
    attempt_number: z.number().int().min(1).max(1_000_000).openapi({ description: "the attempt that failed, from 1" }),
    // Spec 2.8 types both as strings; the official Python client sends null when its caller gave
    // none, which reads as UNKNOWN (a retryable code, like any code 2.8 does not list) and "".
    error_code: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[^\s]+$/, "must not contain whitespace")
      .nullable()
      .default(UNKNOWN_ERROR_CODE)
      .transform((code) => code ?? UNKNOWN_ERROR_CODE)
      .openapi({ description: `${FAILURE_ERROR_CODES.join(", ")}; others are accepted and treated as retryable; null or omitted: ${UNKNOWN_ERROR_CODE}` }),
    error_message: z
      .string()
      .max(10_000)
      .nullable()
      .default("")
      .transform((message) => message ?? ""),
    // Python's datetime.isoformat() of a naive datetime has no offset: read as UTC, as the
    // clients' own timestamps are.
    retry_scheduled_at: z.iso
      .datetime({ offset: true, local: true })
      .transform((at) => (/(Z|[+-]\d\d:?\d\d)$/i.test(at) ? at : `${at}Z`))
      .nullable()
      .optional()
      .openapi({ description: "omitted: computed from the retry policy; null: no retry; without an offset: UTC" }),
    metadata: boundedJsonObject(16 * 1024).default({}),
    cost: FailureCost.optional().openapi({
      description: "the cost of the failed attempt, recorded as a cost record of the failing agent (its agent_id, when given, must name that agent)",
    }),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (NON_RETRYABLE_ERROR_CODES.includes(body.error_code) && body.retry_scheduled_at) {
      ctx.addIssue({ code: "custom", path: ["retry_scheduled_at"], message: `${body.error_code} is not retryable; retry_scheduled_at must be null or omitted` });
    }
  })
  .openapi("RecordFailure");
export type RecordFailureBody = z.output<typeof RecordFailureBody>;

export const FailureRecord = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    agent_id: z.string(),
    task_id: Uuid.nullable(),
    attempt_number: z.number().int(),
    error_code: z.string(),
    error_message: z.string(),
    retry_scheduled_at: Timestamp.nullable(),
    resolved_at: Timestamp.nullable().openapi({ description: "set when the work passed to the fallback agent" }),
    metadata: JsonObject,
    retries_exhausted: z.boolean().openapi({ description: "no retry is allowed after this failure (policy exhausted, threshold reached or not retryable)" }),
    fallback_agent_id: z.string().nullable().openapi({ description: "the agent that took over because of this failure, else null" }),
    cost_id: Uuid.nullable().openapi({ description: "the cost record of the failed attempt, when the failure carried a cost" }),
    created_at: Timestamp,
  })
  .openapi("FailureRecord");
export type FailureRecord = z.infer<typeof FailureRecord>;

/** The most failures one read returns; a longer history is read in pages (next_cursor). */
export const MAX_FAILURE_PAGE = 1000;

export const ListFailuresQuery = z.object({
  agent_id: z.string().optional().openapi({ description: "only the failures of this agent" }),
  after: seqCursor("failures recorded"),
  limit: pageLimit(MAX_FAILURE_PAGE, MAX_FAILURE_PAGE),
});
export type ListFailuresQuery = z.infer<typeof ListFailuresQuery>;

export const FailureList = z
  .object({
    failures: z.array(FailureRecord),
    next_cursor: z.string().openapi({ description: "pass as `after` for the failures recorded after this page" }),
    has_more: z.boolean(),
  })
  .openapi("FailureList");

export const retryCommands = {
  putPolicy: command("intents", "retry_policy.put", IntentRef.merge(IfMatch).extend({ body: PutRetryPolicyBody }), RetryPolicy, ["INTENT_NOT_FOUND", "VERSION_MISMATCH"]),
  getPolicy: command("intents", "retry_policy.get", IntentRef, RetryPolicy, ["INTENT_NOT_FOUND", "RETRY_POLICY_NOT_FOUND"]),
  recordFailure: command("intents", "failures.record", IntentRef.merge(IfMatch).extend({ body: RecordFailureBody }), FailureRecord, ["AGENT_MISMATCH", "GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "RETRY_NOT_ALLOWED", "TASK_NOT_FOUND"]),
  listFailures: command("intents", "failures.list", IntentRef.extend({ query: ListFailuresQuery }), FailureList, ["INTENT_NOT_FOUND"]),
} as const;
