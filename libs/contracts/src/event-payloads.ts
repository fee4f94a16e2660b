import type { ZodType } from "zod";
import { z } from "./zod";
import { IntentStatus } from "./intents";

/**
 * Payload schemas of the events the intents service and the registry write on their own logs
 * (event-types.ts defines the events with them). Pinned to what every writer of the type
 * (handlers, SQL hot paths, sweepers, projections) puts there: the named fields are always
 * there; extra fields a writer adds for a case (suspension_id, budget, renewal) pass through.
 * The test cluster checks every event of every test against these when it stops.
 */
export const Id = z.string().min(1);
/** Any payload schema. */
export type Schema = ZodType;

const Version = z.number().int().positive();
// from / to are intent statuses: the portfolio and readiness projections rely on it.
export const StatusChangedPayload = z
  .object({ from: IntentStatus, to: IntentStatus, reason: z.string().nullable(), version: Version })
  .passthrough();
export const StatePatchedPayload = z.object({ patches: z.array(z.object({ op: z.string(), path: z.string() }).passthrough()), version: Version }).passthrough();
export const LeaseAcquiredPayload = z.object({ lease_id: Id, agent_id: Id, scope: z.string(), expires_at: z.string() }).passthrough();
export const LeaseReleasedPayload = z
  .object({ lease_id: Id, agent_id: Id, scope: z.string(), reason: z.enum(["released", "expired", "agent_dead", "agent_deregistered", "fallback"]) })
  .passthrough();
export const AgentAssignmentPayload = z.object({ agent_id: Id }).passthrough();
export const SuspendedPayload = z.object({ suspension: z.object({ id: Id }).passthrough(), version: Version }).passthrough();

export const IntentCreatedPayload = z.object({ title: z.string(), created_by: z.string(), status: z.string(), version: Version }).passthrough();
export const AttachmentAddedPayload = z.object({ attachment_id: Id, filename: z.string(), mime_type: z.string(), size: z.number().int().nonnegative(), uploaded_by: z.string() }).passthrough();
export const AttachmentRemovedPayload = z.object({ attachment_id: Id, filename: z.string() }).passthrough();
export const BudgetUpdatedPayload = z.object({ budget: z.object({}).passthrough(), previous: z.object({}).passthrough().nullable(), version: Version }).passthrough();
export const BudgetAlertPayload = z.object({ scope: z.string(), threshold_percent: z.number(), limit_cents: z.number(), spent_cents: z.number() }).passthrough();
export const FallbackTriggeredPayload = z
  .object({ failed_agent_id: Id, fallback_agent_id: Id, failure_id: Id, scopes: z.array(z.string()), leases: z.array(z.object({}).passthrough()) })
  .passthrough();
export const ResumedPayload = z.object({ intent_id: Id, suspension_id: Id, resolution: z.string(), version: Version }).passthrough();
export const SuspensionExpiredPayload = z.object({ suspension_id: Id, resolution: z.literal("expired"), status: z.string(), version: Version }).passthrough();

// Access control (RFC-0011): who, at which level, and the ACL version the change made.
const AclVersion = z.number().int().positive();
const Principal = { principal_id: z.string(), principal_type: z.string() };
export const AccessGrantedPayload = z.union([
  z.object({ action: z.literal("grant"), entry_id: Id, ...Principal, permission: z.string(), expires_at: z.string().nullable(), acl_version: AclVersion }).passthrough(),
  z
    .object({
      action: z.literal("acl_set"),
      default_policy: z.string(),
      default_permission: z.string(),
      entries: z.array(z.object({ entry_id: Id, ...Principal, permission: z.string(), expires_at: z.string().nullable() }).passthrough()),
      removed_entry_ids: z.array(Id),
      acl_version: AclVersion,
    })
    .passthrough(),
]);
export const AccessEntryEndedPayload = z.object({ entry_id: Id, ...Principal, permission: z.string(), acl_version: AclVersion }).passthrough();
export const AccessRequestedPayload = z.object({ request_id: Id, ...Principal, requested_permission: z.string(), capabilities: z.array(z.string()), reason: z.string() }).passthrough();
export const AccessRequestApprovedPayload = z.object({ request_id: Id, ...Principal, permission: z.string(), entry_id: Id, expires_at: z.string().nullable(), acl_version: AclVersion }).passthrough();
export const AccessRequestDeniedPayload = z.object({ request_id: Id, ...Principal, reason: z.string().nullable() }).passthrough();

// Intent graphs (RFC-0002).
export const DependencyChangedPayload = z.object({ dependency_id: Id, depends_on: z.array(Id), version: Version }).passthrough();
// Coordinators (RFC-0013).
export const CoordinatorAssignedPayload = z.object({ lease_id: Id, coordinator_id: Id, supervisor_id: z.string().nullable(), expires_at: z.string() }).passthrough();
export const CoordinatorFailedOverPayload = z
  .object({ old_lease_id: Id, old_coordinator_id: Id, new_lease_id: Id.nullable(), new_coordinator_id: Id.nullable(), reason: z.enum(["expired", "agent_dead"]) })
  .passthrough();
const GuardrailValue = z.union([z.number(), z.boolean(), z.array(z.string())]);
export const CoordinatorGuardrailWarningPayload = z.object({ lease_id: Id, coordinator_id: Id, guardrail: z.string(), current_value: z.number(), limit: z.number() }).passthrough();
export const CoordinatorGuardrailViolationPayload = z
  .object({
    lease_id: Id,
    coordinator_id: Id,
    guardrail: z.string(),
    attempted_value: GuardrailValue,
    limit: GuardrailValue,
    /** The refused decision's type, or (a task or plan creation refused) null with `action` naming it. */
    decision_type: z.string().nullable(),
    action: z.string().optional(),
    on_exceed: z.string().nullable().optional(),
  })
  .passthrough();
const Changes = z.object({}).passthrough();
export const CoordinatorPausedPayload = z.object({ lease_id: Id, coordinator_id: Id, paused_by: z.string(), reason: z.string() }).passthrough();
export const CoordinatorResumedPayload = z.object({ lease_id: Id, coordinator_id: Id, resumed_by: z.string() }).passthrough();
export const CoordinatorStalledPayload = z
  .object({ lease_id: Id, coordinator_id: Id, supervisor_id: z.string().nullable(), last_progress_at: z.string(), require_progress_every_minutes: z.number() })
  .passthrough();
/** RFC-0013 3.3 max_task_wait_hours: a ready task of the intent no agent claimed within the limit (once per wait). */
export const CoordinatorTaskWaitExceededPayload = z
  .object({ lease_id: Id, coordinator_id: Id, supervisor_id: z.string().nullable(), task_id: Id, waiting_since: z.string(), max_task_wait_hours: z.number(), on_exceed: z.string().nullable() })
  .passthrough();
/** RFC-0013 3.3 checkpoint_timeout_hours: a plan checkpoint of the intent awaiting its decision beyond the limit (once per checkpoint reached). */
export const CoordinatorCheckpointTimedOutPayload = z
  .object({ lease_id: Id, coordinator_id: Id, supervisor_id: z.string().nullable(), plan_id: Id, checkpoint_id: z.string(), reached_at: z.string(), checkpoint_timeout_hours: z.number(), on_exceed: z.string().nullable() })
  .passthrough();
export const CoordinatorEscalationInitiatedPayload = z
  .object({ lease_id: Id, coordinator_id: Id, escalated_to: z.string().nullable(), reason: z.string(), guardrail: z.string(), priority: z.enum(["low", "medium", "high", "critical"]) })
  .passthrough();
export const CoordinatorGuardrailsUpdatedPayload = z.object({ lease_id: Id, coordinator_id: Id, updated_by: z.string(), changes: Changes, version: Version }).passthrough();
export const CoordinatorUpdatedPayload = z.object({ lease_id: Id, coordinator_id: Id, updated_by: z.string(), changes: Changes, version: Version }).passthrough();
export const CoordinatorPlanOverriddenPayload = z
  .object({ lease_id: Id, coordinator_id: Id, overridden_by: z.string(), plan_id: Id, old_plan_version: Version, new_plan_version: Version, changed: z.array(z.string()) })
  .passthrough();
export const CoordinatorRemovedPayload = z.object({ lease_id: Id, coordinator_id: Id, removed_by: z.string() }).passthrough();
export const CoordinatorHandoffPayload = z
  .object({ old_lease_id: Id, new_lease_id: Id, from_coordinator: Id, to_coordinator: Id, reason: z.string().nullable(), state_summary: Changes.nullable() })
  .passthrough();
export const CoordinatorReplacedPayload = z
  .object({ old_lease_id: Id, new_lease_id: Id, old_coordinator_id: Id, new_coordinator_id: Id, replaced_by: z.string(), reason: z.string().nullable() })
  .passthrough();
export const CoordinatorDecisionPayload = z
  .object({ coordinator_id: Id, decision_type: Id, summary: z.string(), rationale: z.string(), outcome: z.union([z.string(), z.object({}).passthrough()]).nullable(), lease_id: Id.nullable() })
  .passthrough();
export const IntentReadyPayload = z.object({ dependency_id: Id, cause: z.enum(["dependency_completed", "dependency_removed"]), depends_on: z.array(Id), status: z.string() }).passthrough();

// Distributed tracing (RFC-0020).
export const TraceStartedPayload = z.object({ trace_id: z.string(), trace_name: z.string(), parent_trace_id: z.string().nullable(), started_by: z.string() }).passthrough();
export const SpansLinkedPayload = z.object({ trace_id: z.string(), span_ids: z.array(z.string()), linked_by: z.string(), span_count: z.number().int() }).passthrough();


export const PortfolioCreatedPayload = z.object({ name: z.string(), created_by: z.string(), version: Version }).passthrough();
export const PortfolioUpdatedPayload = z.object({ changes: z.union([z.array(z.unknown()), z.object({}).passthrough()]), version: Version }).passthrough();
export const MembershipPayload = z.object({ intent_id: Id, intent_status: z.string(), status: z.string(), version: Version }).passthrough();
export const MemberStatusPayload = z.object({ intent_id: Id, intent_event_id: Id, intent_sequence: z.number().int(), from: z.string(), to: z.string(), status: z.string() }).passthrough();
export const MemberSuspensionPayload = z.object({ intent_id: Id, suspension_id: Id.nullable(), status: z.string() }).passthrough();
export const PortfolioStatusPayload = z.object({ from: z.string(), to: z.string() }).passthrough();


/** agent.lifecycle: part 6's shape. */
export const AgentLifecycleEventPayload = z
  .object({
    type: z.literal("agent.lifecycle"),
    agent_id: Id,
    previous_status: z.string(),
    new_status: z.string(),
    reason: z.string(),
    timestamp: z.string(),
    version: z.number().int(),
  })
  .passthrough();
export const AgentWarningPayload = z.object({ agent_id: Id, warning: z.string(), message: z.string() }).passthrough();
export const AgentCommandPayload = z.object({ agent_id: Id }).passthrough();
