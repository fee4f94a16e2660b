import { z } from "./zod";
import type { ZodType } from "zod";
import { agentEventTypes, intentEventTypes, portfolioEventTypes } from "./event-types";
import { federationEventTypes } from "./federation";
import { ToolInvokedPayload } from "./vault";
import { TriggerFiredPayload, triggerEventTypes } from "./triggers";

/**
 * The event catalogue: every event type the server writes, with its payload schema and the logs
 * (and their streams) it goes to. Names come from ./event-types (and ./federation for
 * federation.*); this module adds what a reader of a log may rely on about each payload.
 *
 * Strictness: schemas are `passthrough` objects: the named fields are always there, a later
 * field is not a break. Where the spec gives a shape (part 6: channel_message, memory.*,
 * agent.lifecycle) it is the spec's; where the spec is silent it is what every writer of the type
 * produces (handlers, SQL hot paths, sweepers, projections). Every event type has one: system
 * events are refused by the intents service unless they match, and every test cluster checks
 * every event it wrote against these when it stops (test/support/event-check.ts).
 */

export type EventLog = "intent" | "portfolio" | "agent";

export interface EventDefinition {
  name: string;
  /** Which logs (and so which SSE streams / im.evt.<aggregate> subjects) carry it. */
  logs: readonly EventLog[];
  payload: ZodType;
  /** Written by another service and appended to an intent's log through the system-event path (system-events.ts). */
  system: boolean;
  description: string;
}

/** The payload schema of an event the server writes itself; a name without one is a mistake caught at load. */
function pinned(schemas: ReadonlyMap<string, ZodType>, name: string): ZodType {
  const schema = schemas.get(name);
  if (!schema) throw new Error(`event ${name} has no payload schema in the event catalogue`);
  return schema;
}

const Id = z.string().min(1);
const Tags = z.array(z.string());

export const ChannelMessagePayload = z
  .object({
    channel_id: Id,
    channel_name: z.string(),
    message_id: Id,
    message_type: z.string(),
    /** The recipient agent, or null for a broadcast. */
    to: z.string().nullable(),
    payload: z.unknown(),
  })
  .passthrough();

/** memory.created|updated|deleted|evicted|expired: the entry's coordinates, never its value (spec part 6). */
export const MemoryEntryEventPayload = z
  .object({
    agent_id: z.string().nullable(),
    intent_id: z.string().nullable(),
    task_id: z.string().nullable(),
    data: z
      .object({
        entry_id: Id,
        namespace: z.string(),
        key: z.string(),
        memory_type: z.string(),
        version: z.number().int(),
        previous_version: z.number().int().nullable(),
        tags: Tags,
      })
      .strict(),
  })
  .passthrough();

export const MemoryArchivedPayload = z
  .object({
    agent_id: z.string().nullable(),
    intent_id: z.string().nullable(),
    task_id: z.string().nullable(),
    data: z
      .object({
        entries_archived: z.number().int().nonnegative(),
        snapshot: z.array(z.object({ namespace: z.string(), key: z.string(), value: z.unknown(), tags: Tags }).strict()),
      })
      .strict(),
  })
  .passthrough();

// Federation payloads: the shapes services/federation/src/handlers/*.ts write today.
const FederationDispatchedPayload = z
  .object({
    dispatch_id: Id,
    target_server: z.string(),
    target_did: z.string(),
    agent_id: z.string().nullable().optional(),
    remote_intent_id: z.string().nullable(),
    delegation_scope: z.unknown(),
    governance: z.unknown(),
  })
  .passthrough();
const FederationReceivedPayload = z
  .object({
    dispatch_id: Id,
    source_server: z.string(),
    source_did: z.string(),
    origin_intent_id: z.string(),
    agent_id: z.string().nullable().optional(),
    delegation_scope: z.unknown(),
    governance: z.unknown(),
    trust_policy: z.string(),
  })
  .passthrough();
/** federation.callback and its follow-ups (completed / failed / budget_warning) carry the same payload. */
const FederationCallbackPayload = z
  .object({
    dispatch_id: Id,
    callback_type: z.string(),
    target_server: z.string(),
    remote_intent_id: z.string().nullable(),
    remote_event: z.unknown(),
    signer: z.string(),
  })
  .passthrough();
/** federation.failed written by the dispatcher when the dispatch itself failed. */
const FederationDispatchFailedPayload = z
  .object({
    dispatch_id: Id,
    stage: z.literal("dispatch"),
    target_server: z.string(),
    agent_id: z.string().nullable().optional(),
    code: z.string(),
    message: z.string(),
    attempt: z.number().int(),
  })
  .passthrough();

const define = (name: string, logs: readonly EventLog[], payload: ZodType, description: string, system = false): EventDefinition => ({
  name,
  logs,
  payload,
  system,
  description,
});

// Pinned payloads of the intents service's own events: what every writer of the type (handlers,
// the SQL hot paths, sweepers, projections) puts there. Extra fields a writer adds for a case
// (suspension_id, budget, renewal) pass through; the named ones are always there. The test
// cluster checks every event of every test against these when it stops (test/support/cluster.ts).
const Version = z.number().int().positive();
const StatusChangedPayload = z
  .object({ from: z.string(), to: z.string(), reason: z.string().nullable(), version: Version })
  .passthrough();
const StatePatchedPayload = z.object({ patches: z.array(z.object({ op: z.string(), path: z.string() }).passthrough()), version: Version }).passthrough();
const LeaseAcquiredPayload = z.object({ lease_id: Id, agent_id: Id, scope: z.string(), expires_at: z.string() }).passthrough();
const LeaseReleasedPayload = z
  .object({ lease_id: Id, agent_id: Id, scope: z.string(), reason: z.enum(["released", "expired", "agent_dead", "agent_deregistered", "fallback"]) })
  .passthrough();
const AgentAssignmentPayload = z.object({ agent_id: Id }).passthrough();
const SuspendedPayload = z.object({ suspension: z.object({ id: Id }).passthrough(), version: Version }).passthrough();

const IntentCreatedPayload = z.object({ title: z.string(), created_by: z.string(), status: z.string(), version: Version }).passthrough();
const AttachmentAddedPayload = z.object({ attachment_id: Id, filename: z.string(), mime_type: z.string(), size: z.number().int().nonnegative(), uploaded_by: z.string() }).passthrough();
const AttachmentRemovedPayload = z.object({ attachment_id: Id, filename: z.string() }).passthrough();
const BudgetUpdatedPayload = z.object({ budget: z.object({}).passthrough(), previous: z.object({}).passthrough().nullable(), version: Version }).passthrough();
const BudgetAlertPayload = z.object({ scope: z.string(), threshold_percent: z.number(), limit_cents: z.number(), spent_cents: z.number() }).passthrough();
const FallbackTriggeredPayload = z
  .object({ failed_agent_id: Id, fallback_agent_id: Id, failure_id: Id, scopes: z.array(z.string()), leases: z.array(z.object({}).passthrough()) })
  .passthrough();
const ResumedPayload = z.object({ intent_id: Id, suspension_id: Id, resolution: z.string(), version: Version }).passthrough();
const SuspensionExpiredPayload = z.object({ suspension_id: Id, resolution: z.literal("expired"), status: z.string(), version: Version }).passthrough();

// Access control (RFC-0011): who, at which level, and the ACL version the change made.
const AclVersion = z.number().int().positive();
const Principal = { principal_id: z.string(), principal_type: z.string() };
const AccessGrantedPayload = z.union([
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
const AccessEntryEndedPayload = z.object({ entry_id: Id, ...Principal, permission: z.string(), acl_version: AclVersion }).passthrough();
const AccessRequestedPayload = z.object({ request_id: Id, ...Principal, requested_permission: z.string(), capabilities: z.array(z.string()), reason: z.string() }).passthrough();
const AccessRequestApprovedPayload = z.object({ request_id: Id, ...Principal, permission: z.string(), entry_id: Id, expires_at: z.string().nullable(), acl_version: AclVersion }).passthrough();
const AccessRequestDeniedPayload = z.object({ request_id: Id, ...Principal, reason: z.string().nullable() }).passthrough();

// Intent graphs (RFC-0002).
const DependencyChangedPayload = z.object({ dependency_id: Id, depends_on: z.array(Id), version: Version }).passthrough();
// Coordinators (RFC-0013).
const CoordinatorAssignedPayload = z.object({ lease_id: Id, coordinator_id: Id, supervisor_id: z.string().nullable(), expires_at: z.string() }).passthrough();
const CoordinatorFailedOverPayload = z
  .object({ old_lease_id: Id, old_coordinator_id: Id, new_lease_id: Id.nullable(), new_coordinator_id: Id.nullable(), reason: z.enum(["expired", "agent_dead"]) })
  .passthrough();
const CoordinatorDecisionPayload = z
  .object({ coordinator_id: Id, decision_type: Id, summary: z.string(), rationale: z.string(), outcome: z.union([z.string(), z.object({}).passthrough()]).nullable(), lease_id: Id.nullable() })
  .passthrough();
const GuardrailValue = z.union([z.number(), z.boolean()]);
const CoordinatorGuardrailWarningPayload = z.object({ lease_id: Id, coordinator_id: Id, guardrail: z.string(), current_value: z.number(), limit: z.number() }).passthrough();
const CoordinatorGuardrailViolationPayload = z
  .object({ lease_id: Id, coordinator_id: Id, guardrail: z.string(), attempted_value: GuardrailValue, limit: GuardrailValue, decision_type: z.string() })
  .passthrough();
const IntentReadyPayload = z.object({ dependency_id: Id, cause: z.enum(["dependency_completed", "dependency_removed"]), depends_on: z.array(Id), status: z.string() }).passthrough();

// Distributed tracing (RFC-0020).
const TraceStartedPayload = z.object({ trace_id: z.string(), trace_name: z.string(), parent_trace_id: z.string().nullable(), started_by: z.string() }).passthrough();
const SpansLinkedPayload = z.object({ trace_id: z.string(), span_ids: z.array(z.string()), linked_by: z.string(), span_count: z.number().int() }).passthrough();

const pinnedIntentPayloads: ReadonlyMap<string, ZodType> = new Map<string, ZodType>([
  [intentEventTypes.traceStarted, TraceStartedPayload],
  [intentEventTypes.spansLinked, SpansLinkedPayload],
  [intentEventTypes.dependencyAdded, DependencyChangedPayload],
  [intentEventTypes.dependencyRemoved, DependencyChangedPayload],
  [intentEventTypes.ready, IntentReadyPayload],
  [intentEventTypes.coordinatorAssigned, CoordinatorAssignedPayload],
  [intentEventTypes.coordinatorFailedOver, CoordinatorFailedOverPayload],
  [intentEventTypes.coordinatorDecision, CoordinatorDecisionPayload],
  [intentEventTypes.coordinatorGuardrailWarning, CoordinatorGuardrailWarningPayload],
  [intentEventTypes.coordinatorGuardrailViolation, CoordinatorGuardrailViolationPayload],
  [intentEventTypes.accessGranted, AccessGrantedPayload],
  [intentEventTypes.accessRevoked, AccessEntryEndedPayload],
  [intentEventTypes.accessExpired, AccessEntryEndedPayload],
  [intentEventTypes.accessRequested, AccessRequestedPayload],
  [intentEventTypes.accessRequestApproved, AccessRequestApprovedPayload],
  [intentEventTypes.accessRequestDenied, AccessRequestDeniedPayload],
  [intentEventTypes.created, IntentCreatedPayload],
  [intentEventTypes.attachmentAdded, AttachmentAddedPayload],
  [intentEventTypes.attachmentRemoved, AttachmentRemovedPayload],
  [intentEventTypes.budgetUpdated, BudgetUpdatedPayload],
  [intentEventTypes.budgetAlert, BudgetAlertPayload],
  [intentEventTypes.fallbackTriggered, FallbackTriggeredPayload],
  [intentEventTypes.resumed, ResumedPayload],
  [intentEventTypes.suspensionExpired, SuspensionExpiredPayload],
  [intentEventTypes.statusChanged, StatusChangedPayload],
  [intentEventTypes.statePatched, StatePatchedPayload],
  [intentEventTypes.leaseAcquired, LeaseAcquiredPayload],
  [intentEventTypes.leaseReleased, LeaseReleasedPayload],
  [intentEventTypes.agentAssigned, AgentAssignmentPayload],
  [intentEventTypes.agentUnassigned, AgentAssignmentPayload],
  [intentEventTypes.suspended, SuspendedPayload],
]);

const PortfolioCreatedPayload = z.object({ name: z.string(), created_by: z.string(), version: Version }).passthrough();
const PortfolioUpdatedPayload = z.object({ changes: z.union([z.array(z.unknown()), z.object({}).passthrough()]), version: Version }).passthrough();
const MembershipPayload = z.object({ intent_id: Id, intent_status: z.string(), status: z.string(), version: Version }).passthrough();
const MemberStatusPayload = z.object({ intent_id: Id, intent_event_id: Id, intent_sequence: z.number().int(), from: z.string(), to: z.string(), status: z.string() }).passthrough();
const MemberSuspensionPayload = z.object({ intent_id: Id, suspension_id: Id.nullable(), status: z.string() }).passthrough();
const PortfolioStatusPayload = z.object({ from: z.string(), to: z.string() }).passthrough();

const pinnedPortfolioPayloads: ReadonlyMap<string, ZodType> = new Map<string, ZodType>([
  [portfolioEventTypes.created, PortfolioCreatedPayload],
  [portfolioEventTypes.updated, PortfolioUpdatedPayload],
  [portfolioEventTypes.memberAdded, MembershipPayload],
  [portfolioEventTypes.memberRemoved, MembershipPayload],
  [portfolioEventTypes.memberStatusChanged, MemberStatusPayload],
  [portfolioEventTypes.memberSuspended, MemberSuspensionPayload],
  [portfolioEventTypes.memberResumed, MemberSuspensionPayload],
  [portfolioEventTypes.statusChanged, PortfolioStatusPayload],
]);

// The registry's own events (agent.lifecycle is part 6's shape).
const pinnedAgentPayloads: ReadonlyMap<string, ZodType> = new Map<string, ZodType>([
  [
    agentEventTypes.lifecycle,
    z
      .object({
        type: z.literal(agentEventTypes.lifecycle),
        agent_id: Id,
        previous_status: z.string(),
        new_status: z.string(),
        reason: z.string(),
        timestamp: z.string(),
        version: z.number().int(),
      })
      .passthrough(),
  ],
  [agentEventTypes.warning, z.object({ agent_id: Id, warning: z.string(), message: z.string() }).passthrough()],
  [agentEventTypes.command, z.object({ agent_id: Id }).passthrough()],
]);

/** Intent events the registry projects onto the agent's own log under the same name. */
const projectedToAgents: ReadonlySet<string> = new Set([agentEventTypes.assigned, agentEventTypes.unassigned]);

/** Events the owning service (intents, registry) writes itself. Payloads not pinned yet (step 2). */
const ownEvents: EventDefinition[] = [
  ...Object.values(intentEventTypes).map((name) =>
    define(
      name,
      projectedToAgents.has(name) ? ["intent", "agent"] : ["intent"],
      pinned(pinnedIntentPayloads, name),
      "written by the intents service",
    ),
  ),
  ...Object.values(portfolioEventTypes).map((name) => define(name, ["portfolio"], pinned(pinnedPortfolioPayloads, name), "written by the intents service")),
  ...[agentEventTypes.lifecycle, agentEventTypes.warning, agentEventTypes.command].map((name) =>
    define(name, ["agent"], pinned(pinnedAgentPayloads, name), "written by the registry"),
  ),
];

/** Events other services put into an intent's log (system-events.ts). */
export const systemIntentEventTypes = {
  channelMessage: "channel_message",
  memoryCreated: "memory.created",
  memoryUpdated: "memory.updated",
  memoryDeleted: "memory.deleted",
  memoryArchived: "memory.archived",
  memoryEvicted: "memory.evicted",
  memoryExpired: "memory.expired",
  approvalGranted: "governance.approval_granted",
  approvalDenied: "governance.approval_denied",
  policySet: "governance.policy_set",
  policyRemoved: "governance.policy_removed",
  engagementDecision: "engagement.decision",
  suspensionRenotified: "intent.suspension_renotified",
  suspensionEscalated: "intent.suspension_escalated",
  toolInvoked: "tool.invoked",
  triggerFired: triggerEventTypes.fired,
  ...federationEventTypes,
} as const;
export type SystemIntentEventType = (typeof systemIntentEventTypes)[keyof typeof systemIntentEventTypes];

const s = systemIntentEventTypes;
const systemEvents: EventDefinition[] = [
  define(s.channelMessage, ["intent"], ChannelMessagePayload, "a message on an audited channel (spec part 6)", true),
  // Memory events go to the intent log when a task or intent context exists, otherwise to the agent's stream (spec part 6).
  ...[s.memoryCreated, s.memoryUpdated, s.memoryDeleted, s.memoryEvicted, s.memoryExpired].map((name) =>
    define(name, ["intent", "agent"], MemoryEntryEventPayload, "a memory operation; the value is never included (spec part 6)", true),
  ),
  define(s.memoryArchived, ["intent", "agent"], MemoryArchivedPayload, "working memory snapshotted at task end (spec part 6)", true),
  // The spec shows no payload for these: the shapes below are what the governance and intents services write.
  ...[s.approvalGranted, s.approvalDenied].map((name) =>
    define(
      name,
      ["intent"],
      z.object({ approval_id: Id, action: z.string(), decision: z.enum(["approved", "denied"]), requested_by: z.string(), decided_by: z.string() }).passthrough(),
      "an approval decided",
      true,
    ),
  ),
  define(s.policySet, ["intent"], z.object({ governance_policy: z.object({}).passthrough(), version: z.number().int().positive() }).passthrough(), "the governance policy set", true),
  define(s.policyRemoved, ["intent"], z.object({ version: z.number().int().positive() }).passthrough(), "the governance policy removed", true),
  define(
    s.engagementDecision,
    ["intent"],
    // The official clients' SDK appends engagement.decision itself with fields of its own; `mode` is what both write.
    z.object({ mode: z.string() }).passthrough(),
    "an engagement decision (the governance service's, with should_ask, rationale and signals, or a client's own)",
    true,
  ),
  define(
    s.suspensionRenotified,
    ["intent"],
    z.object({ suspension_id: Id, attempt: z.number().int().positive(), max_attempts: z.number().int().positive(), strategy: z.string() }).passthrough(),
    "a suspension re-notification attempt",
    true,
  ),
  define(
    s.suspensionEscalated,
    ["intent"],
    z.object({ suspension_id: Id, after_attempt: z.number().int(), attempt: z.number().int(), channel: z.string() }).passthrough(),
    "a suspension escalation step",
    true,
  ),
  define(s.toolInvoked, ["intent"], ToolInvokedPayload, "a tool invoked through the vault's tool proxy for the intent (RFC-0014 §6.1); never credential material", true),
  define(s.triggerFired, ["intent"], TriggerFiredPayload, "the intent was created by a trigger firing (RFC-0017 §3.2, §5.2 lineage)", true),
  define(s.dispatched, ["intent"], FederationDispatchedPayload, "an intent was dispatched to a peer server", true),
  define(s.received, ["intent"], FederationReceivedPayload, "an intent was created from a peer's dispatch", true),
  define(s.callback, ["intent"], FederationCallbackPayload, "a peer reported a change of the dispatched intent", true),
  define(s.budgetWarning, ["intent"], FederationCallbackPayload, "a peer's callback said budget_warning", true),
  define(s.completed, ["intent"], FederationCallbackPayload, "a peer's callback said completed", true),
  define(s.failed, ["intent"], z.union([FederationDispatchFailedPayload, FederationCallbackPayload]), "the dispatch failed, or a peer's callback said failed", true),
];

/**
 * Every event, keyed by log and name. agent_assigned / agent_unassigned are written on both an
 * intent's and an agent's log, so one name may appear under two logs.
 */
export const eventCatalogue: readonly EventDefinition[] = [...ownEvents, ...systemEvents];

const systemByName: ReadonlyMap<string, EventDefinition> = new Map(systemEvents.map((definition) => [definition.name, definition]));

/** True when another service may put an event of this name into an intent's log. */
export const isSystemIntentEventType = (name: string): boolean => systemByName.has(name);

/** The payload schema of a system event, or undefined when the name is not a system event. */
export const systemEventPayloadSchema = (name: string): ZodType | undefined => systemByName.get(name)?.payload;

/** The catalogue entry for a name on a log. */
export const findEvent = (log: EventLog, name: string): EventDefinition | undefined =>
  eventCatalogue.find((definition) => definition.name === name && definition.logs.includes(log));
