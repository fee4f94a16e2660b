import { intentEvents, PLAN_REVIEW_ACTION, planEvents, taskEvents } from "@intentmesh/contracts";
import { eventOn, subscribe, type Bus, type TypedEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { GovernanceContext } from "./context";
import { approvals, inbox } from "./db/schema";
import { announceApproval } from "./handlers/approvals";
import { ESCALATION_ACTION } from "./handlers/escalations";

/**
 * Escalations a coordinator's guardrails start (RFC-0013 2.2 "coordinator hits guardrail ...
 * auto-escalates"; docs/coordinators.md "on_exceed", "auto_escalate_after_failures"): the intents
 * service logs coordinator.escalation_initiated in the transaction that decided it, and this
 * consumer opens the escalation, an approval with action `escalation` whose id is the event's id.
 * The insert ignores an id it already holds and commits with the inbox row: one escalation per
 * event, whatever the redeliveries and replicas. The escalator is the coordinator (it may not
 * resolve it, as for any escalation), the requesting principal the system.
 */
export const COORDINATOR_ESCALATIONS_DURABLE = "governance-coordinator-escalations";
/** The principal of escalations the platform opens; no key has it, so none is refused as self-approval. */
export const GUARDRAIL_ESCALATION_PRINCIPAL = "system:coordinator-guardrails";

type EscalationInitiated = TypedEvent<"intent", typeof intentEvents.coordinatorEscalationInitiated>;

type ApprovalRow = typeof approvals.$inferInsert;

/**
 * The approval an event opens (or records), id = the event's id: the insert ignores an id it
 * already holds and commits with the inbox row, so one per event whatever the redeliveries and
 * replicas. True when this delivery inserted it.
 */
async function approvalOfEvent(tx: Tx, row: Omit<ApprovalRow, "requesterPrincipal" | "resolution">): Promise<boolean> {
  const inserted = await tx
    .insert(approvals)
    .values({ ...row, requesterPrincipal: GUARDRAIL_ESCALATION_PRINCIPAL, resolution: null })
    .onConflictDoNothing()
    .returning({ id: approvals.id });
  return inserted.length > 0;
}

export async function openGuardrailEscalation(tx: Tx, event: EscalationInitiated, now: Date): Promise<boolean> {
  const p = event.payload;
  return approvalOfEvent(tx, {
    id: event.id,
    intentId: event.intent_id,
    action: ESCALATION_ACTION,
    reason: p.reason,
    context: { source: "coordinator_guardrail", guardrail: p.guardrail, lease_id: p.lease_id, coordinator_id: p.coordinator_id, escalated_to: p.escalated_to, event_id: event.id },
    requestedBy: p.coordinator_id,
    status: "pending",
    createdAt: now,
    priority: p.priority,
    urgency: p.priority,
  });
}

/** The durable of task.force_escalated (RFC-0013 2.1): the supervisor's forced escalations. */
export const FORCED_ESCALATIONS_DURABLE = "governance-task-force-escalations";

type ForceEscalated = TypedEvent<"intent", typeof taskEvents.forceEscalated>;

/**
 * A supervisor forced a task to a human (task.force_escalated): the escalation, id = the event's
 * id, escalated by the supervisor (who may not resolve it, as for any escalation), with the task
 * in its context. Once per event, as above.
 */
export async function openForcedEscalation(tx: Tx, event: ForceEscalated, now: Date): Promise<boolean> {
  const p = event.payload;
  return approvalOfEvent(tx, {
    id: event.id,
    intentId: event.intent_id,
    action: ESCALATION_ACTION,
    reason: p.reason,
    context: { source: "task_force_escalated", task_id: p.task_id, lease_id: p.lease_id, coordinator_id: p.coordinator_id, escalated_by: p.escalated_by, event_id: event.id },
    requestedBy: p.escalated_by,
    status: "pending",
    createdAt: now,
    priority: p.priority,
    urgency: p.priority,
  });
}

/** The durable of plan.approved_by_supervisor: the supervisor's sign-offs at the plan review gate. */
export const SUPERVISOR_PLAN_REVIEWS_DURABLE = "governance-supervisor-plan-reviews";

type ApprovedBySupervisor = TypedEvent<"intent", typeof planEvents.approvedBySupervisor>;

/**
 * The supervisor signed off a plan at the review gate (RFC-0013 2.1): that is the plan review the
 * coordinator's requires_plan_review and requires_replan_review ask for, so it is recorded as a
 * granted approval with action plan_review (id = the event's id, decided by the supervisor), which
 * the intents service counts as it counts the reviews granted through the approval routes. Once
 * per event, as above.
 */
export async function recordSupervisorPlanReview(tx: Tx, event: ApprovedBySupervisor, now: Date): Promise<boolean> {
  const p = event.payload;
  return approvalOfEvent(tx, {
    id: event.id,
    intentId: event.intent_id,
    action: PLAN_REVIEW_ACTION,
    reason: `plan ${p.plan_id} approved by the coordinator's supervisor at the review gate`,
    context: { source: "plan_approved_by_supervisor", plan_id: p.plan_id, event_id: event.id },
    requestedBy: p.approved_by,
    status: "approved",
    decidedBy: p.approved_by,
    decidedAt: now,
    decisionNotes: p.comment,
    createdAt: now,
    priority: null,
    urgency: null,
  });
}

export async function startCoordinatorEscalations(ctx: GovernanceContext, bus: Bus): Promise<{ stop(): Promise<void> }> {
  const guardrails = await subscribe(bus, eventOn(intentEvents.coordinatorEscalationInitiated, "intent"), {
    db: ctx.db,
    inbox,
    durable: COORDINATOR_ESCALATIONS_DURABLE,
    logger: ctx.logger,
    handle: async (tx: Tx, event: EscalationInitiated) => {
      if (await openGuardrailEscalation(tx, event, ctx.clock.now())) announceApproval(ctx, event.intent_id);
    },
  });
  const forced = await subscribe(bus, eventOn(taskEvents.forceEscalated, "intent"), {
    db: ctx.db,
    inbox,
    durable: FORCED_ESCALATIONS_DURABLE,
    logger: ctx.logger,
    handle: async (tx: Tx, event: ForceEscalated) => {
      if (await openForcedEscalation(tx, event, ctx.clock.now())) announceApproval(ctx, event.intent_id);
    },
  });
  const reviews = await subscribe(bus, eventOn(planEvents.approvedBySupervisor, "intent"), {
    db: ctx.db,
    inbox,
    durable: SUPERVISOR_PLAN_REVIEWS_DURABLE,
    logger: ctx.logger,
    handle: async (tx: Tx, event: ApprovedBySupervisor) => {
      await recordSupervisorPlanReview(tx, event, ctx.clock.now());
    },
  });
  return {
    stop: async () => {
      await Promise.all([guardrails.stop(), forced.stop(), reviews.stop()]);
    },
  };
}
