import { sql } from "drizzle-orm";
import { index, integer, jsonb, pgSchema, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { inboxTable } from "@intentmesh/db";
import { outboxTable } from "@intentmesh/bus";
import type { APPROVAL_STATUSES, SuspensionRecord } from "@intentmesh/contracts";

/** The governance service owns this schema; no other service reads it. */
export const governanceSchema = pgSchema("governance");

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/**
 * Suspensions the server times out (spec 2.9, 3.5). One row per suspension id, created from the
 * intents' intent.suspended event (or by POST /suspend directly), whichever comes first.
 * `next_due_at` is the moment of the next re-notification or of the final fallback; null once
 * the suspension has ended or when it has no deadline. The timer claims due rows with
 * FOR UPDATE SKIP LOCKED through the partial index, so replicas share the work.
 */
export const suspensions = governanceSchema.table(
  "suspensions",
  {
    suspensionId: uuid("suspension_id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    record: jsonb("record").$type<SuspensionRecord>().notNull(),
    suspendedAt: ts("suspended_at").notNull(),
    expiresAt: ts("expires_at"),
    /** The notification attempt in progress, from 1. */
    attempt: integer("attempt").notNull().default(1),
    nextDueAt: ts("next_due_at"),
    /** waiting, responded, expired, cancelled */
    status: text("status").notNull().default("waiting"),
    updatedAt: ts("updated_at").notNull(),
  },
  (t) => [index("suspensions_due_idx").on(t.nextDueAt).where(sql`${t.nextDueAt} is not null`), index("suspensions_intent_idx").on(t.intentId)],
);

/** Approval requests (spec 3.6, 4.6): pending until exactly one decision. */
export const approvals = governanceSchema.table(
  "approvals",
  {
    id: uuid("id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    action: text("action").notNull(),
    reason: text("reason"),
    context: jsonb("context").$type<Record<string, unknown>>().notNull(),
    requestedBy: text("requested_by").notNull(),
    /** The principal of the key that asked: it may never decide its own request. */
    requesterPrincipal: text("requester_principal").notNull(),
    status: text("status").$type<(typeof APPROVAL_STATUSES)[number]>().notNull(),
    decidedBy: text("decided_by"),
    decidedAt: ts("decided_at"),
    decisionNotes: text("decision_notes"),
    createdAt: ts("created_at").notNull(),
    /** Escalations (action `escalation`, RFC-0013): how pressing it is, and the resolution a human gave. */
    priority: text("priority"),
    urgency: text("urgency"),
    resolution: text("resolution"),
  },
  (t) => [index("approvals_intent_idx").on(t.intentId, t.createdAt), index("approvals_action_idx").on(t.action, t.createdAt)],
);

export const outbox = outboxTable(governanceSchema);
export const inbox = inboxTable(governanceSchema);
