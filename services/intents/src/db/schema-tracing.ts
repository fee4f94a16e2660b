import { index, integer, jsonb, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { intentsSchema } from "./schema";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/**
 * RFC-0020 traces (docs/tracing.md): one row per trace started on an intent. The trace_id is
 * global (POST /traces/{trace_id}/spans names no intent); span_count is the number of spans
 * linked, raised under the row's lock so the limit holds with concurrent links.
 */
export const traces = intentsSchema.table(
  "traces",
  {
    traceId: text("trace_id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    traceName: text("trace_name").notNull(),
    parentTraceId: text("parent_trace_id"),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    startedBy: text("started_by").notNull(),
    createdAt: ts("created_at").notNull(),
    spanCount: integer("span_count").notNull().default(0),
  },
  (t) => [index("traces_intent_idx").on(t.intentId, t.createdAt)],
);

/** Spans linked to a trace; `position` is the order they were linked in (0-based). Immutable. */
export const traceSpans = intentsSchema.table(
  "trace_spans",
  {
    traceId: text("trace_id").notNull(),
    spanId: text("span_id").notNull(),
    parentSpanId: text("parent_span_id"),
    operation: text("operation").notNull(),
    status: text("status"),
    linkedBy: text("linked_by").notNull(),
    linkedAt: ts("linked_at").notNull(),
    position: integer("position").notNull(),
  },
  (t) => [primaryKey({ columns: [t.traceId, t.spanId] }), uniqueIndex("trace_spans_position_idx").on(t.traceId, t.position)],
);
