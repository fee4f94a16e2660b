import { z } from "./zod";
import type { ZodType } from "zod";
import { defineEvent, type EventDefinition, type EventPayload } from "./event-definition";
import { JsonObject, Timestamp, Uuid, pageLimit } from "./common";
import { command, IfMatch } from "./command";
import { TaskStatus } from "./tasks";

/**
 * Plans (RFC 0012 2): an execution strategy over an intent's tasks: their order, checkpoints,
 * conditions, what happens on failure, and progress computed from the tasks' states. Created
 * the way the Python client (POST /plans {intent_id, tasks[], ...}) and the MCP server
 * (POST /intents/{id}/plans {title, steps[]}, POST /intents/{id}/plans/decompose) call it.
 * docs/plans.md explains the model and each decision.
 */

export const PLAN_STATES = ["draft", "active", "paused", "completed", "failed", "cancelled"] as const;
export const PlanState = z.enum(PLAN_STATES);
export type PlanState = z.infer<typeof PlanState>;

/** What the plan does when one of its tasks fails for good (the client's PlanFailureAction). */
export const PLAN_FAILURE_ACTIONS = ["pause_and_escalate", "notify", "fail"] as const;
export const PlanFailureAction = z.enum(PLAN_FAILURE_ACTIONS);
export type PlanFailureAction = z.infer<typeof PlanFailureAction>;

export const MAX_PLAN_TASKS = 200;
export const MAX_PLAN_CHECKPOINTS = 50;
export const MAX_PLAN_CONDITIONS = 100;
export const MAX_PLAN_JSON_BYTES = 64 * 1024;
export const MAX_DECOMPOSE_CHARS = 20_000;
export const MAX_DECOMPOSE_DEPTH = 10;

const Label = z.string().trim().min(1).max(200);

/** How a checkpoint stands: pending until its task is done, then awaiting approval (reached, escalated) or resolved. */
export const CHECKPOINT_STATUSES = ["pending", "reached", "escalated", "passed", "approved", "rejected", "timed_out"] as const;
export type CheckpointStatus = (typeof CHECKPOINT_STATUSES)[number];
/** A checkpoint in these states holds its plan paused until approved or rejected. */
export const AWAITING_CHECKPOINT: readonly CheckpointStatus[] = ["reached", "escalated"];

/** What a checkpoint's timeout does (RFC 0012 2.3). */
const CheckpointOnTimeout = z.enum(["escalate", "auto_approve", "fail"]);

/**
 * A checkpoint (RFC 0012 2.3; the client's Checkpoint.to_dict). Enforced (docs/plans.md): when
 * its task is done the plan pauses until it is approved. status, approved_by, approved_at,
 * reached_at, due_at, rejected_by and reason are the server's: accepted (a client may send back
 * what it read) and replaced by what is stored.
 */
export const PlanCheckpoint = z
  .object({
    id: Label.optional(),
    name: Label,
    after_task: Label.optional(),
    after: Label.optional().openapi({ description: "alias of after_task (the RFC's YAML)" }),
    requires_approval: z.boolean().default(true),
    approvers: z.array(Label).max(50).default([]),
    timeout_hours: z.number().int().min(0).max(24 * 366).nullable().optional(),
    on_timeout: CheckpointOnTimeout.default("escalate"),
    status: z.string().trim().min(1).max(50).default("pending"),
    approved_by: Label.nullable().optional(),
    approved_at: Timestamp.nullable().optional(),
    reached_at: Timestamp.nullable().optional(),
    due_at: Timestamp.nullable().optional(),
    rejected_by: Label.nullable().optional(),
    reason: z.string().max(2000).nullable().optional(),
  })
  .strict()
  .openapi("PlanCheckpoint");
export type PlanCheckpoint = z.output<typeof PlanCheckpoint>;

/**
 * A checkpoint as a plan answers it: stored with its id (cp_<n> when none was sent), `after`
 * resolved into after_task, and the server's status and decision fields.
 */
export const PlanCheckpointView = PlanCheckpoint.omit({ after: true })
  .extend({ id: Label, requires_approval: z.boolean(), approvers: z.array(Label), on_timeout: CheckpointOnTimeout, status: z.enum(CHECKPOINT_STATUSES) })
  .passthrough()
  .openapi("PlanCheckpointView");
export type PlanCheckpointView = z.output<typeof PlanCheckpointView>;

/**
 * A condition (RFC 0012 2.4; the client's PlanCondition): `when` (a safe expression subset,
 * docs/plans.md) is evaluated once every task it names is done; false skips task_id. result and
 * evaluated_at are the server's (accepted, replaced by what is stored).
 */
export const PlanCondition = z
  .object({
    id: Label.optional(),
    task_id: Label,
    when: z.string().trim().min(1).max(2000),
    otherwise: z.enum(["skip"]).default("skip").openapi({ description: "what a false condition does to its task: skip (the RFC's only action)" }),
    result: z.boolean().nullable().optional(),
    evaluated_at: Timestamp.nullable().optional(),
  })
  .strict()
  .openapi("PlanCondition");
export type PlanCondition = z.output<typeof PlanCondition>;

/** A condition as a plan answers it: stored with its id (cond_<n> when none was sent) and, once evaluated, its result. */
export const PlanConditionView = PlanCondition.extend({ id: Label, otherwise: z.enum(["skip"]) }).passthrough().openapi("PlanConditionView");
export type PlanConditionView = z.output<typeof PlanConditionView>;

/** A step of the MCP server's create_plan: becomes a task of the plan, in order. */
export const PlanStep = z
  .object({
    title: z.string().trim().min(1, "a step's title must not be empty").max(500),
    description: z.string().max(20_000).optional(),
    depends_on: z
      .array(z.string().trim().min(1).max(500))
      .max(100)
      .default([])
      .openapi({ description: "earlier steps of the same plan by title, or tasks of the intent by id" }),
  })
  .strict()
  .openapi("PlanStep");
export type PlanStep = z.output<typeof PlanStep>;

const boundedJson = (field: string) =>
  JsonObject.refine((value) => Buffer.byteLength(JSON.stringify(value)) <= MAX_PLAN_JSON_BYTES, { message: `${field} must be at most ${MAX_PLAN_JSON_BYTES} bytes of JSON` });

const PlanFields = {
  title: z.string().trim().min(1, "title must not be empty").max(500).optional(),
  tasks: z.array(Uuid).max(MAX_PLAN_TASKS).optional().openapi({ description: "ids of existing tasks of the intent, in plan order" }),
  checkpoints: z.array(PlanCheckpoint).max(MAX_PLAN_CHECKPOINTS).optional(),
  conditions: z.array(PlanCondition).max(MAX_PLAN_CONDITIONS).optional(),
  on_failure: PlanFailureAction.optional(),
  on_complete: z.string().trim().min(1).max(50).optional(),
  metadata: boundedJson("metadata").optional(),
};

/** POST /plans (the Python client, intent_id in the body) and POST /intents/{id}/plans (the MCP server). */
export const CreatePlanBody = z
  .object({
    ...PlanFields,
    steps: z.array(PlanStep).max(MAX_PLAN_TASKS).optional().openapi({ description: "the MCP server's steps: each becomes a new task of the plan, in order" }),
    state: z.enum(["draft", "active"]).optional().openapi({ description: "draft (the default) or active; a plan created with steps starts active" }),
    created_by: z.string().trim().min(1).max(200).optional().openapi({ description: "a label the MCP server sends; the plan records the caller" }),
  })
  .strict()
  .superRefine((body, ctx) => {
    const count = (body.tasks?.length ?? 0) + (body.steps?.length ?? 0);
    if (count > MAX_PLAN_TASKS) ctx.addIssue({ code: "custom", path: ["steps"], message: `a plan holds at most ${MAX_PLAN_TASKS} tasks` });
  })
  .openapi("CreatePlan");
export type CreatePlanBody = z.output<typeof CreatePlanBody>;

/** PATCH /plans/{id} (If-Match required): the client's update_plan kwargs. `tasks` replaces the list. */
export const PatchPlanBody = z
  .object({ ...PlanFields, state: PlanState.optional() })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: "send at least one field to change" })
  .openapi("PatchPlan");
export type PatchPlanBody = z.output<typeof PatchPlanBody>;

/** POST /intents/{id}/plans/decompose: the MCP server's openintent_decompose_task. */
export const DecomposeBody = z
  .object({
    task_description: z.string().trim().min(1, "task_description must not be empty").max(MAX_DECOMPOSE_CHARS),
    max_depth: z.number().int().min(1).max(MAX_DECOMPOSE_DEPTH).default(3),
    requested_by: z.string().trim().min(1).max(200).optional().openapi({ description: "a label the MCP server sends; the plan records the caller" }),
  })
  .strict()
  .openapi("DecomposeTask");
export type DecomposeBody = z.output<typeof DecomposeBody>;

/** A task of the plan that waits on a suspended intent (RFC 0012 9, RFC 0026). */
export const SuspendedTask = z
  .object({ task_id: Uuid, intent_id: Uuid, suspended_since: Timestamp.nullable(), expires_at: Timestamp.nullable() })
  .openapi("SuspendedTask");

/** Progress, computed from the tasks' states when the plan is read. */
export const PlanProgress = z
  .object({
    total: z.number().int(),
    by_status: z.record(TaskStatus, z.number().int()),
    done: z.number().int().openapi({ description: "completed + skipped" }),
    percent_complete: z.number().openapi({ description: "done / total x 100, rounded to 2 places; 0 for an empty plan" }),
    suspended_tasks: z.array(SuspendedTask),
  })
  .openapi("PlanProgress");
export type PlanProgress = z.infer<typeof PlanProgress>;

export const PlanStepView = z
  .object({ task_id: Uuid, title: z.string(), status: TaskStatus, depends_on: z.array(Uuid), parent_task_id: Uuid.nullable(), assigned_agent: z.string().nullable() })
  .openapi("PlanStepView");

export const Plan = z
  .object({
    id: Uuid,
    plan_id: Uuid.openapi({ description: "the same as id" }),
    intent_id: Uuid,
    title: z.string().nullable(),
    version: z.number().int(),
    state: PlanState,
    tasks: z.array(Uuid).openapi({ description: "the plan's tasks, in plan order" }),
    steps: z.array(PlanStepView).openapi({ description: "the tasks with their current status, in plan order" }),
    checkpoints: z.array(PlanCheckpointView),
    conditions: z.array(PlanConditionView),
    on_failure: PlanFailureAction,
    on_complete: z.string(),
    metadata: JsonObject,
    progress: PlanProgress,
    created_by: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("Plan");
export type Plan = z.infer<typeof Plan>;

const PlanRef = z.object({ plan_id: Uuid, intent_id: Uuid.optional() });

/**
 * GET /intents/{id}/plans: a bare list (the client's list_plans reads an array and sends no
 * paging), oldest first, paged by limit (default 100, at most 500) and offset; a page also
 * stops before 768 KiB of JSON.
 */
export const ListPlansQuery = z.object({
  limit: pageLimit(100, 500),
  offset: z.coerce.number().int().min(0).max(100_000).default(0),
});
const CheckpointRef = z.object({ plan_id: Uuid, checkpoint_id: Label });

/** POST /plans/{id}/checkpoints/{cp}/approve. */
export const ApproveCheckpointBody = z.object({ comment: z.string().trim().max(2000).optional() }).strict().openapi("ApproveCheckpoint");
/** POST /plans/{id}/checkpoints/{cp}/reject: the plan fails (the RFC's on_reject path is not modelled). */
export const RejectCheckpointBody = z.object({ reason: z.string().trim().max(2000).optional() }).strict().openapi("RejectCheckpoint");

/** POST /plans/{id}/approve (RFC-0013 2.1, 9): the supervisor signs off a draft plan at the review gate; it is activated. */
export const SupervisorApprovePlanBody = z.object({ comment: z.string().trim().max(2000).optional() }).strict().openapi("SupervisorApprovePlan");
/** POST /plans/{id}/reject (RFC-0013 2.1 "reject a plan with feedback"): the draft plan is cancelled, the feedback logged. */
export const SupervisorRejectPlanBody = z.object({ reason: z.string().trim().min(1).max(2000) }).strict().openapi("SupervisorRejectPlan");
const PLAN_REVIEW_ERRORS = ["COORDINATOR_LEASE_NOT_FOUND", "FORBIDDEN", "INVALID_PLAN_TRANSITION", "PLAN_NOT_FOUND"] as const;

const CHECKPOINT_ERRORS = ["PLAN_NOT_FOUND", "PLAN_CHECKPOINT_NOT_FOUND", "CHECKPOINT_NOT_AWAITING", "FORBIDDEN"] as const;

const PLAN_CREATE_ERRORS = ["COORDINATOR_PAUSED", "GUARDRAIL_VIOLATION", "INTENT_CLOSED", "INTENT_NOT_FOUND", "UNKNOWN_TASK_REFERENCE", "TASK_IN_ANOTHER_PLAN"] as const;

export const planCommands = {
  create: command("intents", "plans.create", z.object({ intent_id: Uuid, body: CreatePlanBody }), Plan, PLAN_CREATE_ERRORS),
  decompose: command("intents", "plans.decompose", z.object({ intent_id: Uuid, body: DecomposeBody }), Plan, ["COORDINATOR_PAUSED", "GUARDRAIL_VIOLATION", "INTENT_CLOSED", "INTENT_NOT_FOUND"]),
  get: command("intents", "plans.get", PlanRef, Plan, ["PLAN_NOT_FOUND"]),
  list: command("intents", "plans.list", z.object({ intent_id: Uuid, query: ListPlansQuery }), z.array(Plan), ["INTENT_NOT_FOUND"]),
  update: command(
    "intents",
    "plans.update",
    z.object({ plan_id: Uuid }).merge(IfMatch).extend({ body: PatchPlanBody }),
    Plan,
    ["PLAN_NOT_FOUND", "PRECONDITION_REQUIRED", "VERSION_MISMATCH", "INVALID_PLAN_TRANSITION", "UNKNOWN_TASK_REFERENCE", "TASK_IN_ANOTHER_PLAN", "PLAN_AT_CHECKPOINT", "GUARDRAIL_VIOLATION"],
  ),
  checkpoints: command("intents", "plans.checkpoints", z.object({ plan_id: Uuid }), z.array(PlanCheckpointView), ["PLAN_NOT_FOUND"]),
  approveCheckpoint: command("intents", "plans.checkpoint-approve", CheckpointRef.extend({ body: ApproveCheckpointBody }), Plan, CHECKPOINT_ERRORS),
  rejectCheckpoint: command("intents", "plans.checkpoint-reject", CheckpointRef.extend({ body: RejectCheckpointBody }), Plan, CHECKPOINT_ERRORS),
  supervisorApprove: command("intents", "plans.supervisor-approve", z.object({ plan_id: Uuid, body: SupervisorApprovePlanBody }), Plan, PLAN_REVIEW_ERRORS),
  supervisorReject: command("intents", "plans.supervisor-reject", z.object({ plan_id: Uuid, body: SupervisorRejectPlanBody }), Plan, PLAN_REVIEW_ERRORS),
} as const;

/**
 * The plan event catalogue (RFC 0012 7): names and payloads, written to the intent's log
 * (im.evt.intent.<intent_id>.<event_type>). Every payload carries plan_id, state (after the
 * change) and version.
 */
const base = { plan_id: Uuid, state: PlanState, version: z.number().int() };
/** A plan event: written by the intents service on the intent's log. */
const planEvent = <const Name extends `plan.${string}`, Schema extends ZodType>(name: Name, payload: Schema) =>
  defineEvent({ name, logs: ["intent"], payload, description: "a plan changed (RFC-0012 §7, docs/plans.md); written by the intents service" });
export const planEvents = {
  created: planEvent("plan.created", z.object({ ...base, task_count: z.number().int(), title: z.string().nullable() })),
  /** Fields changed without a change of state (tasks, checkpoints, conditions, ...). */
  updated: planEvent("plan.updated", z.object({ ...base, changed: z.array(z.string()) })),
  activated: planEvent("plan.activated", z.object({ ...base, from: PlanState })),
  paused: planEvent("plan.paused", z.object({ ...base, from: PlanState, reason: z.string(), task_id: Uuid.nullable(), checkpoint_id: z.string().nullable().optional() })),
  resumed: planEvent("plan.resumed", z.object({ ...base, from: PlanState })),
  completed: planEvent("plan.completed", z.object({ ...base, from: PlanState, tasks_completed: z.number().int(), tasks_skipped: z.number().int(), duration_ms: z.number().int() })),
  failed: planEvent("plan.failed", z.object({ ...base, from: PlanState, failed_task_id: Uuid.nullable(), error: z.string().nullable() })),
  cancelled: planEvent("plan.cancelled", z.object({ ...base, from: PlanState })),
  /** RFC 0012 7: the task a checkpoint follows is done; with requires_approval the plan pauses. */
  checkpointReached: planEvent("plan.checkpoint_reached", z.object({ ...base, checkpoint_id: z.string(), task_id: Uuid, requires_approval: z.boolean(), due_at: Timestamp.nullable() })),
  checkpointApproved: planEvent("plan.checkpoint_approved", z.object({ ...base, checkpoint_id: z.string(), approved_by: z.string(), automatic: z.boolean() })),
  checkpointRejected: planEvent("plan.checkpoint_rejected", z.object({ ...base, checkpoint_id: z.string(), rejected_by: z.string(), reason: z.string().nullable() })),
  /** timeout_hours passed without a decision: on_timeout says what followed (escalate keeps the plan paused). */
  checkpointTimedOut: planEvent("plan.checkpoint_timed_out", z.object({ ...base, checkpoint_id: z.string(), on_timeout: z.enum(["escalate", "auto_approve", "fail"]) })),
  /** RFC-0013 2.1: the supervisor of the intent's coordinator signed off the draft plan at the review gate (it is activated in the same commit). */
  approvedBySupervisor: planEvent("plan.approved_by_supervisor", z.object({ ...base, approved_by: z.string(), comment: z.string().nullable() })),
  /** RFC-0013 2.1: the supervisor rejected the draft plan with feedback (it is cancelled in the same commit). */
  rejectedBySupervisor: planEvent("plan.rejected_by_supervisor", z.object({ ...base, rejected_by: z.string(), reason: z.string() })),
  /** A condition's `when` evaluated (RFC 0012 2.4): false skips its task. */
  conditionEvaluated: planEvent("plan.condition_evaluated", z.object({ ...base, condition_id: z.string(), task_id: Uuid, result: z.boolean(), skipped: z.boolean() })),
} as const satisfies Record<string, EventDefinition>;
export type PlanEventKey = keyof typeof planEvents;
export type PlanEventPayload<K extends PlanEventKey> = EventPayload<(typeof planEvents)[K]>;
export const PLAN_EVENT_TYPES = Object.values(planEvents).map((e) => e.name);
