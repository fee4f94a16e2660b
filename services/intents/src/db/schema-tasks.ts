import { sql } from "drizzle-orm";
import { bigint, index, integer, jsonb, text, timestamp, uuid } from "drizzle-orm/pg-core";
import type { JsonObject, MemoryPolicy, TaskRetryPolicy } from "@intentmesh/contracts";

/** The phase a workflow task runs, its input wiring, its declared outputs and its static inputs resolved when the run was triggered. */
export interface TaskIoContract {
  workflow_id: string;
  phase_name: string;
  inputs: Record<string, string>;
  outputs: Record<string, string | { type: string; required?: boolean }> | null;
  static_inputs: Record<string, unknown>;
}
import { intentsSchema } from "./schema";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/**
 * Tasks: units of work inside an intent (docs/tasks.md). Every change locks the intent row first
 * (the lock order of the whole service), then changes the task by a conditional UPDATE on its
 * version, and writes the task event to the intent's log in the same transaction.
 */
export const tasks = intentsSchema.table(
  "tasks",
  {
    id: uuid("id").primaryKey(),
    /** Insertion order: the cursor of GET /intents/{id}/tasks. */
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
    intentId: uuid("intent_id").notNull(),
    title: text("title").notNull(),
    description: text("description"),
    parentTaskId: uuid("parent_task_id"),
    dependsOn: uuid("depends_on").array().notNull().default(sql`'{}'::uuid[]`),
    /** The plan the task belongs to (RFC 0012), of the same intent. */
    planId: uuid("plan_id"),
    priority: text("priority").notNull().default("normal"),
    capabilitiesRequired: text("capabilities_required").array().notNull().default(sql`'{}'::text[]`),
    metadata: jsonb("metadata").$type<JsonObject>().notNull().default({}),
    /** A workflow phase's I/O contract (RFC 0024, docs/workflows.md); null for other tasks. */
    ioContract: jsonb("io_contract").$type<TaskIoContract>(),
    status: text("status").notNull(),
    assignedAgent: text("assigned_agent"),
    /** Every agent that held the task before it was reassigned, oldest first (spec 4.8 rule 3). */
    previousAgents: text("previous_agents").array().notNull().default(sql`'{}'::text[]`),
    memoryPolicy: jsonb("memory_policy").$type<MemoryPolicy>().notNull(),
    /** Overrides the intent's retry policy (spec 2.8); null: the intent's applies. */
    retryPolicy: jsonb("retry_policy").$type<TaskRetryPolicy>(),
    input: jsonb("input").$type<JsonObject>().notNull(),
    output: jsonb("output").$type<JsonObject>(),
    error: text("error"),
    blockedReason: text("blocked_reason"),
    /** The status a blocked task returns to when it unblocks. */
    blockedFrom: text("blocked_from"),
    suspendedIntentId: uuid("suspended_intent_id"),
    /** How many times the task was started. */
    attempt: integer("attempt").notNull().default(0),
    createdBy: text("created_by").notNull(),
    version: integer("version").notNull(),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
    claimedAt: ts("claimed_at"),
    startedAt: ts("started_at"),
    completedAt: ts("completed_at"),
  },
  (t) => [
    index("tasks_intent_idx").on(t.intentId, t.seq),
    index("tasks_intent_status_idx").on(t.intentId, t.status, t.seq),
    index("tasks_plan_idx").on(t.planId).where(sql`${t.planId} is not null`),
    // An agent's held tasks: its death releases them, its heartbeat is checked against them.
    index("tasks_agent_idx").on(t.assignedAgent).where(sql`${t.assignedAgent} is not null`),
  ],
);
