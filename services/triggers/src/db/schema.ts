import { sql } from "drizzle-orm";
import { boolean, index, integer, jsonb, pgSchema, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { inboxTable } from "@intentmesh/db";
import { outboxTable } from "@intentmesh/bus";

/** The triggers service owns this schema; no other service reads it. */
export const triggersSchema = pgSchema("triggers");

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const triggers = triggersSchema.table(
  "triggers",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    type: text("type").notNull(),
    enabled: boolean("enabled").notNull(),
    condition: jsonb("condition").$type<Record<string, unknown>>().notNull(),
    intentTemplate: jsonb("intent_template").$type<Record<string, unknown>>(),
    deduplication: text("deduplication").notNull(),
    maxConcurrent: integer("max_concurrent"),
    namespace: text("namespace"),
    /** The intent a trigger of the MCP server's /intents/{id}/triggers is scoped to. */
    intentId: uuid("intent_id"),
    action: jsonb("action").$type<Record<string, unknown>>(),
    createdBy: text("created_by").notNull(),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
    lastFiredAt: ts("last_fired_at"),
    /** The due time a schedule is claimed by: a firing moves it on in the transaction that records the firing. */
    nextFireAt: ts("next_fire_at"),
    fireCount: integer("fire_count").notNull().default(0),
    version: integer("version").notNull().default(1),
    /** §6 queue: one deferred firing waits for an open intent of the trigger to end. */
    queued: boolean("queued").notNull().default(false),
    /** Deleted triggers stay for their history (§9.1) and are never answered again. */
    deletedAt: ts("deleted_at"),
  },
  (t) => [
    index("triggers_due_idx").on(t.nextFireAt).where(sql`${t.enabled} and ${t.deletedAt} is null and ${t.nextFireAt} is not null`),
    index("triggers_event_idx").on(t.type).where(sql`${t.enabled} and ${t.deletedAt} is null and ${t.type} = 'event'`),
    index("triggers_intent_idx").on(t.intentId).where(sql`${t.intentId} is not null`),
  ],
);

export const firings = triggersSchema.table(
  "firings",
  {
    id: uuid("id").primaryKey(),
    triggerId: text("trigger_id").notNull(),
    source: text("source").notNull(),
    status: text("status").notNull(),
    scheduledFor: ts("scheduled_for"),
    firedAt: ts("fired_at").notNull(),
    /** Derived from the firing's id before the intent exists, so every attempt creates the same one. */
    intentId: uuid("intent_id"),
    /** The created intent is neither completed nor abandoned yet (deduplication counts these). */
    intentOpen: boolean("intent_open").notNull().default(false),
    causeEventId: text("cause_event_id"),
    causePayload: jsonb("cause_payload").$type<Record<string, unknown>>(),
    depth: integer("depth").notNull().default(1),
    chain: text("chain").array().notNull().default(sql`'{}'::text[]`),
    reason: text("reason"),
  },
  (t) => [
    // Exactly once, whatever the claim logic: one firing per due time, one per causing event.
    uniqueIndex("firings_schedule_once_idx").on(t.triggerId, t.scheduledFor).where(sql`${t.source} = 'schedule'`),
    uniqueIndex("firings_event_once_idx").on(t.triggerId, t.causeEventId).where(sql`${t.source} = 'event'`),
    index("firings_trigger_idx").on(t.triggerId, t.firedAt),
    index("firings_pending_idx").on(t.firedAt).where(sql`${t.status} = 'pending'`),
    index("firings_intent_idx").on(t.intentId),
  ],
);

export const outbox = outboxTable(triggersSchema);
export const inbox = inboxTable(triggersSchema);
