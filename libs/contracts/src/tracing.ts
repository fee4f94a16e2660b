import { z } from "./zod";
import { ActorId, JsonObject, Timestamp, Uuid, boundedJsonObject } from "./common";
import { command, IntentRef } from "./command";
import { IntentEvent, TraceId } from "./intents";

/**
 * Distributed tracing (RFC-0020, docs/tracing.md) as the official MCP server calls it: a trace is
 * started on an intent, spans are linked to it, and reading it answers the trace, its spans and
 * the events of the intent's log that carry its trace_id (the RFC's own correlation: events
 * appended with `trace_id` join the trace they name).
 */

/** Spans one trace may hold; a link that would pass it is refused whole (409 TRACE_FULL). */
export const MAX_SPANS_PER_TRACE = 500;
/** Spans one request may link. */
export const MAX_SPANS_PER_LINK = 100;
/** The most events of the trace a read returns (oldest first; `events_truncated` says when there are more, or when they would not fit one answer beside the spans). */
export const MAX_TRACE_EVENTS = 500;
/** Bytes of JSON a trace's metadata may hold. */
export const MAX_TRACE_METADATA_BYTES = 16 * 1024;

/**
 * RFC-0020: 32 lowercase hex digits (W3C trace-id; the RFC's SDK makes them with uuid4().hex); the
 * same 128 bits written as a UUID (8-4-4-4-12, as str(uuid4()) gives them) are read as that hex.
 * Upper case is read as lower. The all-zero id is invalid in W3C Trace Context.
 */
export const W3CTraceId = z
  .string()
  .regex(/^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/, "must be 32 hexadecimal digits (a W3C trace-id) or the same as a UUID")
  .transform((id) => id.replace(/-/g, "").toLowerCase())
  .refine((id) => !/^0+$/.test(id), "must not be all zeros (W3C Trace Context)");

/** A label given by the client: printable, no control characters, bounded. */
const Label = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]+$/u, "must not contain control characters");

/** Span ids are the client's (the MCP server passes what the model gives): printable tokens. */
export const SpanId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[^\s\p{Cc}]+$/u, "must not contain whitespace or control characters");

export const StartTraceBody = z
  .object({
    trace_name: Label(256).openapi({ description: "human-readable name of the trace" }),
    trace_id: W3CTraceId.optional().openapi({
      description: "register a trace the caller already propagates (32 hex digits); default a fresh random one",
    }),
    parent_trace_id: TraceId.nullable().optional().openapi({ description: "the trace this one is nested in; stored as given (not resolved)" }),
    metadata: boundedJsonObject(MAX_TRACE_METADATA_BYTES).default({}),
    started_by: ActorId.nullable()
      .optional()
      .openapi({ description: "who started it; default the acting agent (or the key's principal); a registered agent's name must be the caller's" }),
  })
  .strict()
  .openapi("StartTrace");
export type StartTraceBody = z.output<typeof StartTraceBody>;

export const SpanInput = z
  .object({
    span_id: SpanId,
    parent_span_id: SpanId.nullable().optional().openapi({ description: "the enclosing span; need not be linked yet (spans arrive in any order)" }),
    operation: Label(256),
    status: Label(64).nullable().optional().openapi({ description: "free label, e.g. ok, error; null when not given" }),
  })
  .strict()
  .superRefine((span, ctx) => {
    if (span.parent_span_id && span.parent_span_id === span.span_id) ctx.addIssue({ code: "custom", path: ["parent_span_id"], message: "a span cannot be its own parent" });
  });
export type SpanInput = z.output<typeof SpanInput>;

export const LinkSpansBody = z
  .object({
    spans: z.array(SpanInput).min(1).max(MAX_SPANS_PER_LINK),
    linked_by: ActorId.nullable()
      .optional()
      .openapi({ description: "who links them; default the acting agent (or the key's principal); a registered agent's name must be the caller's" }),
  })
  .strict()
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.spans.forEach((span, i) => {
      if (seen.has(span.span_id)) ctx.addIssue({ code: "custom", path: ["spans", i, "span_id"], message: `span ${span.span_id} is named twice in this request` });
      seen.add(span.span_id);
    });
  })
  .openapi("LinkSpans");
export type LinkSpansBody = z.output<typeof LinkSpansBody>;

export const Span = z
  .object({
    span_id: z.string(),
    trace_id: z.string(),
    parent_span_id: z.string().nullable(),
    operation: z.string(),
    status: z.string().nullable(),
    linked_by: z.string(),
    linked_at: Timestamp,
  })
  .passthrough()
  .openapi("Span");
export type Span = z.infer<typeof Span>;

const TraceFields = {
  trace_id: z.string().openapi({ description: "32 lowercase hex digits; give it as `trace_id` to the events you append to join them to the trace" }),
  id: z.string().openapi({ description: "the trace_id again (clients that read `id`)" }),
  intent_id: Uuid,
  trace_name: z.string(),
  parent_trace_id: z.string().nullable(),
  metadata: JsonObject,
  started_by: z.string(),
  started_at: Timestamp,
  created_at: Timestamp,
  span_count: z.number().int(),
};

export const Trace = z.object(TraceFields).passthrough().openapi("Trace");
export type Trace = z.infer<typeof Trace>;

export const TraceDetail = z
  .object({
    ...TraceFields,
    spans: z.array(Span).openapi({ description: "every span linked to the trace, in the order linked" }),
    events: z.array(IntentEvent).openapi({ description: `events of the intent's log carrying this trace_id, oldest first (at most ${MAX_TRACE_EVENTS})` }),
    events_truncated: z.boolean(),
  })
  .passthrough()
  .openapi("TraceDetail");
export type TraceDetail = z.infer<typeof TraceDetail>;

export const SpansLinked = z
  .object({
    trace_id: z.string(),
    intent_id: Uuid,
    linked: z.number().int().openapi({ description: "spans newly linked by this request (an identical span linked before is not counted)" }),
    spans: z.array(Span),
    span_count: z.number().int(),
  })
  .passthrough()
  .openapi("SpansLinked");
export type SpansLinked = z.infer<typeof SpansLinked>;

/** A trace in a path: 32 hex digits (read case-insensitively). */
export const TraceRef = z.object({ trace_id: W3CTraceId });

export const tracingCommands = {
  start: command("intents", "traces.start", IntentRef.extend({ body: StartTraceBody }), Trace, ["INTENT_NOT_FOUND", "TRACE_EXISTS"]),
  get: command("intents", "traces.get", IntentRef.merge(TraceRef), TraceDetail, ["INTENT_NOT_FOUND", "TRACE_NOT_FOUND"]),
  linkSpans: command("intents", "traces.link_spans", TraceRef.extend({ body: LinkSpansBody }), SpansLinked, ["SPAN_CONFLICT", "TRACE_FULL", "TRACE_NOT_FOUND"]),
} as const;
