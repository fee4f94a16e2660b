import { randomUUID } from "node:crypto";
import { and, asc, desc, eq, sql } from "drizzle-orm";
import { AgentId, errors, isoTimestamp, type Caller, type CreateWorkflowBody, type JsonObject, type PatchWorkflowBody, type TaskStatus, type TriggerWorkflowBody, type Workflow, type WorkflowRun, intentEvents } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { plans, workflows } from "../db/schema-plans";
import { intents } from "../db/schema";
import { appendToLog } from "../kernel/event-log";
import { assertStateWithinLimit } from "../kernel/state-size";
import { MAX_PAGE_BYTES, withinPageBytes } from "../kernel/page-bytes";
import { writeNewPlan } from "../plans/handlers";
import { tasksOfPlan, toPlan, type PlanRow } from "../plans/statements";
import type { NewPlanTask } from "../plans/rules";
import { parseRef, parseWorkflow } from "./rules";

/**
 * The workflow commands (im.intents.workflows.*), the MCP server's /workflows calls mapped onto
 * plans (docs/workflows.md): a definition is parsed and checked once; a trigger creates a run: a
 * new intent (its state holds the workflow's types as `_io_types`) with an active plan whose
 * tasks are the phases, their dependencies and I/O contracts.
 */

type WorkflowRow = typeof workflows.$inferSelect;
const MAX_RUNS_SHOWN = 20;
/** POST /workflows: the YAML parsed and checked (422 INPUT_WIRING_ERROR); stored with what was parsed. */
export async function createWorkflow(ctx: IntentsContext, body: CreateWorkflowBody, caller: Caller): Promise<Workflow> {
  const parsed = parseWorkflow(body.yaml_spec);
  const now = ctx.clock.now();
  const [row] = await ctx.db
    .insert(workflows)
    .values({
      id: randomUUID(),
      name: body.name,
      description: body.description ?? "",
      yamlSpec: body.yaml_spec,
      types: parsed.types,
      phases: parsed.phases,
      initialState: parsed.initialState as JsonObject,
      createdBy: caller.actor,
      version: 1,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  return toWorkflow(row!, []);
}

/**
 * PATCH /workflows/{id} (If-Match required: 428 without, 409 stale): name, description, YAML
 * (parsed and checked as at create, 422 INPUT_WIRING_ERROR). Runs already started keep what
 * they were started with: each phase's task carries its own contract, each run's intent its types.
 */
export async function updateWorkflow(ctx: IntentsContext, workflowId: string, ifMatch: number | null, body: PatchWorkflowBody): Promise<Workflow> {
  if (ifMatch === null) throw errors.preconditionRequired("workflow");
  const parsed = body.yaml_spec !== undefined ? parseWorkflow(body.yaml_spec) : null;
  const current = await readWorkflow(ctx.db, workflowId);
  if (current.version !== ifMatch) throw errors.versionMismatch("workflow", workflowId, current.version, ifMatch);
  const [row] = await ctx.db
    .update(workflows)
    .set({
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(parsed ? { yamlSpec: body.yaml_spec!, types: parsed.types, phases: parsed.phases, initialState: parsed.initialState as JsonObject } : {}),
      version: sql`${workflows.version} + 1`,
      updatedAt: ctx.clock.now(),
    })
    .where(and(eq(workflows.id, workflowId), eq(workflows.version, ifMatch)))
    .returning();
  if (!row) {
    const now = await readWorkflow(ctx.db, workflowId);
    throw errors.versionMismatch("workflow", workflowId, now.version, ifMatch);
  }
  return toWorkflow(row, []);
}

/** DELETE /workflows/{id} (If-Match optional, 409 when stale): the definition goes; its runs are plans of their own intents and go on. */
export async function deleteWorkflow(ctx: IntentsContext, workflowId: string, ifMatch: number | null): Promise<{ status: "deleted"; workflow_id: string }> {
  const filters = ifMatch === null ? eq(workflows.id, workflowId) : and(eq(workflows.id, workflowId), eq(workflows.version, ifMatch));
  const [gone] = await ctx.db.delete(workflows).where(filters).returning({ id: workflows.id });
  if (!gone) {
    const current = await readWorkflow(ctx.db, workflowId);
    throw errors.versionMismatch("workflow", workflowId, current.version, ifMatch!);
  }
  return { status: "deleted", workflow_id: gone.id };
}

function toWorkflow(row: WorkflowRow, runs: WorkflowRun[] | undefined): Workflow {
  return {
    id: row.id,
    workflow_id: row.id,
    name: row.name,
    description: row.description,
    yaml_spec: row.yamlSpec,
    types: row.types as Workflow["types"],
    phases: row.phases,
    version: row.version,
    created_by: row.createdBy,
    created_at: isoTimestamp(row.createdAt),
    updated_at: isoTimestamp(row.updatedAt),
    ...(runs ? { runs } : {}),
  } as Workflow;
}

async function readWorkflow(db: Pick<Tx, "select">, workflowId: string): Promise<WorkflowRow> {
  const [row] = await db.select().from(workflows).where(eq(workflows.id, workflowId));
  if (!row) throw errors.notFound("workflow", workflowId);
  return row;
}

/** GET /workflows/{id}: the definition and its most recent runs with their progress. */
export async function getWorkflow(ctx: IntentsContext, workflowId: string): Promise<Workflow> {
  const row = await readWorkflow(ctx.db, workflowId);
  const runs = await ctx.db.select().from(plans).where(eq(plans.workflowId, workflowId)).orderBy(desc(plans.seq)).limit(MAX_RUNS_SHOWN);
  const workflow = toWorkflow(row, []);
  return { ...workflow, runs: withinPageBytes(await Promise.all(runs.map((plan) => toRun(ctx.db, plan))), MAX_PAGE_BYTES - Buffer.byteLength(JSON.stringify(workflow))) };
}

/** GET /workflows?limit&offset: the definitions, oldest first, without their runs (a bare list). */
export async function listWorkflows(ctx: IntentsContext, query: { limit?: number | undefined; offset: number }): Promise<Workflow[]> {
  const rows = await ctx.db.select().from(workflows).orderBy(asc(workflows.seq)).offset(query.offset).limit(query.limit ?? 50);
  return withinPageBytes(rows.map((row) => toWorkflow(row, undefined)));
}

/** A run: its plan's progress, with each phase's task and the phases waiting on a suspended intent (suspended_phases). */
async function toRun(db: Pick<Tx, "select">, plan: PlanRow): Promise<WorkflowRun> {
  const planTasks = await tasksOfPlan(db, plan);
  const view = toPlan(plan, planTasks);
  const phaseOf = new Map(planTasks.map((t) => [t.id, t.ioContract?.phase_name ?? t.title]));
  const meta = plan.metadata as { inputs?: JsonObject };
  return {
    id: plan.id,
    run_id: plan.id,
    workflow_id: plan.workflowId!,
    intent_id: plan.intentId,
    plan_id: plan.id,
    state: view.state,
    inputs: meta.inputs ?? {},
    phases: planTasks.map((t) => ({ phase_name: phaseOf.get(t.id)!, task_id: t.id, status: t.status as TaskStatus, input: t.input, output: t.output ?? null })),
    progress: {
      ...view.progress,
      suspended_phases: view.progress.suspended_tasks.map((s) => ({ phase_name: phaseOf.get(s.task_id)!, ...s })),
    },
    created_by: plan.createdBy,
    created_at: isoTimestamp(plan.createdAt),
  };
}

/**
 * POST /workflows/{id}/trigger: one transaction creates the run's intent (active; state = the
 * workflow's initial_state, `_io_types` = its types, `_workflow` = {workflow_id, name, inputs}),
 * an active plan of it (workflow_id set) and one task per phase: depends_on from the phases',
 * assigned to the phase's `assign` when that is an agent id, its static inputs
 * (`$trigger.key`, `$initial_state.key`) resolved into its input now, the rest at claim.
 */
export async function triggerWorkflow(ctx: IntentsContext, workflowId: string, body: TriggerWorkflowBody, caller: Caller): Promise<WorkflowRun> {
  const now = ctx.clock.now();
  const plan = await ctx.db.transaction(async (tx) => {
    const workflow = await readWorkflow(tx, workflowId);
    const intentId = randomUUID();
    const state: JsonObject = { ...(workflow.initialState as JsonObject), _io_types: workflow.types as JsonObject, _workflow: { workflow_id: workflow.id, name: workflow.name, inputs: body.inputs } };
    assertStateWithinLimit(intentId, state);
    await tx.insert(intents).values({
      id: intentId,
      title: workflow.name,
      description: workflow.description || null,
      createdBy: caller.actor,
      status: "active",
      constraints: {},
      state,
      confidence: 0,
      version: 1,
      eventSeq: 0,
      createdAt: now,
      updatedAt: now,
    });
    const created = newEvent(intentEvents.created, caller.actor, { title: workflow.name, description: workflow.description || null, created_by: caller.actor, status: "active", constraints: {}, confidence: 0, version: 1 });
    await appendToLog(tx, intentId, [created], now);
    const idOf = new Map(workflow.phases.map((p) => [p.name, randomUUID()]));
    const newTasks: NewPlanTask[] = workflow.phases.map((phase) => {
      const staticInputs: Record<string, unknown> = {};
      for (const [name, ref] of Object.entries(phase.inputs)) {
        const parsed = parseRef(ref);
        const value = parsed?.kind === "trigger" ? body.inputs[parsed.key] : parsed?.kind === "initial_state" ? (workflow.initialState as JsonObject)[parsed.key] : undefined;
        if (value !== undefined && value !== null) staticInputs[name] = value;
      }
      const agent = phase.assign ? AgentId.safeParse(phase.assign) : null;
      return {
        id: idOf.get(phase.name)!,
        title: phase.title,
        description: phase.description,
        dependsOn: phase.depends_on.map((d) => idOf.get(d)!),
        parentTaskId: null,
        assignedAgent: agent?.success ? agent.data : null,
        input: staticInputs,
        ioContract: { workflow_id: workflow.id, phase_name: phase.name, inputs: phase.inputs, outputs: phase.outputs, static_inputs: staticInputs },
      };
    });
    return writeNewPlan(tx, {
      intentId,
      planId: randomUUID(),
      title: workflow.name,
      state: "active",
      existing: [],
      newTasks,
      statuses: new Map(),
      body: { on_failure: "pause_and_escalate", metadata: { workflow_id: workflow.id, inputs: body.inputs } },
      caller,
      now,
      workflowId: workflow.id,
    });
  });
  ctx.published();
  return toRun(ctx.db, plan);
}

