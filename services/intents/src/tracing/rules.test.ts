import { describe, expect, it } from "vitest";
import { LinkSpansBody, StartTraceBody, TraceRef, type SpanInput } from "@intentmesh/contracts";
import { eventsWithinBudget, normalizedSpan, spansToLink, type StoredSpan } from "./rules";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const span = (span_id: string, extra: Partial<SpanInput> = {}): SpanInput => ({ span_id, operation: "search", ...extra });
const stored = (...spans: SpanInput[]) => new Map<string, StoredSpan>(spans.map((s) => [s.span_id, normalizedSpan(s)]));
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
};

describe("spansToLink (RFC-0020 spans)", () => {
  it("links new spans and skips the ones linked before with the same values (a retried request)", () => {
    const fresh = spansToLink(TRACE, [span("a", { status: "ok" }), span("b", { parent_span_id: "a" })], stored(span("a", { status: "ok" })), 1);
    expect(fresh.map((s) => s.spanId)).toEqual(["b"]);
    expect(fresh[0]).toEqual({ spanId: "b", parentSpanId: "a", operation: "search", status: null });
  });

  it("refuses a span linked before with other values, whichever field differs", () => {
    expect(codeOf(() => spansToLink(TRACE, [span("a", { status: "error" })], stored(span("a", { status: "ok" })), 1))).toBe("SPAN_CONFLICT");
    expect(codeOf(() => spansToLink(TRACE, [span("a", { operation: "fetch" })], stored(span("a")), 1))).toBe("SPAN_CONFLICT");
    expect(codeOf(() => spansToLink(TRACE, [span("a", { parent_span_id: "z" })], stored(span("a")), 1))).toBe("SPAN_CONFLICT");
  });

  it("refuses a link that would pass the trace's span limit, counting only the new spans", () => {
    expect(codeOf(() => spansToLink(TRACE, [span("x"), span("y")], new Map(), 9, 10))).toBe("TRACE_FULL");
    expect(spansToLink(TRACE, [span("x")], new Map(), 9, 10)).toHaveLength(1);
    expect(spansToLink(TRACE, [span("a"), span("x")], stored(span("a")), 9, 10)).toHaveLength(1);
  });
});

describe("eventsWithinBudget", () => {
  it("keeps the oldest events that fit the budget and says when it cut", () => {
    expect(eventsWithinBudget([1, 2, 3], () => 9, 30, 10)).toEqual({ items: [1, 2, 3], truncated: false });
    expect(eventsWithinBudget([1, 2, 3], () => 9, 25, 10)).toEqual({ items: [1, 2], truncated: true });
    expect(eventsWithinBudget([1, 2, 3], () => 9, 100, 2)).toEqual({ items: [1, 2], truncated: true });
    expect(eventsWithinBudget([1], () => 9, -5, 10)).toEqual({ items: [], truncated: true });
  });
});

describe("tracing bodies", () => {
  it("a trace id is 32 hex digits (or the same as a UUID), read case-insensitively, never all zeros", () => {
    expect(TraceRef.parse({ trace_id: TRACE.toUpperCase() }).trace_id).toBe(TRACE);
    expect(TraceRef.parse({ trace_id: "4BF92F35-77B3-4DA6-A3CE-929D0E0E4736" }).trace_id).toBe(TRACE);
    expect(TraceRef.safeParse({ trace_id: "0".repeat(32) }).success).toBe(false);
    expect(TraceRef.safeParse({ trace_id: "abc" }).success).toBe(false);
    expect(TraceRef.safeParse({ trace_id: `${TRACE}/../x` }).success).toBe(false);
  });

  it("takes the MCP server's start body and refuses unknown fields and control characters", () => {
    expect(StartTraceBody.safeParse({ trace_name: "run", parent_trace_id: undefined, metadata: {}, started_by: "agent-1" }).success).toBe(true);
    expect(StartTraceBody.safeParse({ trace_name: "run", extra: 1 }).success).toBe(false);
    expect(StartTraceBody.safeParse({ trace_name: "a\u0000b" }).success).toBe(false);
    expect(StartTraceBody.safeParse({ trace_name: "" }).success).toBe(false);
  });

  it("a link names each span once, at most 100, and no span is its own parent", () => {
    expect(LinkSpansBody.safeParse({ spans: [span("a"), span("a")] }).success).toBe(false);
    expect(LinkSpansBody.safeParse({ spans: [span("a", { parent_span_id: "a" })] }).success).toBe(false);
    expect(LinkSpansBody.safeParse({ spans: [] }).success).toBe(false);
    expect(LinkSpansBody.safeParse({ spans: Array.from({ length: 101 }, (_, i) => span(`s${i}`)) }).success).toBe(false);
    expect(LinkSpansBody.safeParse({ spans: Array.from({ length: 100 }, (_, i) => span(`s${i}`)), linked_by: "agent-1" }).success).toBe(true);
  });
});
