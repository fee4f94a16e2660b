import { sql } from "drizzle-orm";
import { bigint, index, integer, jsonb, text, timestamp, uuid } from "drizzle-orm/pg-core";
import type { JsonObject, PlanCheckpoint, PlanCondition, WorkflowPhase } from "@intentmesh/contracts";
import { intentsSchema } from "./schema";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/**
 * Plans (RFC 0012, docs/plans.md): an ordered list of an intent's tasks with checkpoints,
 * conditions and a failure action. Progress is not stored: it is computed from the tasks' rows
 * whenever the plan is read, so it follows every task change exactly, on every replica. Every
 * change locks the intent row first (the service's lock order), then updates the plan by a
 * conditional UPDATE on its version, and writes the plan event to the intent's log in the same
 * transaction.
 */
export const plans = intentsSchema.table(
  "plans",
  {
    id: uuid("id").primaryKey(),
    /** Insertion order: the order of GET /intents/{id}/plans. */
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
    intentId: uuid("intent_id").notNull(),
    title: text("title"),
    state: text("state").notNull(),
    /** The plan's tasks, in plan order; each such task has plan_id = this plan. */
    taskIds: uuid("task_ids").array().notNull().default(sql`'{}'::uuid[]`),
    checkpoints: jsonb("checkpoints").$type<PlanCheckpoint[]>().notNull(),
    conditions: jsonb("conditions").$type<PlanCondition[]>().notNull(),
    onFailure: text("on_failure").notNull(),
    onComplete: text("on_complete").notNull(),
    metadata: jsonb("metadata").$type<JsonObject>().notNull(),
    createdBy: text("created_by").notNull(),
    version: integer("version").notNull(),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
    /** The workflow this plan is a run of (RFC 0024, docs/workflows.md), or null. */
    workflowId: uuid("workflow_id"),
    /** When the plan last became active: completed's duration_ms counts from it. */
    activatedAt: ts("activated_at"),
    /** The earliest timeout_hours deadline of a checkpoint awaiting approval: the checkpoint sweeper's index. */
    checkpointDueAt: ts("checkpoint_due_at"),
  },
  (t) => [
    index("plans_intent_idx").on(t.intentId, t.seq),
    index("plans_checkpoint_due_idx").on(t.checkpointDueAt).where(sql`${t.checkpointDueAt} is not null`),
    index("plans_workflow_idx").on(t.workflowId, t.seq).where(sql`${t.workflowId} is not null`)],
);

/** Workflow definitions (RFC 0024): the YAML as sent and what was parsed from it. A run is a plan (workflow_id). */
export const workflows = intentsSchema.table(
  "workflows",
  {
    id: uuid("id").primaryKey(),
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
    name: text("name").notNull(),
    description: text("description").notNull(),
    yamlSpec: text("yaml_spec").notNull(),
    types: jsonb("types").$type<Record<string, Record<string, unknown>>>().notNull(),
    phases: jsonb("phases").$type<WorkflowPhase[]>().notNull(),
    initialState: jsonb("initial_state").$type<JsonObject>().notNull(),
    createdBy: text("created_by").notNull(),
    version: integer("version").notNull(),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
  },
  (t) => [index("workflows_seq_idx").on(t.seq)],
);
