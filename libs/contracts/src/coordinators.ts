import { z } from "./zod";
import { ActorId, AgentId, boundedJsonObject, JsonObject, pageLimit, Timestamp, Uuid } from "./common";
import { command, IfMatch, IntentRef } from "./command";
import { ESCALATION_LEVELS } from "./escalations";

/**
 * Coordinator leases and decision records (RFC-0013; docs/coordinators.md), at the paths and in
 * the shapes the official Python client calls them (CLIENTS.md section 7). A coordinator lease
 * makes one agent the coordinator of one intent: one holder at a time, kept by heartbeats, ended
 * on the server clock, handed to the next candidate when the holder dies.
 */

export const COORDINATOR_TYPES = ["llm", "human", "composite", "system"] as const;
/** What a lease answers: `active` (heartbeats on time), `unresponsive` (two intervals without one; another may take over), `failed_over` (ended). */
export const COORDINATOR_STATUSES = ["active", "paused", "unresponsive", "failed_over"] as const;
/** Why a lease ended: taken over once unresponsive, its agent died, handed off by its holder, replaced by a supervisor. */
export const COORDINATOR_END_REASONS = ["expired", "agent_dead", "handed_off", "replaced", "removed"] as const;
/** RFC-0013 3.1 on_exceed: what a guardrail refusal also starts (docs/coordinators.md). `fail` is not served. */
export const ON_EXCEED_VALUES = ["notify", "pause", "escalate", "pause_and_escalate"] as const;
/** The RFC's decision types (section 4.2), which the client's DecisionType enum holds. */
export const DECISION_TYPES = [
  "plan_created",
  "plan_modified",
  "task_assigned",
  "task_delegated",
  "escalation_initiated",
  "escalation_resolved",
  "checkpoint_evaluated",
  "failure_handled",
  "guardrail_approached",
  "coordinator_handoff",
] as const;

/**
 * The approval action of a plan review (requires_plan_review, requires_replan_review): granted by a
 * human key through the approval routes, or by the supervisor's approval at the plan review gate
 * (POST /plans/{id}/approve), which the governance service records as a granted plan review.
 */
export const PLAN_REVIEW_ACTION = "plan_review";

export const MAX_FAILOVER_CANDIDATES = 10;
/** The most intents coordinators.held_by answers for one agent (the newest grants first). */
export const MAX_HELD_LEASES_ANSWERED = 100;
export const MAX_HEARTBEAT_INTERVAL_SECONDS = 3600;

/**
 * The RFC-0013 guardrail keys the server enforces (docs/coordinators.md "Guardrails"), read flat
 * or under their section (budget, scope, temporal, review): a value of the wrong type would leave
 * a limit silently unenforced, so it is refused (400). Other keys are stored as given.
 */
const ENFORCED_GUARDRAILS = {
  max_budget_usd: z.number().min(0),
  warn_at_percentage: z.number().min(0).max(100),
  max_plan_versions: z.number().int().min(0),
  max_plan_duration_hours: z.number().min(0),
  requires_plan_review: z.boolean(),
  requires_replan_review: z.boolean(),
  max_tasks_per_plan: z.number().int().min(0),
  max_concurrent_tasks: z.number().int().min(0),
  max_delegation_depth: z.number().int().min(0),
  allowed_capabilities: z.array(z.string().min(1).max(200)).max(100),
  require_human_for_capabilities: z.array(z.string().min(1).max(200)).max(100),
  on_exceed: z.enum(ON_EXCEED_VALUES),
  require_progress_every_minutes: z.number().min(1).max(525_600),
  auto_escalate_after_failures: z.number().int().min(1),
  max_task_wait_hours: z.number().min(0).max(24 * 366),
  checkpoint_timeout_hours: z.number().min(0).max(24 * 366),
} satisfies Record<string, z.ZodType>;
const GUARDRAIL_SECTION_NAMES = ["budget", "scope", "temporal", "review"] as const;

function checkGuardrailKeys(value: Record<string, unknown>, ctx: z.RefinementCtx, path: string[]): void {
  for (const [key, schema] of Object.entries(ENFORCED_GUARDRAILS) as [string, z.ZodType][]) {
    if (value[key] === undefined) continue;
    const checked = schema.safeParse(value[key]);
    if (!checked.success) ctx.addIssue({ code: "custom", path: [...path, key], message: `guardrail ${key}: ${checked.error.issues[0]?.message ?? "invalid"}` });
  }
}

export const CoordinatorGuardrails = boundedJsonObject()
  .superRefine((value, ctx) => {
    checkGuardrailKeys(value, ctx, []);
    for (const section of GUARDRAIL_SECTION_NAMES) {
      const inner = value[section];
      if (inner === undefined) continue;
      if (inner === null || typeof inner !== "object" || Array.isArray(inner)) ctx.addIssue({ code: "custom", path: [section], message: `guardrail section ${section} must be an object` });
      else checkGuardrailKeys(inner as Record<string, unknown>, ctx, [section]);
    }
  })
  .openapi({ description: "RFC-0013 guardrails; the enforced keys (docs/coordinators.md) are type-checked, the others stored as given" });

export const CreateCoordinatorLeaseBody = z
  .object({
    /** The coordinator: the caller's acting agent (bound to its key). */
    agent_id: AgentId,
    intent_id: Uuid.openapi({ description: "the intent it coordinates (portfolio scope is not served)" }),
    role: z.literal("coordinator").optional(),
    scope: z.literal("intent", { error: "only intent scope is served; a portfolio's coordinator is not" }).default("intent"),
    coordinator_type: z.enum(COORDINATOR_TYPES).default("llm"),
    supervisor_id: ActorId.nullable().optional(),
    guardrails: CoordinatorGuardrails.nullable().optional(),
    heartbeat_interval_seconds: z.number().int().min(1).max(MAX_HEARTBEAT_INTERVAL_SECONDS).default(60),
    failover_candidates: z
      .array(AgentId)
      .max(MAX_FAILOVER_CANDIDATES)
      .default([])
      .openapi({ description: "agents that take over, in order, when the holder dies (ours; RFC-0013 5.2 'a configured failover pool')" }),
    metadata: boundedJsonObject().default({}),
  })
  .strict()
  .openapi("CreateCoordinatorLease");
export type CreateCoordinatorLeaseBody = z.infer<typeof CreateCoordinatorLeaseBody>;

export const CoordinatorLease = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    portfolio_id: z.null(),
    agent_id: z.string(),
    role: z.literal("coordinator"),
    supervisor_id: z.string().nullable(),
    coordinator_type: z.enum(COORDINATOR_TYPES),
    scope: z.literal("intent"),
    status: z.enum(COORDINATOR_STATUSES),
    guardrails: JsonObject.nullable(),
    heartbeat_interval_seconds: z.number().int(),
    failover_candidates: z.array(z.string()),
    last_heartbeat: Timestamp,
    granted_at: Timestamp,
    expires_at: Timestamp.openapi({ description: "two heartbeat intervals after the last heartbeat" }),
    ended_at: Timestamp.nullable(),
    end_reason: z.enum(COORDINATOR_END_REASONS).nullable(),
    paused_at: Timestamp.nullable(),
    paused_by: z.string().nullable(),
    pause_reason: z.string().nullable(),
    predecessor_id: Uuid.nullable(),
    version: z.number().int(),
    metadata: JsonObject,
  })
  .passthrough()
  .openapi("CoordinatorLease");
export type CoordinatorLease = z.infer<typeof CoordinatorLease>;

export const CoordinatorLeaseList = z.array(CoordinatorLease).openapi("CoordinatorLeaseList");

/**
 * POST /intents/{id}/coordinator (the MCP server's set_coordinator; RFC-0013 9 "assign coordinator
 * to intent"): the same grant as POST /coordinators, the coordinator named `coordinator_id`.
 * `governance_policy` is a name the MCP server sends ("default"), kept in the lease's metadata;
 * `set_by`, when sent, must be the acting agent.
 */
export const SetCoordinatorBody = z
  .object({
    coordinator_id: AgentId.openapi({ description: "the coordinator (bound to the calling key like X-Agent-ID; admin and coordinator keys may name any agent)" }),
    governance_policy: z.string().trim().min(1).max(200).default("default"),
    set_by: ActorId.optional().openapi({ description: "must be the acting agent when sent (the MCP server sends its agent id)" }),
    supervisor_id: ActorId.nullable().optional(),
    guardrails: CoordinatorGuardrails.nullable().optional(),
    heartbeat_interval_seconds: z.number().int().min(1).max(MAX_HEARTBEAT_INTERVAL_SECONDS).default(60),
    failover_candidates: z.array(AgentId).max(MAX_FAILOVER_CANDIDATES).default([]),
  })
  .strict()
  .openapi("SetCoordinator");
export type SetCoordinatorBody = z.infer<typeof SetCoordinatorBody>;

/** POST /decisions (create_decision_record): a coordinator's decision record (RFC-0013 4.1). */
export const CreateDecisionRecordBody = z
  .object({
    coordinator_id: ActorId.openapi({ description: "the coordinator: its agent id or its lease id" }),
    intent_id: Uuid,
    decision_type: z.enum(DECISION_TYPES),
    summary: z.string().min(1).max(2000),
    rationale: z.string().max(20_000),
    alternatives_considered: z.array(boundedJsonObject()).max(50).default([]),
    confidence: z.number().min(0).max(1).nullable().optional(),
    metadata: boundedJsonObject().optional(),
  })
  .strict()
  .openapi("CreateDecisionRecord");
export type CreateDecisionRecordBody = z.infer<typeof CreateDecisionRecordBody>;

/**
 * POST /intents/{id}/decisions (record_decision): the Python client sends a text `outcome` and
 * `reasoning`; the official MCP server an object `outcome` and `rationale` (the RFC's name). Both
 * are read; the reasoning is stored once, under both names in the answer.
 */
export const RecordDecisionBody = z
  .object({
    decision_type: z.string().min(1).max(100),
    outcome: z.union([z.string().max(2000), boundedJsonObject(16 * 1024)]),
    reasoning: z.string().max(20_000).optional(),
    /** The RFC's and the reference's name for reasoning; both given must agree. */
    rationale: z.string().max(20_000).optional(),
    decided_by: ActorId.optional(),
  })
  .strict()
  .refine((body) => body.reasoning !== undefined || body.rationale !== undefined, { message: "reasoning (or rationale) is required", path: ["reasoning"] })
  .refine((body) => body.rationale === undefined || body.reasoning === undefined || body.rationale === body.reasoning, { message: "rationale and reasoning differ; send one", path: ["rationale"] })
  .openapi("RecordDecision");
export type RecordDecisionBody = z.infer<typeof RecordDecisionBody>;

/**
 * One decision, in both shapes the client parses: DecisionRecord (coordinator_id, summary,
 * rationale, timestamp) and Decision (decision_maker_id, outcome, reasoning, created_at). It is
 * the intent's `coordinator.decision` event: `id` is the event's id.
 */
export const DecisionView = z
  .object({
    id: Uuid,
    type: z.literal("coordinator.decision"),
    intent_id: Uuid,
    coordinator_id: z.string(),
    decision_maker_id: z.string(),
    lease_id: Uuid.nullable(),
    decision_type: z.string(),
    summary: z.string(),
    rationale: z.string(),
    reasoning: z.string(),
    outcome: z.union([z.string(), JsonObject]).nullable(),
    alternatives_considered: z.array(JsonObject),
    confidence: z.number().nullable(),
    timestamp: Timestamp,
    created_at: Timestamp,
    sequence: z.number().int(),
  })
  .passthrough()
  .openapi("Decision");
export type DecisionView = z.infer<typeof DecisionView>;

export const DecisionRecordList = z.array(DecisionView).openapi("DecisionRecordList");
export const DecisionList = z.object({ decisions: z.array(DecisionView), has_more: z.boolean() }).passthrough().openapi("DecisionList");
export const DecisionListQuery = z.object({ limit: pageLimit(50, 500) });

const LeaseRef = z.object({ lease_id: Uuid });

/** GET and PATCH /coordinators/{id}/guardrails: the lease's guardrails as stored, and the keys the server reads from them. */
export const CoordinatorGuardrailsView = z
  .object({
    lease_id: Uuid,
    intent_id: Uuid,
    coordinator_id: z.string(),
    guardrails: JsonObject.nullable(),
    enforced: JsonObject.openapi({ description: "the enforced keys as the server reads them (flat or from their section)" }),
    version: z.number().int(),
  })
  .passthrough()
  .openapi("CoordinatorGuardrails");

const Usage = (description: string) => z.object({ used: z.number(), limit: z.number().nullable() }).passthrough().openapi({ description });
/** GET /coordinators/{id}/guardrails/status (RFC-0013 9 "guardrail usage and remaining budget"): what the guardrails count, now. */
export const CoordinatorGuardrailStatus = z
  .object({
    lease_id: Uuid,
    intent_id: Uuid,
    coordinator_id: z.string(),
    status: z.enum(COORDINATOR_STATUSES),
    budget: z
      .object({ spent_usd: z.number(), max_budget_usd: z.number().nullable(), remaining_usd: z.number().nullable(), warn_at_percentage: z.number() })
      .passthrough(),
    plan_versions: Usage("plan_created and plan_modified decisions on the intent"),
    plan_duration_hours: Usage("hours since the intent's first coordinator lease"),
    open_tasks: Usage("the intent's tasks not ended, against max_concurrent_tasks"),
    consecutive_failures: Usage("task failures since the last completed task, against auto_escalate_after_failures"),
    progress: z
      .object({ last_progress_at: Timestamp, require_progress_every_minutes: z.number().nullable(), stalled: z.boolean() })
      .passthrough(),
  })
  .passthrough()
  .openapi("CoordinatorGuardrailStatus");

/**
 * PATCH /coordinators/{id}/guardrails: a JSON merge patch (RFC 7396) on the stored guardrails,
 * sections included (`{"scope": {"max_concurrent_tasks": 20}}` changes one key of the section,
 * null removes a key). The result is checked as a lease's guardrails are (400 otherwise).
 */
const GUARDRAIL_PATCH_KEYS = Object.fromEntries(Object.entries(ENFORCED_GUARDRAILS).map(([key, schema]) => [key, schema.nullable().optional()])) as {
  // Typed key by key, so a patch of a flat key (max_concurrent_tasks: 10) is typed as the server takes it.
  [K in keyof typeof ENFORCED_GUARDRAILS]: z.ZodOptional<z.ZodNullable<(typeof ENFORCED_GUARDRAILS)[K]>>;
};
/** A section of the patch: the RFC's keys (any of them, as readGuardrails reads any key in any section), null removing one. */
const GuardrailSectionPatch = z.object(GUARDRAIL_PATCH_KEYS).strict().nullable().optional();
export const PatchCoordinatorGuardrailsBody = z
  .object({
    ...GUARDRAIL_PATCH_KEYS,
    budget: GuardrailSectionPatch,
    scope: GuardrailSectionPatch,
    temporal: GuardrailSectionPatch,
    review: GuardrailSectionPatch,
  })
  .strict()
  .openapi("PatchCoordinatorGuardrails");

/** PATCH /coordinators/{id} (RFC-0013 9 "update coordinator registration"): the lease's other terms. */
export const UpdateCoordinatorBody = z
  .object({
    supervisor_id: ActorId.nullable().optional().openapi({ description: "changed by admin and coordinator keys or the current supervisor, never by the holder" }),
    coordinator_type: z.enum(COORDINATOR_TYPES).optional(),
    heartbeat_interval_seconds: z.number().int().min(1).max(MAX_HEARTBEAT_INTERVAL_SECONDS).optional(),
    failover_candidates: z.array(AgentId).max(MAX_FAILOVER_CANDIDATES).optional(),
    metadata: boundedJsonObject().optional().openapi({ description: "replaces the lease's metadata" }),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: "nothing to change" })
  .openapi("UpdateCoordinator");
export type UpdateCoordinatorBody = z.infer<typeof UpdateCoordinatorBody>;

/** POST /coordinators/{id}/handoff (RFC-0013 5.3): the holder hands the lease to another agent. */
export const CoordinatorHandoffBody = z
  .object({
    to_agent_id: AgentId.optional(),
    /** The RFC's event names the new coordinator `to_coordinator`; either is read, both given must agree. */
    to_coordinator: AgentId.optional(),
    reason: z.string().max(2000).optional(),
    state_summary: boundedJsonObject().optional(),
  })
  .strict()
  .refine((body) => (body.to_agent_id ?? body.to_coordinator) !== undefined, { message: "to_agent_id is required", path: ["to_agent_id"] })
  .refine((body) => body.to_agent_id === undefined || body.to_coordinator === undefined || body.to_agent_id === body.to_coordinator, { message: "to_agent_id and to_coordinator differ", path: ["to_coordinator"] })
  .openapi("CoordinatorHandoff");
export type CoordinatorHandoffBody = z.infer<typeof CoordinatorHandoffBody>;

/** POST /coordinators/{id}/pause and /resume (RFC-0013 2.1 supervisor actions). */
export const CoordinatorPauseBody = z.object({ reason: z.string().max(2000).optional() }).strict().openapi("CoordinatorPause");
export type CoordinatorPauseBody = z.infer<typeof CoordinatorPauseBody>;

/** POST /coordinators/{id}/replace (RFC-0013 2.1 "revoke lease and assign a new coordinator"). */
export const CoordinatorReplaceBody = z
  .object({
    new_agent_id: AgentId.optional(),
    /** The RFC's event field; either is read, both given must agree. */
    new_coordinator_id: AgentId.optional(),
    reason: z.string().max(2000).optional(),
  })
  .strict()
  .refine((body) => (body.new_agent_id ?? body.new_coordinator_id) !== undefined, { message: "new_agent_id is required", path: ["new_agent_id"] })
  .refine((body) => body.new_agent_id === undefined || body.new_coordinator_id === undefined || body.new_agent_id === body.new_coordinator_id, { message: "new_agent_id and new_coordinator_id differ", path: ["new_coordinator_id"] })
  .openapi("CoordinatorReplace");
export type CoordinatorReplaceBody = z.infer<typeof CoordinatorReplaceBody>;

/** POST /tasks/{id}/force-escalate (RFC-0013 2.1 "force a specific task to escalate to human"). */
export const ForceEscalateTaskBody = z
  .object({
    reason: z.string().trim().min(1).max(2000),
    priority: z.enum(ESCALATION_LEVELS).default("high"),
  })
  .strict()
  .openapi("ForceEscalateTask");
export type ForceEscalateTaskBody = z.infer<typeof ForceEscalateTaskBody>;
/** The answer: the escalation the governance service opens (its id is the task.force_escalated event's id). */
export const ForcedEscalation = z
  .object({
    escalation_id: Uuid,
    task_id: Uuid,
    intent_id: Uuid,
    lease_id: Uuid,
    coordinator_id: z.string(),
    escalated_by: z.string(),
    reason: z.string(),
    priority: z.enum(ESCALATION_LEVELS),
  })
  .passthrough()
  .openapi("ForcedEscalation");

/** The errors of the lease-changing commands. */
const LEASE_CHANGE_ERRORS = ["COORDINATOR_LEASE_ENDED", "COORDINATOR_LEASE_NOT_FOUND", "FORBIDDEN", "INTENT_ACCESS_DENIED", "VERSION_MISMATCH"] as const;
const LeaseChange = LeaseRef.merge(IfMatch);

/** The intent's live coordinator, for the rules that give "the intent's coordinator" rights (channels 4.7 rule 7). */
export const CoordinatorHolder = z.object({ intent_id: Uuid, agent_id: z.string().nullable(), lease_id: Uuid.nullable() }).passthrough();

export const coordinatorCommands = {
  createLease: command("intents", "coordinators.create", z.object({ body: CreateCoordinatorLeaseBody }), CoordinatorLease, [
    "COORDINATOR_LEASE_HELD",
    "INTENT_NOT_FOUND",
  ]),
  assign: command("intents", "coordinators.assign", IntentRef.extend({ body: SetCoordinatorBody }), CoordinatorLease, [
    "AGENT_MISMATCH",
    "COORDINATOR_LEASE_HELD",
    "INTENT_NOT_FOUND",
  ]),
  getLease: command("intents", "coordinators.get", LeaseRef, CoordinatorLease, ["COORDINATOR_LEASE_NOT_FOUND", "INTENT_ACCESS_DENIED"]),
  listLeases: command("intents", "coordinators.list", IntentRef, CoordinatorLeaseList, ["INTENT_NOT_FOUND"]),
  heartbeat: command("intents", "coordinators.heartbeat", LeaseRef, CoordinatorLease, ["COORDINATOR_LEASE_ENDED", "COORDINATOR_LEASE_NOT_FOUND", "NOT_LEASE_HOLDER"]),
  createDecisionRecord: command("intents", "decisions.create", z.object({ body: CreateDecisionRecordBody }), DecisionView, ["COORDINATOR_PAUSED", "GUARDRAIL_VIOLATION", "INTENT_NOT_FOUND", "NOT_LEASE_HOLDER"]),
  listDecisionRecords: command("intents", "decisions.records", IntentRef.extend({ query: DecisionListQuery }), DecisionRecordList, ["INTENT_NOT_FOUND"]),
  recordDecision: command("intents", "decisions.record", IntentRef.extend({ body: RecordDecisionBody }), DecisionView, ["AGENT_MISMATCH", "COORDINATOR_PAUSED", "GUARDRAIL_VIOLATION", "INTENT_NOT_FOUND"]),
  listDecisions: command("intents", "decisions.list", IntentRef.extend({ query: DecisionListQuery }), DecisionList, ["INTENT_NOT_FOUND"]),
  guardrailStatus: command("intents", "coordinators.guardrails.status", LeaseRef, CoordinatorGuardrailStatus, ["COORDINATOR_LEASE_NOT_FOUND", "INTENT_ACCESS_DENIED"]),
  getGuardrails: command("intents", "coordinators.guardrails.get", LeaseRef, CoordinatorGuardrailsView, ["COORDINATOR_LEASE_NOT_FOUND", "INTENT_ACCESS_DENIED"]),
  patchGuardrails: command("intents", "coordinators.guardrails.patch", LeaseChange.extend({ body: PatchCoordinatorGuardrailsBody }), CoordinatorGuardrailsView, [...LEASE_CHANGE_ERRORS, "VALIDATION_FAILED"]),
  update: command("intents", "coordinators.update", LeaseChange.extend({ body: UpdateCoordinatorBody }), CoordinatorLease, LEASE_CHANGE_ERRORS),
  handoff: command("intents", "coordinators.handoff", LeaseChange.extend({ body: CoordinatorHandoffBody }), CoordinatorLease, [
    "AGENT_NOT_ACTIVE",
    "COORDINATOR_LEASE_ENDED",
    "COORDINATOR_LEASE_NOT_FOUND",
    "INTENT_ACCESS_DENIED",
    "NOT_LEASE_HOLDER",
    "VALIDATION_FAILED",
    "VERSION_MISMATCH",
  ]),
  pause: command("intents", "coordinators.pause", LeaseChange.extend({ body: CoordinatorPauseBody }), CoordinatorLease, [...LEASE_CHANGE_ERRORS, "COORDINATOR_PAUSED"]),
  resume: command("intents", "coordinators.resume", LeaseChange.extend({ body: CoordinatorPauseBody }), CoordinatorLease, [...LEASE_CHANGE_ERRORS, "COORDINATOR_NOT_PAUSED"]),
  replace: command("intents", "coordinators.replace", LeaseChange.extend({ body: CoordinatorReplaceBody }), CoordinatorLease, [...LEASE_CHANGE_ERRORS, "AGENT_NOT_ACTIVE", "VALIDATION_FAILED"]),
  /** DELETE /intents/{id}/coordinator (RFC-0013 9 "remove coordinator from intent"): ends the intent's lease; answers it, ended. */
  remove: command("intents", "coordinators.remove", IntentRef.merge(IfMatch), CoordinatorLease, ["COORDINATOR_LEASE_NOT_FOUND", "FORBIDDEN", "INTENT_NOT_FOUND", "VERSION_MISMATCH"]),
  /** RFC-0013 2.1 force-escalate: the supervisor of the task's intent's coordinator sends the task to a human (an escalation through governance). */
  forceEscalate: command("intents", "coordinators.force_escalate", z.object({ task_id: Uuid, body: ForceEscalateTaskBody }), ForcedEscalation, [
    "COORDINATOR_LEASE_NOT_FOUND",
    "FORBIDDEN",
    "INTENT_ACCESS_DENIED",
    "TASK_NOT_FOUND",
  ]),
  /** Asked by the registry (5.3 "its coordinator"): the intents `coordinator` holds a live coordinator lease of with `agent_id` assigned. */
  coordinates: command(
    "intents",
    "coordinators.coordinates",
    z.object({ coordinator: z.string().min(1).max(200), agent_id: z.string().min(1).max(200) }),
    z.object({ intent_ids: z.array(Uuid) }).passthrough(),
  ),
  /**
   * Asked by the memory service (4.8 "the coordinator managing the task"): the intents whose live
   * coordinator lease `agent_id` holds, at most MAX_HELD_LEASES_ANSWERED, on the server clock.
   */
  heldBy: command("intents", "coordinators.held_by", z.object({ agent_id: z.string().min(1).max(200) }), z.object({ intent_ids: z.array(Uuid) }).passthrough()),
  /** Asked by services: who holds the intent's live coordinator lease (nulls when none). */
  holder: command("intents", "coordinators.holder", IntentRef, CoordinatorHolder),
} as const;
