import { bigint, index, integer, jsonb, numeric, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { intentsSchema } from "./schema";

/**
 * Cost records (spec 2.6) and their running totals. Amounts and cents are `numeric`: sums are
 * exact, so a budget boundary is crossed exactly when the figures say so. The totals are kept
 * by the statement that inserts a record, so a summary reads a handful of rows, never the records.
 */

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });
const exact = (name: string) => numeric(name);

export const costs = intentsSchema.table(
  "costs",
  {
    id: uuid("id").primaryKey(),
    /** Insertion order: the list's cursor. */
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
    intentId: uuid("intent_id").notNull(),
    agentId: text("agent_id").notNull(),
    costType: text("cost_type").notNull(),
    amount: exact("amount").notNull(),
    unit: text("unit").notNull(),
    /** What the record counts toward the budget; null when it states no cents value. */
    cents: exact("cents"),
    provider: text("provider"),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    recordedAt: ts("recorded_at").notNull(),
    /** The record exactly as the API returns it, frozen at write time (records are immutable). */
    wire: text("wire").notNull(),
  },
  (t) => [index("costs_intent_seq_idx").on(t.intentId, t.seq)],
);

/**
 * One row per intent: every record's amount and cents summed, the largest single cents value, and
 * how many distinct agents have costs (bounded by MAX_COST_AGENTS_PER_INTENT, so summary.by_agent
 * always fits in a reply).
 */
export const costTotals = intentsSchema.table("cost_totals", {
  intentId: uuid("intent_id").primaryKey(),
  recordCount: bigint("record_count", { mode: "number" }).notNull(),
  agentCount: integer("agent_count").notNull().default(0),
  amount: exact("amount").notNull(),
  cents: exact("cents").notNull(),
  maxCallCents: exact("max_call_cents"),
});

/** One row per (intent, agent): the per-agent budget and summary.by_agent. */
export const costAgentTotals = intentsSchema.table(
  "cost_agent_totals",
  {
    intentId: uuid("intent_id").notNull(),
    agentId: text("agent_id").notNull(),
    recordCount: bigint("record_count", { mode: "number" }).notNull(),
    amount: exact("amount").notNull(),
    cents: exact("cents").notNull(),
  },
  (t) => [primaryKey({ columns: [t.intentId, t.agentId] })],
);

/** One row per (intent, cost_type): summary.by_type. */
export const costTypeTotals = intentsSchema.table(
  "cost_type_totals",
  {
    intentId: uuid("intent_id").notNull(),
    costType: text("cost_type").notNull(),
    recordCount: bigint("record_count", { mode: "number" }).notNull(),
    amount: exact("amount").notNull(),
  },
  (t) => [primaryKey({ columns: [t.intentId, t.costType] })],
);
