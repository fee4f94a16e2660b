/**
 * The catalogue of event type names: every name the server writes to a log is spelled once,
 * here, and every writer, projection, test and document takes it from here.
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

/** Events on an intent's log. */
export const intentEventTypes = {
  created: "intent_created",
  statePatched: "state_patched",
  statusChanged: "status_changed",
  agentAssigned: "agent_assigned",
  agentUnassigned: "agent_unassigned",
  leaseAcquired: "lease_acquired",
  /**
   * Every end of a lease: released by its holder, a coordinator or an admin, expired by its TTL,
   * or ended by its agent's death or deregistration (spec part 6 "lease expiry events"), or
   * handed to a fallback agent. `payload.reason` says which: released, expired, agent_dead,
   * agent_deregistered, fallback. The clients' enum has no lease_expired.
   */
  leaseReleased: "lease_released",
  attachmentAdded: "attachment_added",
  attachmentRemoved: "intent.attachment_removed",
  budgetAlert: "budget_alert",
  budgetUpdated: "intent.budget_updated",
  fallbackTriggered: "fallback_triggered",
  suspended: "intent.suspended",
  resumed: "intent.resumed",
  suspensionExpired: "intent.suspension_expired",
  // Access control (RFC-0011): the RFC's names, which the clients' EventType enum knows.
  /** An entry granted (POST /acl/entries), or the whole list replaced (PUT /acl: payload.action acl_set). */
  accessGranted: "access_granted",
  accessRevoked: "access_revoked",
  /** A time-limited entry reached its expires_at (the expiry sweeper). */
  accessExpired: "access_expired",
  accessRequested: "access_requested",
  accessRequestApproved: "access_request_approved",
  accessRequestDenied: "access_request_denied",
  // Intent graphs (RFC-0002): the clients' names for dependency changes; `intent.ready` is ours.
  dependencyAdded: "dependency_added",
  dependencyRemoved: "dependency_removed",
  /**
   * On a dependent's log: the completion of one of its dependencies (or the removal of the last
   * one not completed) left every dependency completed; announced once per such moment.
   */
  ready: "intent.ready",
  // Coordinators (RFC-0013): the RFC's names (section 10); the clients' enum knows
  // coordinator.decision and coordinator.failed_over, not coordinator.assigned.
  coordinatorAssigned: "coordinator.assigned",
  coordinatorFailedOver: "coordinator.failed_over",
  coordinatorDecision: "coordinator.decision",
  // Distributed tracing (RFC-0020 names no events): ours. The event carries the trace's trace_id.
  /** A trace was started on the intent (POST /intents/{id}/traces). */
  traceStarted: "intent.trace_started",
  /** Spans were linked to one of the intent's traces (POST /traces/{trace_id}/spans); only the newly linked ones are named. */
  spansLinked: "intent.spans_linked",
} as const;
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
export const portfolioEventTypes = {
  created: "portfolio_created",
  updated: "portfolio.updated",
  memberAdded: "added_to_portfolio",
  memberRemoved: "removed_from_portfolio",
  memberStatusChanged: "portfolio.member_status_changed",
  memberSuspended: "portfolio.member_suspended",
  memberResumed: "portfolio.member_resumed",
  statusChanged: "portfolio.status_changed",
} as const;

/** Events on an agent's own log (the registry). */
export const agentEventTypes = {
  lifecycle: "agent.lifecycle",
  /** A warning the server raises about the agent (drain timed out with work in progress). */
  warning: "agent.warning",
  /** A command queued for the agent; delivered with its next heartbeat. */
  command: "agent.command",
  /** Projected from the intents' agent_assigned / agent_unassigned: the agent learns of its work. */
  assigned: "agent_assigned",
  unassigned: "agent_unassigned",
} as const;

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
