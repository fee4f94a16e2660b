import { sql } from "drizzle-orm";
import { boolean, index, integer, jsonb, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { intentsSchema } from "./schema";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/**
 * Coordinator leases (RFC-0013, docs/coordinators.md). One row per grant; `holds` marks the one
 * lease of an intent that is its coordinator (live, or past its expiry and not yet taken over):
 * the partial unique index grants it, never a check followed by an insert. Past `expires_at`
 * (two heartbeat intervals after the last heartbeat) the lease is `unresponsive` on the server
 * clock: another agent may take it, and until one does the holder's heartbeat revives it.
 */
export const coordinatorLeases = intentsSchema.table(
  "coordinator_leases",
  {
    id: uuid("id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    agentId: text("agent_id").notNull(),
    supervisorId: text("supervisor_id"),
    coordinatorType: text("coordinator_type").notNull(),
    guardrails: jsonb("guardrails").$type<Record<string, unknown>>(),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    heartbeatIntervalSeconds: integer("heartbeat_interval_seconds").notNull(),
    /** Agents that take over, in order, when the holder dies. */
    failoverCandidates: text("failover_candidates").array().notNull().default(sql`'{}'::text[]`),
    holds: boolean("holds").notNull(),
    grantedAt: ts("granted_at").notNull(),
    lastHeartbeat: ts("last_heartbeat").notNull(),
    expiresAt: ts("expires_at").notNull(),
    endedAt: ts("ended_at"),
    /** expired (taken over after it went unresponsive), agent_dead (its agent died: failover), handed_off, replaced, removed (DELETE /intents/{id}/coordinator). */
    endReason: text("end_reason"),
    predecessorId: uuid("predecessor_id"),
    /** Paused by a supervisor or by an on_exceed guardrail: the holder's work is refused until resumed. */
    pausedAt: ts("paused_at"),
    pausedBy: text("paused_by"),
    pauseReason: text("pause_reason"),
    /** The last coordinator.stalled logged for this lease (require_progress_every_minutes): one per stall. */
    stallReportedAt: ts("stall_reported_at"),
    /** Task failures on the intent since the last completed task (auto_escalate_after_failures). */
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    version: integer("version").notNull(),
  },
  (t) => [
    uniqueIndex("coordinator_leases_holder_idx").on(t.intentId).where(sql`holds`),
    index("coordinator_leases_intent_idx").on(t.intentId, t.grantedAt),
    index("coordinator_leases_agent_idx").on(t.agentId).where(sql`holds`),
  ],
);

/**
 * The temporal guardrails' reports (RFC-0013 3.3 max_task_wait_hours, checkpoint_timeout_hours):
 * one row per wait reported, claimed by an insert the primary key admits (never a check followed
 * by an insert), in the transaction of its event, so a wait is reported once across sweeps and
 * replicas. `subject` names what waited (`task:<id>`, `checkpoint:<plan id>:<checkpoint id>`),
 * `since` when that wait began: a task readied again, a checkpoint reached again, is a new wait.
 */
export const coordinatorTimerReports = intentsSchema.table(
  "coordinator_timer_reports",
  {
    subject: text("subject").notNull(),
    since: ts("since").notNull(),
    intentId: uuid("intent_id").notNull(),
    leaseId: uuid("lease_id").notNull(),
    /** The guardrail reported: max_task_wait_hours or checkpoint_timeout_hours. */
    guardrail: text("guardrail").notNull(),
    reportedAt: ts("reported_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.subject, t.since] }), index("coordinator_timer_reports_intent_idx").on(t.intentId)],
);
