import { z } from "./zod";
import type { ZodType } from "zod";
import { defineEvent, type EventDefinition, type EventPayload } from "./event-definition";
import { AgentId, JsonObject, Timestamp, Uuid, pageLimit } from "./common";
import { command, IfMatch } from "./command";
import { PutRetryPolicyBody } from "./retries";
import { ESCALATION_LEVELS } from "./escalations";

/**
 * Tasks: units of work inside an intent (spec 2.5, 2.8, 2.12, 2.14, 3.1, 3.7, 4.8 rule 3, 4.9).
 * The spec names them without defining them; the model follows the official clients' Task and
 * TaskStatus (CLIENTS.md section 3). The transition table lives in
 * services/intents/src/tasks/task-status.ts; docs/tasks.md explains the decisions.
 */

export const TASK_STATUSES = ["pending", "ready", "claimed", "running", "blocked", "completed", "failed", "cancelled", "skipped"] as const;
export const TaskStatus = z.enum(TASK_STATUSES);
export type TaskStatus = z.infer<typeof TaskStatus>;

/** The blocked_reason the server writes when the task's intent suspends (spec 3.1). */
export const INTENT_SUSPENDED = "intent_suspended";

/** Free-form JSON fields (input, output) are bounded where they enter: 64 KiB of JSON each. */
export const MAX_TASK_JSON_BYTES = 64 * 1024;
export const MAX_TASK_ERROR_CHARS = 10_000;
export const MAX_TASK_DEPENDENCIES = 100;
export const MAX_TASK_CAPABILITIES = 50;

/**
 * A task's priority (RFC 0012 1.1 shows "normal"; the client sends any word it is given and reads
 * "normal" when absent). A short lower-case word; the server orders nothing by it.
 */
export const TaskPriority = z
  .string()
  .trim()
  .min(1, "priority must not be empty")
  .max(32)
  .regex(/^[a-z][a-z0-9_-]*$/, "priority is a lower-case word such as low, normal, high or critical")
  .openapi({ description: "low, normal, high, critical, ... (RFC 0012); default normal" });
/** A capability an agent must have to take the task (RFC 0012 1.1 capabilities_required). */
export const Capability = z.string().trim().min(1, "a capability must not be empty").max(100);

const boundedJson = (field: string) =>
  JsonObject.refine((value) => Buffer.byteLength(JSON.stringify(value)) <= MAX_TASK_JSON_BYTES, {
    message: `${field} must be at most ${MAX_TASK_JSON_BYTES} bytes of JSON`,
  });

/** Spec 2.14: the task's working-memory policy, with its defaults. */
export const MemoryPolicy = z
  .object({
    archive_on_completion: z.boolean().default(true),
    inherit_from_parent: z.boolean().default(false),
    max_entries: z.number().int().min(1).max(1_000_000).nullable().optional(),
    max_total_size_kb: z.number().int().min(1).max(10_000_000).nullable().optional(),
  })
  .strict()
  .openapi("TaskMemoryPolicy");
export type MemoryPolicy = z.output<typeof MemoryPolicy>;
export const DEFAULT_MEMORY_POLICY: MemoryPolicy = { archive_on_completion: true, inherit_from_parent: false };

/** The task's retry policy: the body of PUT /intents/{id}/retry-policy; it overrides the intent's (spec 2.8). */
export const TaskRetryPolicy = PutRetryPolicyBody;
export type TaskRetryPolicy = z.output<typeof TaskRetryPolicy>;

export const Task = z
  .object({
    id: Uuid,
    task_id: Uuid.openapi({ description: "the same as id (the spec's name; the clients read id)" }),
    intent_id: Uuid,
    title: z.string(),
    name: z.string().openapi({ description: "the same as title (the clients' name)" }),
    description: z.string().nullable(),
    parent_task_id: Uuid.nullable(),
    plan_id: Uuid.nullable().openapi({ description: "the plan the task belongs to (RFC 0012), or null" }),
    depends_on: z.array(Uuid),
    priority: z.string(),
    capabilities_required: z.array(z.string()),
    metadata: JsonObject,
    io_contract: z
      .object({
        workflow_id: Uuid,
        phase_name: z.string(),
        inputs: z.record(z.string(), z.string()),
        outputs: z.record(z.string(), z.unknown()).nullable(),
        static_inputs: JsonObject,
      })
      .nullable()
      .openapi({ description: "a workflow phase's I/O contract (RFC 0024, docs/workflows.md): inputs wired at claim, outputs checked at completion; null for other tasks" }),
    status: TaskStatus,
    assigned_agent: z.string().nullable(),
    previous_agent: z.string().nullable().openapi({ description: "the agent that last held the task before it was reassigned" }),
    previous_agents: z.array(z.string()).openapi({ description: "every agent that held the task before, oldest first (spec 4.8 rule 3)" }),
    memory_policy: MemoryPolicy,
    retry_policy: z.unknown().nullable(),
    input: JsonObject,
    output: JsonObject.nullable(),
    error: z.string().nullable(),
    blocked_reason: z.string().nullable(),
    suspended_intent_id: Uuid.nullable(),
    attempt: z.number().int().openapi({ description: "how many times the task was started" }),
    created_by: z.string(),
    version: z.number().int(),
    created_at: Timestamp,
    updated_at: Timestamp,
    claimed_at: Timestamp.nullable(),
    started_at: Timestamp.nullable(),
    completed_at: Timestamp.nullable().openapi({ description: "when the task reached completed, failed, cancelled or skipped" }),
  })
  .openapi("Task");
export type Task = z.infer<typeof Task>;

const TaskFields = {
  title: z.string().trim().min(1, "title must not be empty").max(500).optional(),
  name: z.string().trim().min(1, "name must not be empty").max(500).optional().openapi({ description: "alias of title (the clients send name)" }),
  description: z.string().max(20_000).nullable().optional(),
  parent_task_id: Uuid.nullable().optional(),
  depends_on: z.array(Uuid).max(MAX_TASK_DEPENDENCIES).default([]),
  plan_id: Uuid.nullable().optional().openapi({ description: "a plan of the same intent; the task joins the plan's tasks (RFC 0012)" }),
  priority: TaskPriority.default("normal"),
  capabilities_required: z.array(Capability).max(MAX_TASK_CAPABILITIES).default([]),
  metadata: boundedJson("metadata").default({}),
  assigned_agent: AgentId.nullable().optional(),
  memory_policy: MemoryPolicy.default(DEFAULT_MEMORY_POLICY),
  retry_policy: TaskRetryPolicy.nullable().optional(),
  input: boundedJson("input").default({}),
};

const requireTitle = (body: { title?: string | undefined; name?: string | undefined }, ctx: z.RefinementCtx) => {
  if (!body.title && !body.name) ctx.addIssue({ code: "custom", path: ["title"], message: "title (or name) is required" });
  else if (body.title && body.name && body.title !== body.name) ctx.addIssue({ code: "custom", path: ["name"], message: "name is an alias of title; send one, or the same value" });
};

/** POST /intents/{id}/tasks. */
export const CreateTaskBody = z.object(TaskFields).strict().superRefine(requireTitle).openapi("CreateTask");
export type CreateTaskBody = z.output<typeof CreateTaskBody>;


/** PATCH /tasks/{tid} (If-Match required): the fields the clients patch. */
export const PatchTaskBody = z
  .object({
    status: TaskStatus.optional(),
    assigned_agent: AgentId.nullable().optional(),
    output: boundedJson("output").nullable().optional(),
    error: z.string().max(MAX_TASK_ERROR_CHARS).nullable().optional(),
    blocked_reason: z.string().trim().min(1).max(500).nullable().optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: "send at least one of status, assigned_agent, output, error, blocked_reason" })
  .openapi("PatchTask");
export type PatchTaskBody = z.output<typeof PatchTaskBody>;

/** POST /tasks/{tid}/complete. */
export const CompleteTaskBody = z.object({ output: boundedJson("output").optional() }).strict().openapi("CompleteTask");
/** POST /tasks/{tid}/fail. */
export const FailTaskBody = z
  .object({
    error: z.string().max(MAX_TASK_ERROR_CHARS).default(""),
    error_code: z.string().min(1).max(100).regex(/^[^\s]+$/, "must not contain whitespace").optional(),
  })
  .strict()
  .openapi("FailTask");
/** POST /tasks/{tid}/cancel. */
export const CancelTaskBody = z.object({ reason: z.string().max(2000).optional() }).strict().openapi("CancelTask");
/** POST /tasks/{tid}/claim and /start take no body. */
export const EmptyTaskBody = z.object({}).strict();

export const TASK_ACTIONS = ["claim", "start", "complete", "fail", "cancel"] as const;
export type TaskAction = (typeof TASK_ACTIONS)[number];

export const MAX_TASK_PAGE = 500;
export const ListTasksQuery = z.object({
  status: z
    .string()
    .optional()
    .transform((value) => (value ? value.split(",").map((s) => s.trim()).filter(Boolean) : undefined))
    .pipe(z.array(TaskStatus).optional())
    .openapi({ description: "comma-separated statuses" }),
  assigned_agent: AgentId.optional(),
  after: z.string().regex(/^\d{1,15}$/, "after must be a cursor from next_cursor").optional(),
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .optional()
    .openapi({ description: "the clients' paging: with offset the answer is a bare array of tasks (what the Python client's list_tasks reads), without it {tasks, next_cursor, has_more}" }),
  limit: pageLimit(100, MAX_TASK_PAGE),
});
export type ListTasksQuery = z.infer<typeof ListTasksQuery>;

export const TaskPage = z
  .object({ tasks: z.array(Task), next_cursor: z.string().nullable(), has_more: z.boolean() })
  .openapi("TaskPage");

const TaskRef = z.object({ task_id: Uuid });

// What the commands answer (each command carries its output schema).
export const UnknownTasks = z.object({ unknown: z.array(z.string()) });

/** The task moves share one code path (services/intents task moves) and so one list of refusals. */
const TASK_MOVE_ERRORS = ["AGENT_DRAINING", "INTENT_SUSPENDED", "INVALID_TASK_TRANSITION", "MISSING_OUTPUT", "OUTPUT_TYPE_MISMATCH", "PLAN_PAUSED", "TASK_CONDITION_PENDING", "TASK_DEPENDENCIES_PENDING", "TASK_NOT_FOUND", "TASK_SUSPENDED", "UNRESOLVABLE_INPUT", "VERSION_MISMATCH"] as const;

export const taskCommands = {
  create: command("intents", "tasks.create", z.object({ intent_id: Uuid, body: CreateTaskBody }), Task, [
    "COORDINATOR_PAUSED",
    "GUARDRAIL_VIOLATION",
    "INTENT_CLOSED",
    "INTENT_NOT_FOUND",
    "INVALID_PLAN_TRANSITION",
    "UNKNOWN_PLAN_REFERENCE",
    "UNKNOWN_TASK_REFERENCE",
  ]),
  get: command("intents", "tasks.get", TaskRef, Task, ["TASK_NOT_FOUND"]),
  list: command("intents", "tasks.list", z.object({ intent_id: Uuid, query: ListTasksQuery }), z.union([TaskPage, z.array(Task)]), ["INTENT_NOT_FOUND"]),
  patch: command("intents", "tasks.patch", TaskRef.merge(IfMatch).extend({ body: PatchTaskBody }), Task, ["AGENT_DRAINING", "INTENT_SUSPENDED", "INVALID_TASK_TRANSITION", "MISSING_OUTPUT", "OUTPUT_TYPE_MISMATCH", "PLAN_PAUSED", "PRECONDITION_REQUIRED", "TASK_CONDITION_PENDING", "TASK_DEPENDENCIES_PENDING", "TASK_NOT_FOUND", "TASK_SUSPENDED", "UNRESOLVABLE_INPUT", "VERSION_MISMATCH"]),
  claim: command("intents", "tasks.claim", TaskRef.merge(IfMatch).extend({ body: EmptyTaskBody }), Task, TASK_MOVE_ERRORS),
  start: command("intents", "tasks.start", TaskRef.merge(IfMatch).extend({ body: EmptyTaskBody }), Task, TASK_MOVE_ERRORS),
  complete: command("intents", "tasks.complete", TaskRef.merge(IfMatch).extend({ body: CompleteTaskBody }), Task, TASK_MOVE_ERRORS),
  fail: command("intents", "tasks.fail", TaskRef.merge(IfMatch).extend({ body: FailTaskBody }), Task, TASK_MOVE_ERRORS),
  cancel: command("intents", "tasks.cancel", TaskRef.merge(IfMatch).extend({ body: CancelTaskBody }), Task, TASK_MOVE_ERRORS),
  /**
   * Asked by the registry on a heartbeat that lists tasks_in_progress: which of those ids are not
   * tasks the agent holds (claimed, running, or blocked while it held them). {unknown: [...]}.
   */
  held: command("intents", "tasks.held", z.object({ agent_id: z.string().min(1).max(200), task_ids: z.array(z.string().max(200)).max(1000) }), UnknownTasks),
} as const;

/**
 * The task event catalogue: every task event name, written once, with its payload. They go to
 * the intent's log (im.evt.intent.<intent_id>.<event_type>, stream IM_INTENTS). Every payload
 * carries task_id, status (after the change) and version.
 */
const base = { task_id: Uuid, status: TaskStatus, version: z.number().int() };
const agentField = { agent_id: z.string().nullable() };
/** A task event: written by the intents service on the intent's log. */
const taskEvent = <const Name extends `task.${string}`, Schema extends ZodType>(name: Name, payload: Schema) =>
  defineEvent({ name, logs: ["intent"], payload, description: "a task changed (docs/tasks.md); written by the intents service" });
export const taskEvents = {
  created: taskEvent("task.created", z.object({
      ...base,
      title: z.string(),
      parent_task_id: Uuid.nullable(),
      depends_on: z.array(Uuid),
      assigned_agent: z.string().nullable(),
      memory_policy: MemoryPolicy,
      plan_id: Uuid.nullable().optional(),
      priority: z.string().optional(),
      capabilities_required: z.array(z.string()).optional(),
    })),
  claimed: taskEvent("task.claimed", z.object({ ...base, ...agentField })),
  started: taskEvent("task.started", z.object({ ...base, ...agentField, attempt: z.number().int() })),
  /** Consumed by channels (close task-scoped channels) and memory (archive, then delete working memory). */
  completed: taskEvent("task.completed", z.object({ ...base, ...agentField, memory_policy: MemoryPolicy })),
  failed: taskEvent("task.failed", z.object({ ...base, ...agentField, error: z.string().nullable(), error_code: z.string().nullable(), memory_policy: MemoryPolicy })),
  blocked: taskEvent("task.blocked", z.object({ ...base, from: TaskStatus, blocked_reason: z.string(), suspended_intent_id: Uuid.nullable() })),
  unblocked: taskEvent("task.unblocked", z.object({ ...base, from: TaskStatus, reason: z.string() })),
  cancelled: taskEvent("task.cancelled", z.object({ ...base, from: TaskStatus, reason: z.string().nullable(), memory_policy: MemoryPolicy })),
  /** A coordinator decided the task need not run; its dependents may become ready. */
  skipped: taskEvent("task.skipped", z.object({ ...base, from: TaskStatus, reason: z.string().nullable() })),
  /** Fields changed without a status change (output, error, blocked_reason, assigned_agent). */
  updated: taskEvent("task.updated", z.object({ ...base, changed: z.array(z.string()) })),
  /**
   * RFC-0013 2.1: the supervisor of the intent's coordinator sent the task to a human; the
   * governance service opens the escalation (id = this event's id). The task itself is unchanged.
   */
  forceEscalated: taskEvent("task.force_escalated", z.object({
      ...base,
      lease_id: Uuid,
      coordinator_id: z.string(),
      escalated_by: z.string(),
      reason: z.string(),
      priority: z.enum(ESCALATION_LEVELS),
    })),
  /** The task is ready again: a retry after a failure, a retry asked by a coordinator, or its agent died (reason agent_dead). */
  retrying: taskEvent("task.retrying", z.object({ ...base, from: TaskStatus, reason: z.string(), previous_agent: z.string().nullable(), attempt: z.number().int(), retry_at: Timestamp.nullable() })),
} as const satisfies Record<string, EventDefinition>;
export type TaskEventKey = keyof typeof taskEvents;
export type TaskEventPayload<K extends TaskEventKey> = EventPayload<(typeof taskEvents)[K]>;
/** The task event names, for filters and docs. */
export const TASK_EVENT_TYPES = Object.values(taskEvents).map((e) => e.name);
/** The events that end a task: other services consume them (docs/subjects.md). */
export const TASK_END_EVENT_TYPES = [taskEvents.completed.name, taskEvents.failed.name, taskEvents.cancelled.name] as const;
