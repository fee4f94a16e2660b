import { defineEvent, eventNames, type EventDefinition, type EventLog } from "./event-definition";
import * as P from "./event-payloads";

/**
 * The events of the intents service's and the registry's own logs, each one definition
 * (defineEvent: name, logs, payload schema): every name the server writes to a log is spelled
 * once, in a definition here or in the event catalogue (tasks.ts, plans.ts, vault.ts, event-catalogue.ts),
 * and every writer (newEvent), subscriber (subscribe), test and document takes it from there.
 * The name maps (intentEventTypes, ...) are derived from the definitions.
 *
 * How a name was chosen (docs/compatibility.md):
 * - the spec names it (part 6: intent.suspended, agent.lifecycle, budget_alert,
 *   fallback_triggered, portfolio.member_suspended, ...): the spec's name, exactly;
 * - the spec leaves it unnamed and the official clients' closed `EventType` enum knows it
 *   (intent_created, state_patched, lease_acquired, ...): the clients' name, so their strict
 *   parsers read every event of a log;
 * - neither: a name of our own in the reserved `intent.` / `portfolio.` / `agent.` namespaces.
 *
 * Names become NATS subject tokens (im.evt.<aggregate>.<id>.<event_type>).
 */

const INTENTS = "written by the intents service";
/** An event the intents service writes on one of its logs. */
const intentsEvent = <const Name extends string, Schema extends P.Schema, const Log extends EventLog>(name: Name, logs: readonly Log[], payload: Schema) =>
  defineEvent({ name, logs, payload, description: INTENTS });

/** Events on an intent's log. */
export const intentEvents = {
  created: intentsEvent("intent_created", ["intent"], P.IntentCreatedPayload),
  statePatched: intentsEvent("state_patched", ["intent"], P.StatePatchedPayload),
  statusChanged: intentsEvent("status_changed", ["intent"], P.StatusChangedPayload),
  /** Also on the agent's own log: the registry projects it there (assignment-projection.ts). */
  agentAssigned: intentsEvent("agent_assigned", ["intent", "agent"], P.AgentAssignmentPayload),
  agentUnassigned: intentsEvent("agent_unassigned", ["intent", "agent"], P.AgentAssignmentPayload),
  leaseAcquired: intentsEvent("lease_acquired", ["intent"], P.LeaseAcquiredPayload),
  /**
   * Every end of a lease: released by its holder, a coordinator or an admin, expired by its TTL,
   * or ended by its agent's death or deregistration (spec part 6 "lease expiry events"), or
   * handed to a fallback agent. `payload.reason` says which: released, expired, agent_dead,
   * agent_deregistered, fallback. The clients' enum has no lease_expired.
   */
  leaseReleased: intentsEvent("lease_released", ["intent"], P.LeaseReleasedPayload),
  attachmentAdded: intentsEvent("attachment_added", ["intent"], P.AttachmentAddedPayload),
  attachmentRemoved: intentsEvent("intent.attachment_removed", ["intent"], P.AttachmentRemovedPayload),
  budgetAlert: intentsEvent("budget_alert", ["intent"], P.BudgetAlertPayload),
  budgetUpdated: intentsEvent("intent.budget_updated", ["intent"], P.BudgetUpdatedPayload),
  fallbackTriggered: intentsEvent("fallback_triggered", ["intent"], P.FallbackTriggeredPayload),
  suspended: intentsEvent("intent.suspended", ["intent"], P.SuspendedPayload),
  resumed: intentsEvent("intent.resumed", ["intent"], P.ResumedPayload),
  suspensionExpired: intentsEvent("intent.suspension_expired", ["intent"], P.SuspensionExpiredPayload),
  // Access control (RFC-0011): the RFC's names, which the clients' EventType enum knows.
  /** An entry granted (POST /acl/entries), or the whole list replaced (PUT /acl: payload.action acl_set). */
  accessGranted: intentsEvent("access_granted", ["intent"], P.AccessGrantedPayload),
  accessRevoked: intentsEvent("access_revoked", ["intent"], P.AccessEntryEndedPayload),
  /** A time-limited entry reached its expires_at (the expiry sweeper). */
  accessExpired: intentsEvent("access_expired", ["intent"], P.AccessEntryEndedPayload),
  accessRequested: intentsEvent("access_requested", ["intent"], P.AccessRequestedPayload),
  accessRequestApproved: intentsEvent("access_request_approved", ["intent"], P.AccessRequestApprovedPayload),
  accessRequestDenied: intentsEvent("access_request_denied", ["intent"], P.AccessRequestDeniedPayload),
  // Intent graphs (RFC-0002): the clients' names for dependency changes; `intent.ready` is ours.
  dependencyAdded: intentsEvent("dependency_added", ["intent"], P.DependencyChangedPayload),
  dependencyRemoved: intentsEvent("dependency_removed", ["intent"], P.DependencyChangedPayload),
  /**
   * On a dependent's log: the completion of one of its dependencies (or the removal of the last
   * one not completed) left every dependency completed; announced once per such moment.
   */
  ready: intentsEvent("intent.ready", ["intent"], P.IntentReadyPayload),
  // Coordinators (RFC-0013): the RFC's names (section 10); the clients' enum knows
  // coordinator.decision and coordinator.failed_over, not coordinator.assigned.
  coordinatorAssigned: intentsEvent("coordinator.assigned", ["intent"], P.CoordinatorAssignedPayload),
  coordinatorFailedOver: intentsEvent("coordinator.failed_over", ["intent"], P.CoordinatorFailedOverPayload),
  coordinatorDecision: intentsEvent("coordinator.decision", ["intent"], P.CoordinatorDecisionPayload),
  /** RFC-0013 3.1: the intent's spend reached warn_at_percentage of the coordinator's budget (once per lease). */
  coordinatorGuardrailWarning: intentsEvent("coordinator.guardrail_warning", ["intent"], P.CoordinatorGuardrailWarningPayload),
  /** RFC-0013 3: a decision of the coordinator refused by a guardrail, logged with the refusal. */
  coordinatorGuardrailViolation: intentsEvent("coordinator.guardrail_violation", ["intent"], P.CoordinatorGuardrailViolationPayload),
  /** RFC-0013 2.1: the lease paused (by its supervisor, an admin or coordinator key, or an on_exceed guardrail): the holder's work is refused. */
  coordinatorPaused: intentsEvent("coordinator.paused", ["intent"], P.CoordinatorPausedPayload),
  coordinatorResumed: intentsEvent("coordinator.resumed", ["intent"], P.CoordinatorResumedPayload),
  /** RFC-0013 3.3: no progress on the intent within require_progress_every_minutes (once per stall). */
  coordinatorStalled: intentsEvent("coordinator.stalled", ["intent"], P.CoordinatorStalledPayload),
  /** RFC-0013 3.3 max_task_wait_hours: a ready task waited longer than the limit for an agent to claim it (once per wait; on_exceed applies). Ours: the RFC names no event. */
  coordinatorTaskWaitExceeded: intentsEvent("coordinator.task_wait_exceeded", ["intent"], P.CoordinatorTaskWaitExceededPayload),
  /** RFC-0013 3.3 checkpoint_timeout_hours: a plan checkpoint awaited its decision longer than the limit (once per checkpoint reached; on_exceed applies). Ours: the RFC names no event. */
  coordinatorCheckpointTimedOut: intentsEvent("coordinator.checkpoint_timed_out", ["intent"], P.CoordinatorCheckpointTimedOutPayload),
  /** RFC-0013 2.2: a guardrail escalated to a human; the governance service opens the escalation (approval action `escalation`). */
  coordinatorEscalationInitiated: intentsEvent("coordinator.escalation_initiated", ["intent"], P.CoordinatorEscalationInitiatedPayload),
  coordinatorGuardrailsUpdated: intentsEvent("coordinator.guardrails_updated", ["intent"], P.CoordinatorGuardrailsUpdatedPayload),
  /** PATCH /coordinators/{id}: the lease's other terms (supervisor, heartbeat interval, failover candidates, metadata). Ours: the RFC names no event. */
  coordinatorUpdated: intentsEvent("coordinator.updated", ["intent"], P.CoordinatorUpdatedPayload),
  /** RFC-0013 5.3: the holder handed its lease to another agent. */
  coordinatorHandoff: intentsEvent("coordinator.handoff", ["intent"], P.CoordinatorHandoffPayload),
  /** RFC-0013 2.1: a supervisor revoked the lease and gave the intent to another agent. */
  coordinatorReplaced: intentsEvent("coordinator.replaced", ["intent"], P.CoordinatorReplacedPayload),
  /** RFC-0013 2.1 "override plan": a supervisor changed (PATCH /plans/{id}) a plan the coordinator created, logged with the change. */
  coordinatorPlanOverridden: intentsEvent("coordinator.plan_overridden", ["intent"], P.CoordinatorPlanOverriddenPayload),
  /** RFC-0013 9 DELETE /intents/{id}/coordinator: the intent's lease ended, no successor. Ours: the RFC names no event for it. */
  coordinatorRemoved: intentsEvent("coordinator.removed", ["intent"], P.CoordinatorRemovedPayload),
  // Distributed tracing (RFC-0020 names no events): ours. The event carries the trace's trace_id.
  /** A trace was started on the intent (POST /intents/{id}/traces). */
  traceStarted: intentsEvent("intent.trace_started", ["intent"], P.TraceStartedPayload),
  /** Spans were linked to one of the intent's traces (POST /traces/{trace_id}/spans); only the newly linked ones are named. */
  spansLinked: intentsEvent("intent.spans_linked", ["intent"], P.SpansLinkedPayload),
} as const satisfies Record<string, EventDefinition>;
/** The names of intentEvents by key, derived (a name is spelled once, above). */
export const intentEventTypes = eventNames(intentEvents);
export type IntentEventType = (typeof intentEventTypes)[keyof typeof intentEventTypes];

/**
 * Events after which a subscriber of an intent's streams may hold less than before (RFC-0011):
 * an SSE stream checks its subscriber again before it sends anything that follows one.
 */
export const ACCESS_NARROWING_EVENTS: ReadonlySet<string> = new Set([
  intentEventTypes.accessGranted,
  intentEventTypes.accessRevoked,
  intentEventTypes.accessExpired,
  intentEventTypes.accessRequestApproved,
]);

/** Events on a portfolio's log. */
export const portfolioEvents = {
  created: intentsEvent("portfolio_created", ["portfolio"], P.PortfolioCreatedPayload),
  updated: intentsEvent("portfolio.updated", ["portfolio"], P.PortfolioUpdatedPayload),
  memberAdded: intentsEvent("added_to_portfolio", ["portfolio"], P.MembershipPayload),
  memberRemoved: intentsEvent("removed_from_portfolio", ["portfolio"], P.MembershipPayload),
  memberStatusChanged: intentsEvent("portfolio.member_status_changed", ["portfolio"], P.MemberStatusPayload),
  memberSuspended: intentsEvent("portfolio.member_suspended", ["portfolio"], P.MemberSuspensionPayload),
  memberResumed: intentsEvent("portfolio.member_resumed", ["portfolio"], P.MemberSuspensionPayload),
  statusChanged: intentsEvent("portfolio.status_changed", ["portfolio"], P.PortfolioStatusPayload),
} as const satisfies Record<string, EventDefinition>;
export const portfolioEventTypes = eventNames(portfolioEvents);

const REGISTRY = "written by the registry";
/** Events on an agent's own log (the registry). */
export const agentEvents = {
  lifecycle: defineEvent({ name: "agent.lifecycle", logs: ["agent"], payload: P.AgentLifecycleEventPayload, description: REGISTRY }),
  /** A warning the server raises about the agent (drain timed out with work in progress). */
  warning: defineEvent({ name: "agent.warning", logs: ["agent"], payload: P.AgentWarningPayload, description: REGISTRY }),
  /** A command queued for the agent; delivered with its next heartbeat. */
  command: defineEvent({ name: "agent.command", logs: ["agent"], payload: P.AgentCommandPayload, description: REGISTRY }),
  /** Projected from the intents' agent_assigned / agent_unassigned: the agent learns of its work. */
  assigned: intentEvents.agentAssigned,
  unassigned: intentEvents.agentUnassigned,
} as const satisfies Record<string, EventDefinition>;
export const agentEventTypes = eventNames(agentEvents);

/**
 * Names the spec gives to events a later service will emit (channels): reserved now so no client
 * can forge them before that service exists. (`engagement.decision` stays open: the clients'
 * SDK appends it itself.)
 */
const SPEC_NAMED = ["channel_message"] as const;

/**
 * The names this server writes before issue 10 renamed them (see migration 0003 of the intents
 * service and 0001 of the registry): still refused from clients, so an old reader is not fooled.
 */
export const LEGACY_EVENT_TYPES = {
  intents: {
    "intent.created": intentEventTypes.created,
    "intent.state_patched": intentEventTypes.statePatched,
    "intent.status_changed": intentEventTypes.statusChanged,
    "intent.agent_assigned": intentEventTypes.agentAssigned,
    "intent.agent_unassigned": intentEventTypes.agentUnassigned,
    "intent.attachment_added": intentEventTypes.attachmentAdded,
    "lease.acquired": intentEventTypes.leaseAcquired,
    "lease.renewed": intentEventTypes.leaseAcquired,
    "lease.released": intentEventTypes.leaseReleased,
    "lease.expired": intentEventTypes.leaseReleased,
  },
  portfolios: {
    "portfolio.created": portfolioEventTypes.created,
    "portfolio.member_added": portfolioEventTypes.memberAdded,
    "portfolio.member_removed": portfolioEventTypes.memberRemoved,
  },
  agents: {
    "agent.assigned": agentEventTypes.assigned,
    "agent.unassigned": agentEventTypes.unassigned,
  },
} as const;

/** Namespaces reserved to the server: appending a name in them through POST /events would forge server facts. */
const RESERVED_EVENT_PREFIXES = ["intent.", "lease.", "agent.", "memory.", "governance.", "portfolio.", "task.", "federation.", "tool.", "grant.", "credential.", "trigger.", "plan."];

/** Every name the server writes on any log, and the spec's names for what later services will write. */
const RESERVED_EVENT_NAMES: ReadonlySet<string> = new Set<string>([
  ...Object.values(intentEventTypes),
  ...Object.values(portfolioEventTypes),
  ...Object.values(agentEventTypes),
  ...SPEC_NAMED,
]);

/**
 * Event types a client may not append through POST /intents/{id}/events. Client names the
 * server does not emit itself (`comment`, `failure_recorded`, ...) stay open; task.* is the server's (tasks, docs/tasks.md), and so is plan.* (a forged
 * plan.checkpoint_approved would mislead whoever watches a plan's gates, docs/plans.md).
 */
export const isReservedEventType = (eventType: string): boolean =>
  RESERVED_EVENT_NAMES.has(eventType) || RESERVED_EVENT_PREFIXES.some((prefix) => eventType.startsWith(prefix));
