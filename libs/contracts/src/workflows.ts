import { z } from "./zod";
import { JsonObject, Timestamp, Uuid, pageLimit } from "./common";
import { command, IfMatch } from "./command";
import { PlanProgress, PlanState } from "./plans";
import { TaskStatus } from "./tasks";

/**
 * Workflows with I/O contracts (RFC 0024, docs/workflows.md): a YAML definition of phases with
 * named types (`types`, kept in the run's intent as `state._io_types`), declared `outputs`
 * checked when a phase's task completes, and `inputs` wired from upstream outputs when it is
 * claimed. Served on the MCP server's paths (/workflows), mapped onto plans: a run is a plan of
 * a new intent whose tasks are the phases.
 */

export const MAX_WORKFLOW_YAML_CHARS = 256 * 1024;
export const MAX_WORKFLOW_PHASES = 100;

/** POST /workflows: the MCP server's openintent_create_workflow. */
export const CreateWorkflowBody = z
  .object({
    name: z.string().trim().min(1, "name must not be empty").max(200),
    yaml_spec: z.string().min(1, "yaml_spec must not be empty").max(MAX_WORKFLOW_YAML_CHARS),
    description: z.string().max(20_000).optional(),
    created_by: z.string().trim().min(1).max(200).optional().openapi({ description: "a label the MCP server sends; the workflow records the caller" }),
  })
  .strict()
  .openapi("CreateWorkflow");
export type CreateWorkflowBody = z.output<typeof CreateWorkflowBody>;

/** PATCH /workflows/{id} (If-Match required): a new name, description or YAML; runs already started keep theirs. */
export const PatchWorkflowBody = z
  .object({
    name: CreateWorkflowBody.shape.name.optional(),
    yaml_spec: CreateWorkflowBody.shape.yaml_spec.optional(),
    description: CreateWorkflowBody.shape.description,
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: "send at least one field to change" })
  .openapi("PatchWorkflow");
export type PatchWorkflowBody = z.output<typeof PatchWorkflowBody>;

export const WorkflowDeleted = z.object({ status: z.literal("deleted"), workflow_id: Uuid }).openapi("WorkflowDeleted");

/** POST /workflows/{id}/trigger: the MCP server's openintent_trigger_workflow. */
export const TriggerWorkflowBody = z
  .object({
    inputs: JsonObject.refine((v) => Buffer.byteLength(JSON.stringify(v)) <= 64 * 1024, { message: "inputs must be at most 65536 bytes of JSON" }).default({}),
    triggered_by: z.string().trim().min(1).max(200).optional().openapi({ description: "a label the MCP server sends; the run records the caller" }),
  })
  .strict()
  .openapi("TriggerWorkflow");
export type TriggerWorkflowBody = z.output<typeof TriggerWorkflowBody>;

export const ListWorkflowsQuery = z.object({
  limit: pageLimit(50, 200),
  offset: z.coerce.number().int().min(0).max(100_000).default(0),
});

/** A phase's output declaration: a type name, or {type, required}. */
export const OutputSpec = z.union([z.string(), z.object({ type: z.string(), required: z.boolean().optional() })]);

export const WorkflowPhase = z
  .object({
    name: z.string(),
    title: z.string(),
    description: z.string().nullable(),
    assign: z.string().nullable(),
    depends_on: z.array(z.string()),
    inputs: z.record(z.string(), z.string()),
    outputs: z.record(z.string(), OutputSpec).nullable().openapi({ description: "null: the phase declares no outputs (nothing checked)" }),
  })
  .openapi("WorkflowPhase");
export type WorkflowPhase = z.infer<typeof WorkflowPhase>;

export const SuspendedPhase = z
  .object({ phase_name: z.string(), task_id: Uuid, intent_id: Uuid, suspended_since: Timestamp.nullable(), expires_at: Timestamp.nullable() })
  .openapi("SuspendedPhase");

export const WorkflowRun = z
  .object({
    id: Uuid.openapi({ description: "the run's plan id" }),
    run_id: Uuid,
    workflow_id: Uuid,
    intent_id: Uuid,
    plan_id: Uuid,
    state: PlanState,
    inputs: JsonObject,
    phases: z.array(z.object({ phase_name: z.string(), task_id: Uuid, status: TaskStatus, input: JsonObject, output: JsonObject.nullable() })),
    progress: PlanProgress.extend({ suspended_phases: z.array(SuspendedPhase) }),
    created_by: z.string(),
    created_at: Timestamp,
  })
  .openapi("WorkflowRun");
export type WorkflowRun = z.infer<typeof WorkflowRun>;

export const Workflow = z
  .object({
    id: Uuid,
    workflow_id: Uuid,
    name: z.string(),
    description: z.string(),
    yaml_spec: z.string(),
    types: z.record(z.string(), z.record(z.string(), OutputSpec)),
    phases: z.array(WorkflowPhase),
    version: z.number().int(),
    created_by: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
    runs: z.array(WorkflowRun).optional().openapi({ description: "GET /workflows/{id}: its most recent runs (at most 20), newest first, with progress; absent in the list" }),
  })
  .openapi("Workflow");
export type Workflow = z.infer<typeof Workflow>;

export const workflowCommands = {
  create: command("intents", "workflows.create", z.object({ body: CreateWorkflowBody }), Workflow, ["INPUT_WIRING_ERROR"]),
  get: command("intents", "workflows.get", z.object({ workflow_id: Uuid }), Workflow, ["WORKFLOW_NOT_FOUND"]),
  list: command("intents", "workflows.list", z.object({ query: ListWorkflowsQuery }), z.array(Workflow), []),
  trigger: command("intents", "workflows.trigger", z.object({ workflow_id: Uuid, body: TriggerWorkflowBody }), WorkflowRun, ["WORKFLOW_NOT_FOUND"]),
  update: command(
    "intents",
    "workflows.update",
    z.object({ workflow_id: Uuid }).merge(IfMatch).extend({ body: PatchWorkflowBody }),
    Workflow,
    ["WORKFLOW_NOT_FOUND", "PRECONDITION_REQUIRED", "VERSION_MISMATCH", "INPUT_WIRING_ERROR"],
  ),
  delete: command("intents", "workflows.delete", z.object({ workflow_id: Uuid }).merge(IfMatch), WorkflowDeleted, ["WORKFLOW_NOT_FOUND", "VERSION_MISMATCH"]),
} as const;
