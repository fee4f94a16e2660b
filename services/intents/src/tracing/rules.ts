import { appError, MAX_SPANS_PER_TRACE, type SpanInput } from "@intentmesh/contracts";

/** What a span linked before holds, as the rules compare it with a new link of the same id. */
export interface StoredSpan {
  spanId: string;
  parentSpanId: string | null;
  operation: string;
  status: string | null;
}

/** A span as stored: absent optional fields are null. */
export const normalizedSpan = (span: SpanInput): StoredSpan => ({
  spanId: span.span_id,
  parentSpanId: span.parent_span_id ?? null,
  operation: span.operation,
  status: span.status ?? null,
});

const sameSpan = (a: StoredSpan, b: StoredSpan) => a.parentSpanId === b.parentSpanId && a.operation === b.operation && a.status === b.status;

/**
 * Which of a link's spans are new (RFC-0020 spans, docs/tracing.md "Linking spans"):
 * - a span id linked before with the same values is accepted again and not linked twice (the MCP
 *   server retries a request whose answer it did not get);
 * - with other values it refuses the whole link (409 SPAN_CONFLICT): a span, once linked, is immutable;
 * - the new ones must fit the trace's limit (409 TRACE_FULL otherwise, nothing linked).
 */
export function spansToLink(traceId: string, incoming: readonly SpanInput[], stored: ReadonlyMap<string, StoredSpan>, spanCount: number, limit = MAX_SPANS_PER_TRACE): StoredSpan[] {
  const fresh: StoredSpan[] = [];
  for (const span of incoming.map(normalizedSpan)) {
    const before = stored.get(span.spanId);
    if (!before) {
      fresh.push(span);
      continue;
    }
    if (!sameSpan(before, span)) {
      throw appError("SPAN_CONFLICT", `span ${span.spanId} is already linked to trace ${traceId} with other values; a linked span does not change`, {
        trace_id: traceId,
        span_id: span.spanId,
      });
    }
  }
  if (spanCount + fresh.length > limit) {
    throw appError("TRACE_FULL", `trace ${traceId} holds ${spanCount} spans; ${fresh.length} more would pass its limit of ${limit}`, {
      trace_id: traceId,
      span_count: spanCount,
      limit,
    });
  }
  return fresh;
}

/**
 * The events a trace read answers: the oldest first, as many as fit `budgetBytes` beside the
 * spans (the answer is one bus message), at most `max`. `truncated` when some were left out.
 */
export function eventsWithinBudget<T>(rows: readonly T[], size: (row: T) => number, budgetBytes: number, max: number): { items: T[]; truncated: boolean } {
  let total = 0;
  const items: T[] = [];
  for (const row of rows.slice(0, max)) {
    total += size(row) + 1;
    if (total > budgetBytes) return { items, truncated: true };
    items.push(row);
  }
  return { items, truncated: rows.length > max };
}
