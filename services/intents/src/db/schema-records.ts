import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, jsonb, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { intentsSchema } from "./schema";

/** Attachments, retry policies and failure records of intents (spec 2.7, 2.8). */

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/** References to bytes stored elsewhere; the service never fetches storage_url. */
export const attachments = intentsSchema.table(
  "attachments",
  {
    id: uuid("id").primaryKey(),
    /** Insertion order: lists are oldest first even when several rows share a timestamp. */
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
    intentId: uuid("intent_id").notNull(),
    filename: text("filename").notNull(),
    mimeType: text("mime_type").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    storageUrl: text("storage_url").notNull(),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    uploadedBy: text("uploaded_by").notNull(),
    createdAt: ts("created_at").notNull(),
  },
  (t) => [index("attachments_intent_idx").on(t.intentId, t.seq)],
);

/** At most one retry policy per intent; PUT replaces it in place. */
export const retryPolicies = intentsSchema.table(
  "retry_policies",
  {
    id: uuid("id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    strategy: text("strategy").notNull(),
    maxRetries: integer("max_retries").notNull(),
    baseDelayMs: integer("base_delay_ms").notNull(),
    maxDelayMs: integer("max_delay_ms").notNull(),
    fallbackAgentId: text("fallback_agent_id"),
    failureThreshold: integer("failure_threshold").notNull(),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
  },
  (t) => [uniqueIndex("retry_policies_intent_idx").on(t.intentId)],
);

export const failures = intentsSchema.table(
  "failures",
  {
    id: uuid("id").primaryKey(),
    /** Insertion order: the failure history reads in the order failures were recorded. */
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
    intentId: uuid("intent_id").notNull(),
    agentId: text("agent_id").notNull(),
    /** The task that failed, when the failure named one (its retry policy decided). */
    taskId: uuid("task_id"),
    attemptNumber: integer("attempt_number").notNull(),
    errorCode: text("error_code").notNull(),
    errorMessage: text("error_message").notNull(),
    retryScheduledAt: ts("retry_scheduled_at"),
    /** Set when the failing agent's work passed to the fallback agent. */
    resolvedAt: ts("resolved_at"),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    retriesExhausted: boolean("retries_exhausted").notNull().default(false),
    /** The agent that took over because of this failure. */
    fallbackAgentId: text("fallback_agent_id"),
    /** The cost record of the failed attempt (intents.costs), when the failure carried one. */
    costId: uuid("cost_id"),
    createdAt: ts("created_at").notNull(),
  },
  (t) => [
    index("failures_intent_idx").on(t.intentId, t.seq),
    // failure_threshold counts an agent's unresolved failures on an intent.
    index("failures_unresolved_idx").on(t.intentId, t.agentId).where(sql`${t.resolvedAt} is null`),
  ],
);
