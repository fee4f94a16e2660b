import type { EngagementDecision, HumanRetryPolicy, Intent, SuspensionRecord } from "@intentmesh/contracts";
import type { Intentmesh } from "../client";
import { randomKey } from "../client";
import { IntentmeshError, OutcomeUnknownError, abortError } from "../errors";
import { intentEventTypes } from "../generated/event-names";
import type { BodyOf, ResponseOf } from "../types";

type SuspendBody = NonNullable<BodyOf<"governanceSuspend">>;

export interface InputRequest {
  question: string;
  /** `choice` (default), `confirm`, `text` or `form` (spec 2.9). */
  responseType?: SuspendBody["response_type"];
  choices?: SuspendBody["choices"];
  /** Structured context for the operator: never secrets or personal data (spec 2.9). */
  context?: SuspendBody["context"];
  channelHint?: string;
  /** Single-attempt timeout (spec 2.9); with a retry policy, the policy's window applies. */
  timeoutSeconds?: number;
  /** What `complete_with_fallback` / `use_default_and_continue` answer on timeout. */
  fallbackValue?: unknown;
  /** What happens on timeout (spec 2.10): `fail` (default) raises InputTimeoutError. */
  fallbackPolicy?: SuspendBody["fallback_policy"];
  /** Level 1 of the retry cascade: this call's policy. */
  retryPolicy?: HumanRetryPolicy;
  /** The agent's confidence (0 to 1) when it asks. */
  confidence?: number;
  /** The EngagementDecision that led to asking (shouldRequestInput). */
  decision?: EngagementDecision | ResponseOf<"governanceDecideEngagement">;
}

export interface InputOptions {
  /** Level 2 of the retry cascade: the agent's default human retry policy. */
  defaultRetryPolicy?: HumanRetryPolicy;
  /** The acting agent (X-Agent-ID), else the client's. */
  agentId?: string;
  /** Stops waiting (the suspension stays; the server still times it out). */
  signal?: AbortSignal;
  /**
   * How long after the suspension's deadline to re-read the intent if no event said how it ended
   * (default 5000 ms). Events normally say so first; this covers a stream that missed them.
   */
  deadlineGraceMs?: number;
}

/** Which level of the three-level cascade (spec 4.5) gave the suspension its retry policy. */
export type CascadeLevel = "call-site" | "agent" | "platform" | "none";

export interface InputAnswer {
  /** The operator's answer, or the fallback value when the suspension expired with a policy that continues. */
  value: unknown;
  resolution: "responded" | "expired";
  respondedBy: string | undefined;
  respondedAt: string | undefined;
  /** The record as it ended. */
  suspension: SuspensionRecord;
  cascade: CascadeLevel;
  /** The intent after it resumed. */
  intent: Intent;
}

/** Nobody answered in time and the fallback policy is `fail` (spec 2.10); the server abandoned the intent. */
export class InputTimeoutError extends IntentmeshError {
  override readonly name = "InputTimeoutError";
  constructor(readonly suspension: SuspensionRecord, readonly intent: Intent) {
    super("INVALID_TRANSITION", `nobody answered "${suspension.question}" in time; the fallback policy is fail and intent ${intent.id} is ${intent.status}`, 0);
  }
}

/** The suspension was cancelled (the intent was abandoned while it waited). */
export class InputCancelledError extends IntentmeshError {
  override readonly name = "InputCancelledError";
  constructor(readonly suspension: SuspensionRecord | undefined, readonly intent: Intent) {
    super("INTENT_CLOSED", `the question on intent ${intent.id} was cancelled; the intent is ${intent.status}`, 0);
  }
}

/** Events after which the suspension may have ended: the intent is read again to see how. */
const ENDING_EVENTS = new Set<string>([intentEventTypes.resumed, intentEventTypes.suspensionExpired, intentEventTypes.statusChanged]);

/**
 * request_input of spec 4.5: suspends the intent with a question for an operator and waits for
 * the answer over the intent's SSE stream (no polling), resuming the stream after a lost
 * connection. Timeouts run on the server (its timer re-notifies, escalates and applies the
 * fallback, docs/governance.md), so an agent that crashes while waiting still gets its fallback.
 *
 * The retry cascade: the call's `retryPolicy` (or `timeoutSeconds`), else the agent's
 * `defaultRetryPolicy`, else the server's platform default (it applies that one itself when the
 * record names neither).
 *
 * Answers the operator's value, or the fallback value after a timeout with
 * `complete_with_fallback` / `use_default_and_continue`; throws InputTimeoutError after a timeout
 * with `fail`, InputCancelledError when the suspension was cancelled.
 */
export async function requestInput(client: Intentmesh, intentId: string, request: InputRequest, options: InputOptions = {}): Promise<InputAnswer> {
  const call = { agentId: options.agentId, signal: options.signal };
  const cascade: CascadeLevel = request.retryPolicy || request.timeoutSeconds ? "call-site" : options.defaultRetryPolicy ? "agent" : "platform";
  const retryPolicy = request.retryPolicy ?? (cascade === "agent" ? options.defaultRetryPolicy : undefined);
  // A suspension id of our own: if the answer to the suspend is lost, a read tells whether it took.
  const suspensionId = randomKey();
  const body: SuspendBody = {
    id: suspensionId,
    question: request.question,
    response_type: request.responseType ?? "choice",
    ...(request.choices ? { choices: request.choices } : {}),
    ...(request.context ? { context: request.context } : {}),
    ...(request.channelHint ? { channel_hint: request.channelHint } : {}),
    ...(request.timeoutSeconds ? { timeout_seconds: request.timeoutSeconds } : {}),
    ...(request.fallbackValue !== undefined ? { fallback_value: request.fallbackValue } : {}),
    ...(retryPolicy ? { retry_policy: retryPolicy } : {}),
    fallback_policy: request.fallbackPolicy ?? retryPolicy?.final_fallback_policy ?? "fail",
    ...(request.confidence !== undefined ? { confidence_at_suspension: request.confidence } : {}),
    ...(request.decision ? { decision_record: request.decision as unknown as Record<string, unknown> } : {}),
  };
  if (body.retry_policy && !body.retry_policy.final_fallback_policy) body.retry_policy = { ...body.retry_policy, final_fallback_policy: body.fallback_policy };

  // Where the log ends before suspending: the stream starts there, so the answer cannot slip past.
  const tail = await client.ops.intentsListEvents({ intent_id: intentId, query: { tail: "true", limit: 1 } }, call);
  const from = { lastEventId: String(tail.events.at(-1)?.sequence ?? 0) };
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const stream = client.subscribe("intents", intentId, { from, signal: stop.signal, agentId: options.agentId });
  try {
    let suspended: Intent;
    try {
      suspended = await client.ops.governanceSuspend({ intent_id: intentId, body }, call);
    } catch (error) {
      if (!(error instanceof OutcomeUnknownError)) throw error;
      suspended = await client.ops.intentsGet({ intent_id: intentId }, call);
      if (suspensionOf(suspended)?.id !== suspensionId) throw error;
    }
    const record = suspensionOf(suspended)!;
    const effectiveCascade: CascadeLevel = cascade === "platform" && !record.retry_policy && !record.timeout_seconds ? "none" : cascade;

    const settle = async (): Promise<InputAnswer | undefined> => {
      const intent = await client.ops.intentsGet({ intent_id: intentId }, call);
      const current = suspensionOf(intent);
      if (current?.id !== suspensionId) {
        // Our record was replaced or dropped: only an ended intent does that.
        if (intent.status === "abandoned" || intent.status === "completed") throw new InputCancelledError(current, intent);
        return undefined;
      }
      if (!current.resolution) return undefined;
      if (current.resolution === "cancelled") throw new InputCancelledError(current, intent);
      if (current.resolution === "expired" && intent.status === "abandoned") throw new InputTimeoutError(current, intent);
      return {
        value: current.response,
        resolution: current.resolution,
        respondedBy: current.responded_by,
        respondedAt: current.responded_at,
        suspension: current,
        cascade: effectiveCascade,
        intent,
      };
    };

    // A backstop for a stream that missed the ending: once the deadline has passed, read again
    // every grace period until the server's timer has ended the suspension.
    const graceMs = options.deadlineGraceMs ?? 5000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const after = (ms: number) => new Promise<"deadline">((resolve) => (timer = setTimeout(() => resolve("deadline"), Math.max(0, ms))));
    let deadline: Promise<"deadline"> | undefined = record.expires_at ? after(Date.parse(record.expires_at) - Date.parse(record.suspended_at) + graceMs) : undefined;
    try {
      let next = stream.next();
      for (;;) {
        const outcome = await (deadline ? Promise.race([next, deadline]) : next);
        if (outcome === "deadline") {
          const answer = await settle();
          if (answer) return answer;
          deadline = after(graceMs);
          continue;
        }
        if (outcome.done) {
          if (options.signal?.aborted) throw abortError(options.signal);
          throw new IntentmeshError("NETWORK_ERROR", `the stream of intent ${intentId} ended while waiting for an answer`, 0);
        }
        if (ENDING_EVENTS.has(outcome.value.event)) {
          const answer = await settle();
          if (answer) return answer;
        }
        next = stream.next();
      }
    } finally {
      if (timer) clearTimeout(timer);
    }
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    stop.abort();
    void stream.return?.(undefined);
  }
}

function suspensionOf(intent: Intent): SuspensionRecord | undefined {
  return (intent.state as { _suspension?: SuspensionRecord })._suspension;
}

/**
 * should_request_input of spec 4.5: the server's engagement decision for these signals
 * (confidence, risk, reversibility in [0, 1]); it logs `engagement.decision` on the intent.
 * `should_ask` says whether to call requestInput; `mode` says how strongly.
 */
export function shouldRequestInput(
  client: Intentmesh,
  intentId: string,
  signals: NonNullable<BodyOf<"governanceDecideEngagement">>,
  options: { agentId?: string; signal?: AbortSignal } = {},
): Promise<ResponseOf<"governanceDecideEngagement">> {
  return client.ops.governanceDecideEngagement({ intent_id: intentId, body: signals }, options);
}
