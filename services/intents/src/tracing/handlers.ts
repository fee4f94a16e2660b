import { randomBytes } from "node:crypto";
import { and, asc, eq, inArray, isNotNull, sql } from "drizzle-orm";
import {
  appError,
  errors,
  isoTimestamp,
  jsonBytes,
  LIMITS,
  MAX_TRACE_EVENTS,
  type Caller,
  type LinkSpansBody,
  type Span,
  type SpansLinked,
  type StartTraceBody,
  type Trace,
  type TraceDetail,
  intentEvents,
} from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import type { IntentsContext } from "../kernel/context";
import { appendToLog, assertIntentExists, lockIntentRow } from "../kernel/event-log";
import { toEvent } from "../kernel/mapping";
import { events } from "../db/schema";
import { traces, traceSpans } from "../db/schema-tracing";
import { eventsWithinBudget, spansToLink, type StoredSpan } from "./rules";

/**
 * RFC-0020 distributed tracing (docs/tracing.md): traces started on an intent, spans linked to
 * them, and the read that puts a trace's spans beside the intent's events carrying its trace_id.
 * Every write appends its event to the intent's log (with the trace's trace_id) in the same
 * transaction.
 */

type TraceRow = typeof traces.$inferSelect;
type SpanRow = typeof traceSpans.$inferSelect;

const toTrace = (row: TraceRow): Trace => ({
  trace_id: row.traceId,
  id: row.traceId,
  intent_id: row.intentId,
  trace_name: row.traceName,
  parent_trace_id: row.parentTraceId,
  metadata: row.metadata,
  started_by: row.startedBy,
  started_at: isoTimestamp(row.createdAt),
  created_at: isoTimestamp(row.createdAt),
  span_count: row.spanCount,
});

const toSpan = (row: SpanRow): Span => ({
  span_id: row.spanId,
  trace_id: row.traceId,
  parent_span_id: row.parentSpanId,
  operation: row.operation,
  status: row.status,
  linked_by: row.linkedBy,
  linked_at: isoTimestamp(row.linkedAt),
});

/** A fresh W3C trace-id: 128 random bits, never all zeros. */
function newTraceId(): string {
  for (;;) {
    const id = randomBytes(16).toString("hex");
    if (!/^0+$/.test(id)) return id;
  }
}

/** POST /intents/{id}/traces: the trace row and intent.trace_started (carrying the trace_id) in one transaction. */
export async function startTrace(ctx: IntentsContext, intentId: string, body: StartTraceBody, caller: Caller): Promise<Trace> {
  const traceId = body.trace_id ?? newTraceId();
  const startedBy = body.started_by ?? caller.actor;
  const parentTraceId = body.parent_trace_id ?? null;
  const now = ctx.clock.now();
  return ctx.db.transaction(async (tx) => {
    // The log append locks the intent (404 when absent) before the trace is inserted.
    await appendToLog(
      tx,
      intentId,
      [
        newEvent(intentEvents.traceStarted, caller.actor, { trace_id: traceId, trace_name: body.trace_name, parent_trace_id: parentTraceId, started_by: startedBy }, { traceId }),
      ],
      now,
    );
    const [row] = await tx
      .insert(traces)
      .values({ traceId, intentId, traceName: body.trace_name, parentTraceId, metadata: body.metadata, startedBy, createdAt: now })
      .onConflictDoNothing()
      .returning();
    // The transaction rolls back: the event appended above is not kept.
    if (!row) throw appError("TRACE_EXISTS", `a trace ${traceId} already exists; start a new one without trace_id to get a fresh id`, { trace_id: traceId });
    return toTrace(row);
  });
}

/**
 * GET /intents/{id}/traces/{trace_id}: the trace, its spans in the order linked, and the events
 * of the intent's log carrying its trace_id (oldest first, as many as fit one answer beside the
 * spans). A trace of another intent is not found here: the path's intent is the one checked.
 */
export async function getTrace(ctx: IntentsContext, intentId: string, traceId: string): Promise<TraceDetail> {
  const [row] = await ctx.db
    .select()
    .from(traces)
    .where(and(eq(traces.traceId, traceId), eq(traces.intentId, intentId)));
  if (!row) {
    await assertIntentExists(ctx.db, intentId);
    throw errors.notFound("trace", traceId);
  }
  const spans = (await ctx.db.select().from(traceSpans).where(eq(traceSpans.traceId, traceId)).orderBy(asc(traceSpans.position))).map(toSpan);
  const eventRows = await ctx.db
    .select()
    .from(events)
    .where(and(eq(events.intentId, intentId), isNotNull(events.traceId), eq(events.traceId, traceId)))
    .orderBy(asc(events.sequence))
    .limit(MAX_TRACE_EVENTS + 1);
  const trace = toTrace(row);
  const budget = LIMITS.pageBytes - jsonBytes(spans) - jsonBytes(trace);
  const { items, truncated } = eventsWithinBudget(eventRows, (e) => Buffer.byteLength(e.wire), budget, MAX_TRACE_EVENTS);
  return { ...trace, spans, events: items.map(toEvent), events_truncated: truncated };
}

/**
 * POST /traces/{trace_id}/spans: all the new spans or none. Locks the intent, then the trace
 * (the order startTrace takes them in), so concurrent links count against the limit one after
 * the other; the spans, the new span_count and intent.spans_linked commit together. A link whose
 * spans were all linked before, identically, writes nothing and answers the same.
 */
export async function linkSpans(ctx: IntentsContext, traceId: string, body: LinkSpansBody, caller: Caller): Promise<SpansLinked> {
  const linkedBy = body.linked_by ?? caller.actor;
  const now = ctx.clock.now();
  const [located] = await ctx.db.select({ intentId: traces.intentId }).from(traces).where(eq(traces.traceId, traceId));
  if (!located) throw errors.notFound("trace", traceId);
  const intentId = located.intentId;
  return ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, intentId, null);
    const [trace] = await tx.select().from(traces).where(eq(traces.traceId, traceId)).for("update");
    if (!trace) throw errors.notFound("trace", traceId);
    const ids = body.spans.map((s) => s.span_id);
    const storedRows = await tx
      .select()
      .from(traceSpans)
      .where(and(eq(traceSpans.traceId, traceId), inArray(traceSpans.spanId, ids)));
    const stored = new Map<string, StoredSpan>(storedRows.map((r) => [r.spanId, r]));
    const fresh = spansToLink(traceId, body.spans, stored, trace.spanCount);
    let spanCount = trace.spanCount;
    const written: SpanRow[] = [];
    if (fresh.length) {
      written.push(
        ...(await tx
          .insert(traceSpans)
          .values(fresh.map((span, i) => ({ traceId, ...span, linkedBy, linkedAt: now, position: trace.spanCount + i })))
          .returning()),
      );
      spanCount += fresh.length;
      await tx.update(traces).set({ spanCount: sql`${traces.spanCount} + ${fresh.length}` }).where(eq(traces.traceId, traceId));
      await appendToLog(
        tx,
        intentId,
        [
          newEvent(intentEvents.spansLinked, caller.actor, { trace_id: traceId, span_ids: fresh.map((s) => s.spanId), linked_by: linkedBy, span_count: spanCount }, { traceId }),
        ],
        now,
      );
    }
    const byId = new Map<string, SpanRow>([...storedRows, ...written].map((r) => [r.spanId, r]));
    return { trace_id: traceId, intent_id: intentId, linked: fresh.length, spans: ids.map((id) => toSpan(byId.get(id)!)), span_count: spanCount };
  });
}
