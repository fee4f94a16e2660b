import { and, count, desc, eq, notInArray, sql } from "drizzle-orm";
import {
  appError,
  CoordinatorGuardrails,
  coordinatorCommands,
  errors,
  intentEvents,
  isCoordinatorOrAdmin,
  isoTimestamp,
  type Caller,
  type CoordinatorHandoffBody,
  type CoordinatorLease,
  type CoordinatorPauseBody,
  type CoordinatorReplaceBody,
  type ForceEscalateTaskBody,
  type UpdateCoordinatorBody,
} from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { newEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { agentStatus } from "../db/schema-agents";
import { coordinatorLeases } from "../db/schema-coordinators";
import { appendToLog, lockIntentRow, type NewEvent } from "../kernel/event-log";
import { assigned as assignedEvent, grantSuccessor } from "./handlers";
import { DEFAULT_WARN_AT_PERCENTAGE, readGuardrails } from "./guardrails";
import { isProgress } from "./stall-sweeper";
import { guardrailFacts } from "./decision-guard";
import { events } from "../db/schema";
import { tasks } from "../db/schema-tasks";
import { TASK_END_STATUSES } from "../tasks/task-status";
import { readTask, readTaskUnlocked, taskEvent } from "../tasks/store";
import { expiryAfter, isLive, leaseStatus, mergePatch, supervises, toCoordinatorLease, type CoordinatorLeaseRow } from "./rules";

/**
 * The lease routes beyond taking one (RFC-0013 2.1 supervisor actions, 5.3 handoff, 9 guardrail
 * and registration routes; docs/coordinators.md "Supervision"). Each change locks the intent's
 * row, then re-reads the lease FOR UPDATE: it applies to the lease as it is, once; If-Match, when
 * sent, must name the lease's version. Its event commits with it.
 *
 * Who: a lease's supervisor is its `supervisor_id` agent, and admin and coordinator keys; its
 * holder is never its own supervisor (a coordinator does not loosen its guardrails or resume
 * itself from a pause a guardrail imposed), unless it acts with an admin key.
 */

export type GuardrailsView = {
  lease_id: string;
  intent_id: string;
  coordinator_id: string;
  guardrails: Record<string, unknown> | null;
  enforced: Record<string, unknown>;
  version: number;
};

const guardrailsView = (row: CoordinatorLeaseRow): GuardrailsView => ({
  lease_id: row.id,
  intent_id: row.intentId,
  coordinator_id: row.agentId,
  guardrails: row.guardrails ?? null,
  enforced: { ...readGuardrails(row.guardrails) },
  version: row.version,
});

export function assertSupervises(row: CoordinatorLeaseRow, caller: Caller, action: string): void {
  if (supervises(row, caller)) return;
  const why = caller.actor === row.agentId ? "a coordinator does not supervise itself" : `its supervisor is ${row.supervisorId ?? "(none)"}`;
  throw errors.forbidden(`${caller.actor} may not ${action} coordinator lease ${row.id}: ${why}; admin and coordinator keys may`, { lease_id: row.id, supervisor_id: row.supervisorId });
}

async function leaseIntent(ctx: IntentsContext, leaseId: string): Promise<string> {
  const [row] = await ctx.db.select({ intentId: coordinatorLeases.intentId }).from(coordinatorLeases).where(eq(coordinatorLeases.id, leaseId));
  if (!row) throw errors.notFound("coordinator_lease", leaseId);
  return row.intentId;
}

/**
 * The frame of every change: write on the lease's intent (RFC-0011), the intent's row lock, the
 * lease re-read FOR UPDATE and still holding (409 COORDINATOR_LEASE_ENDED), If-Match. `change`
 * answers the lease to return and the events to log.
 */
async function changeLease(
  ctx: IntentsContext,
  leaseId: string,
  ifMatch: number | null,
  caller: Caller,
  change: (tx: Tx, row: CoordinatorLeaseRow, now: Date) => Promise<{ answer: CoordinatorLeaseRow; events: NewEvent[] }>,
): Promise<CoordinatorLeaseRow> {
  const intentId = await leaseIntent(ctx, leaseId);
  await ctx.access.check(coordinatorCommands.assign, intentId, caller);
  const now = ctx.clock.now();
  const answer = await ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, intentId, null);
    const [row] = await tx.select().from(coordinatorLeases).where(eq(coordinatorLeases.id, leaseId)).for("update");
    if (!row) throw errors.notFound("coordinator_lease", leaseId);
    if (ifMatch !== null && row.version !== ifMatch) throw errors.versionMismatch("coordinator_lease", leaseId, row.version, ifMatch);
    if (!row.holds) throw appError("COORDINATOR_LEASE_ENDED", `coordinator lease ${leaseId} ended (${row.endReason})`, { lease_id: leaseId, end_reason: row.endReason });
    const done = await change(tx, row, now);
    if (done.events.length) await appendToLog(tx, intentId, done.events, now);
    return done.answer;
  });
  ctx.published();
  return answer;
}

const bumped = { version: sql`${coordinatorLeases.version} + 1` };

async function updateRow(tx: Tx, id: string, set: Partial<CoordinatorLeaseRow>): Promise<CoordinatorLeaseRow> {
  const [row] = await tx
    .update(coordinatorLeases)
    .set({ ...set, ...bumped })
    .where(eq(coordinatorLeases.id, id))
    .returning();
  return row!;
}

/** GET /coordinators/{id}/guardrails: read on its intent. */
export async function getGuardrails(ctx: IntentsContext, leaseId: string, caller: Caller): Promise<GuardrailsView> {
  const [row] = await ctx.db.select().from(coordinatorLeases).where(eq(coordinatorLeases.id, leaseId));
  if (!row) throw errors.notFound("coordinator_lease", leaseId);
  await ctx.access.check(coordinatorCommands.listLeases, row.intentId, caller);
  return guardrailsView(row);
}

/**
 * PATCH /coordinators/{id}/guardrails (RFC-0013 2.1 "adjust guardrails", supervisor only): the
 * merged guardrails are checked as at grant (400 VALIDATION_FAILED); coordinator.guardrails_updated
 * carries the patch as `changes`. The new limits apply from the holder's next act.
 */
export async function patchGuardrails(ctx: IntentsContext, leaseId: string, ifMatch: number | null, patch: Record<string, unknown>, caller: Caller): Promise<GuardrailsView> {
  const row = await changeLease(ctx, leaseId, ifMatch, caller, async (tx, current) => {
    assertSupervises(current, caller, "change the guardrails of");
    const merged = mergePatch(current.guardrails ?? {}, patch) as Record<string, unknown>;
    const checked = CoordinatorGuardrails.safeParse(merged);
    if (!checked.success) throw errors.validation(`the patched guardrails are not valid: ${checked.error.issues[0]?.message ?? "invalid"}`, checked.error.issues);
    const updated = await updateRow(tx, current.id, { guardrails: Object.keys(merged).length ? merged : null });
    return {
      answer: updated,
      events: [newEvent(intentEvents.coordinatorGuardrailsUpdated, caller.actor, { lease_id: updated.id, coordinator_id: updated.agentId, updated_by: caller.actor, changes: patch, version: updated.version })],
    };
  });
  return guardrailsView(row);
}

/**
 * PATCH /coordinators/{id}: its holder or admin and coordinator keys (the brief of issue 26);
 * `supervisor_id` only by whoever supervises the lease (a coordinator does not pick its own
 * supervisor). A new heartbeat interval moves a live lease's expiry from its last heartbeat; an
 * unresponsive lease stays unresponsive (only its holder's heartbeat revives it).
 */
export async function updateCoordinator(ctx: IntentsContext, leaseId: string, ifMatch: number | null, body: UpdateCoordinatorBody, caller: Caller): Promise<CoordinatorLease> {
  const row = await changeLease(ctx, leaseId, ifMatch, caller, async (tx, current, now) => {
    if (caller.actor !== current.agentId && !isCoordinatorOrAdmin(caller)) {
      throw errors.forbidden(`${caller.actor} may not change coordinator lease ${current.id}: its holder ${current.agentId}, admin and coordinator keys may`, { lease_id: current.id });
    }
    if (body.supervisor_id !== undefined) assertSupervises(current, caller, "change the supervisor of");
    const set: Partial<CoordinatorLeaseRow> = {};
    if (body.supervisor_id !== undefined) set.supervisorId = body.supervisor_id;
    if (body.coordinator_type !== undefined) set.coordinatorType = body.coordinator_type;
    if (body.failover_candidates !== undefined) set.failoverCandidates = [...new Set(body.failover_candidates)].filter((c) => c !== current.agentId);
    if (body.metadata !== undefined) set.metadata = body.metadata;
    if (body.heartbeat_interval_seconds !== undefined) {
      set.heartbeatIntervalSeconds = body.heartbeat_interval_seconds;
      if (isLive(current, now)) set.expiresAt = expiryAfter(current.lastHeartbeat, body.heartbeat_interval_seconds);
    }
    const updated = await updateRow(tx, current.id, set);
    return {
      answer: updated,
      events: [newEvent(intentEvents.coordinatorUpdated, caller.actor, { lease_id: updated.id, coordinator_id: updated.agentId, updated_by: caller.actor, changes: { ...body }, version: updated.version })],
    };
  });
  return toCoordinatorLease(row, ctx.clock.now());
}

/** POST /coordinators/{id}/pause (RFC-0013 2.1): the holder's work is refused (409 COORDINATOR_PAUSED) until resumed. */
export async function pauseCoordinator(ctx: IntentsContext, leaseId: string, ifMatch: number | null, body: CoordinatorPauseBody, caller: Caller): Promise<CoordinatorLease> {
  const row = await changeLease(ctx, leaseId, ifMatch, caller, async (tx, current, now) => {
    assertSupervises(current, caller, "pause");
    if (current.pausedAt) throw appError("COORDINATOR_PAUSED", `coordinator lease ${current.id} is already paused by ${current.pausedBy}`, { lease_id: current.id, paused_by: current.pausedBy });
    const reason = body.reason ?? "paused by its supervisor";
    const updated = await updateRow(tx, current.id, { pausedAt: now, pausedBy: caller.actor, pauseReason: reason });
    return { answer: updated, events: [newEvent(intentEvents.coordinatorPaused, caller.actor, { lease_id: updated.id, coordinator_id: updated.agentId, paused_by: caller.actor, reason })] };
  });
  return toCoordinatorLease(row, ctx.clock.now());
}

/** POST /coordinators/{id}/resume (RFC-0013 2.1): a paused lease works again; a stall window starts afresh from now. */
export async function resumeCoordinator(ctx: IntentsContext, leaseId: string, ifMatch: number | null, caller: Caller): Promise<CoordinatorLease> {
  const row = await changeLease(ctx, leaseId, ifMatch, caller, async (tx, current) => {
    assertSupervises(current, caller, "resume");
    if (!current.pausedAt) throw appError("COORDINATOR_NOT_PAUSED", `coordinator lease ${current.id} is not paused`, { lease_id: current.id });
    const updated = await updateRow(tx, current.id, { pausedAt: null, pausedBy: null, pauseReason: null });
    return { answer: updated, events: [newEvent(intentEvents.coordinatorResumed, caller.actor, { lease_id: updated.id, coordinator_id: updated.agentId, resumed_by: caller.actor })] };
  });
  return toCoordinatorLease(row, ctx.clock.now());
}

/** The agent taking over must not be the holder, nor known dead or deregistered (409 AGENT_NOT_ACTIVE). */
async function assertTakesOver(tx: Tx, current: CoordinatorLeaseRow, agentId: string): Promise<void> {
  if (agentId === current.agentId) throw errors.validation(`${agentId} already holds coordinator lease ${current.id}`, [{ path: ["agent"], message: "the new coordinator is the holder" }]);
  const [status] = await tx.select({ status: agentStatus.status }).from(agentStatus).where(eq(agentStatus.agentId, agentId));
  if (status && (status.status === "dead" || status.status === "deregistered")) {
    throw appError("AGENT_NOT_ACTIVE", `agent ${agentId} is ${status.status}; a coordinator lease goes to a live agent`, { agent_id: agentId, status: status.status });
  }
}

/** Ends the lease (handed_off, replaced) and grants the successor the same terms, in the caller's transaction. */
async function passLease(tx: Tx, current: CoordinatorLeaseRow, to: string, reason: "handed_off" | "replaced", now: Date, keepPause: boolean): Promise<{ ended: CoordinatorLeaseRow; successor: CoordinatorLeaseRow }> {
  const [ended] = await tx
    .update(coordinatorLeases)
    .set({ holds: false, endedAt: now, endReason: reason, ...bumped })
    .where(and(eq(coordinatorLeases.id, current.id), eq(coordinatorLeases.holds, true)))
    .returning();
  const successor = await grantSuccessor(tx, ended!, to, now, keepPause);
  return { ended: ended!, successor };
}

/**
 * POST /coordinators/{id}/handoff (RFC-0013 5.3): the holder's alone (403 NOT_LEASE_HOLDER), to a
 * named agent that is not known dead; the lease ends (handed_off) and the agent gets a new one
 * with the same terms, a pause included (a handoff does not lift a supervisor's pause). Exactly
 * once: under the intent's row lock the lease either still holds or answers 409
 * COORDINATOR_LEASE_ENDED. coordinator.handoff and coordinator.assigned; the new lease is answered.
 */
export async function handOffCoordinator(ctx: IntentsContext, leaseId: string, ifMatch: number | null, body: CoordinatorHandoffBody, caller: Caller): Promise<CoordinatorLease> {
  const to = (body.to_agent_id ?? body.to_coordinator)!;
  const row = await changeLease(ctx, leaseId, ifMatch, caller, async (tx, current, now) => {
    if (current.agentId !== caller.actor) {
      throw appError("NOT_LEASE_HOLDER", `coordinator lease ${current.id} is held by ${current.agentId}, not ${caller.actor}: only the holder hands it off (a supervisor replaces it)`, { lease_id: current.id, agent_id: current.agentId });
    }
    await assertTakesOver(tx, current, to);
    const { ended, successor } = await passLease(tx, current, to, "handed_off", now, true);
    return {
      answer: successor,
      events: [
        newEvent(intentEvents.coordinatorHandoff, caller.actor, {
          old_lease_id: ended.id,
          new_lease_id: successor.id,
          from_coordinator: ended.agentId,
          to_coordinator: successor.agentId,
          reason: body.reason ?? null,
          state_summary: body.state_summary ?? null,
        }),
        assignedEvent(successor, caller.actor),
      ],
    };
  });
  return toCoordinatorLease(row, ctx.clock.now());
}

/**
 * POST /coordinators/{id}/replace (RFC-0013 2.1 "revoke lease and assign a new coordinator"):
 * by whoever supervises the lease, live or unresponsive; the new coordinator gets the same terms,
 * unpaused (replacing is the supervisor's answer to what paused it). coordinator.replaced and
 * coordinator.assigned; the new lease is answered.
 */
export async function replaceCoordinator(ctx: IntentsContext, leaseId: string, ifMatch: number | null, body: CoordinatorReplaceBody, caller: Caller): Promise<CoordinatorLease> {
  const to = (body.new_agent_id ?? body.new_coordinator_id)!;
  const row = await changeLease(ctx, leaseId, ifMatch, caller, async (tx, current, now) => {
    assertSupervises(current, caller, "replace");
    await assertTakesOver(tx, current, to);
    const { ended, successor } = await passLease(tx, current, to, "replaced", now, false);
    return {
      answer: successor,
      events: [
        newEvent(intentEvents.coordinatorReplaced, caller.actor, {
          old_lease_id: ended.id,
          new_lease_id: successor.id,
          old_coordinator_id: ended.agentId,
          new_coordinator_id: successor.agentId,
          replaced_by: caller.actor,
          reason: body.reason ?? null,
        }),
        assignedEvent(successor, caller.actor),
      ],
    };
  });
  return toCoordinatorLease(row, ctx.clock.now());
}

/**
 * DELETE /intents/{id}/coordinator (RFC-0013 9 "remove coordinator from intent"): the intent's
 * holding lease (live, paused or unresponsive) ends with `end_reason: "removed"` and no successor;
 * its failover candidates are not asked (removing is not a failure). Its holder (stepping down),
 * whoever supervises it, admin and coordinator keys; write on the intent (the route's rule).
 * Under the intent's row lock: of two removals one answers the ended lease, the other 404.
 * If-Match, when sent, is the lease's version. coordinator.removed; the ended lease is answered.
 */
export async function removeCoordinator(ctx: IntentsContext, intentId: string, ifMatch: number | null, caller: Caller): Promise<CoordinatorLease> {
  const now = ctx.clock.now();
  const ended = await ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, intentId, null);
    const [row] = await tx
      .select()
      .from(coordinatorLeases)
      .where(and(eq(coordinatorLeases.intentId, intentId), eq(coordinatorLeases.holds, true)))
      .for("update");
    if (!row) throw appError("COORDINATOR_LEASE_NOT_FOUND", `intent ${intentId} has no coordinator`, { intent_id: intentId });
    if (ifMatch !== null && row.version !== ifMatch) throw errors.versionMismatch("coordinator_lease", row.id, row.version, ifMatch);
    if (caller.actor !== row.agentId) assertSupervises(row, caller, "remove");
    const updated = await updateRow(tx, row.id, { holds: false, endedAt: now, endReason: "removed" });
    await appendToLog(tx, intentId, [newEvent(intentEvents.coordinatorRemoved, caller.actor, { lease_id: row.id, coordinator_id: row.agentId, removed_by: caller.actor })], now);
    return updated;
  });
  ctx.published();
  return toCoordinatorLease(ended, ctx.clock.now());
}

/**
 * POST /tasks/{id}/force-escalate (RFC-0013 2.1 "force a specific task to escalate to human",
 * `task.force_escalated`): by whoever supervises the holding coordinator lease of the task's
 * intent (its supervisor, admin and coordinator keys; never its holder: forcing is the
 * supervisor's override of the coordinator), with write on the intent; 404
 * COORDINATOR_LEASE_NOT_FOUND when the intent has no coordinator (anyone with write escalates
 * through POST /intents/{id}/escalations). The event commits under the intent's row lock; the
 * governance service opens the escalation from it, its id the event's id, once per event (as for
 * on_exceed). The task is not changed: a human decides what becomes of it. 202 with the escalation's id.
 */
export async function forceEscalateTask(ctx: IntentsContext, taskId: string, body: ForceEscalateTaskBody, caller: Caller) {
  const { intentId } = await readTaskUnlocked(ctx, taskId);
  await ctx.access.check(coordinatorCommands.assign, intentId, caller);
  const now = ctx.clock.now();
  const answer = await ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, intentId, null);
    const task = await readTask(tx, taskId);
    const [lease] = await tx
      .select()
      .from(coordinatorLeases)
      .where(and(eq(coordinatorLeases.intentId, intentId), eq(coordinatorLeases.holds, true)))
      .for("update");
    if (!lease) throw appError("COORDINATOR_LEASE_NOT_FOUND", `intent ${intentId} has no coordinator whose supervisor could force-escalate task ${taskId}; escalate through POST /intents/${intentId}/escalations`, { intent_id: intentId });
    assertSupervises(lease, caller, "force-escalate a task of");
    const id = randomUUID();
    const event = taskEvent("forceEscalated", caller.actor, {
      task_id: task.id,
      status: task.status as never,
      version: task.version,
      lease_id: lease.id,
      coordinator_id: lease.agentId,
      escalated_by: caller.actor,
      reason: body.reason,
      priority: body.priority,
    });
    await appendToLog(tx, intentId, [{ ...event, id }], now);
    return { escalation_id: id, task_id: task.id, intent_id: intentId, lease_id: lease.id, coordinator_id: lease.agentId, escalated_by: caller.actor, reason: body.reason, priority: body.priority };
  });
  ctx.published();
  return answer;
}

/**
 * GET /coordinators/{id}/guardrails/status (RFC-0013 9 "guardrail usage and remaining budget"):
 * the facts the guardrails judge, read now on the server clock, each with its limit (null when
 * the lease sets none). Read on the intent.
 */
export async function guardrailStatus(ctx: IntentsContext, leaseId: string, caller: Caller) {
  const [row] = await ctx.db.select().from(coordinatorLeases).where(eq(coordinatorLeases.id, leaseId));
  if (!row) throw errors.notFound("coordinator_lease", leaseId);
  await ctx.access.check(coordinatorCommands.listLeases, row.intentId, caller);
  const now = ctx.clock.now();
  const g = readGuardrails(row.guardrails);
  const facts = await guardrailFacts(ctx.db, row);
  const [open] = await ctx.db
    .select({ n: count() })
    .from(tasks)
    .where(and(eq(tasks.intentId, row.intentId), notInArray(tasks.status, [...TASK_END_STATUSES])));
  const [last] = await ctx.db
    .select({ at: events.createdAt })
    .from(events)
    .where(and(eq(events.intentId, row.intentId), isProgress(events.eventType, events.actor)))
    .orderBy(desc(events.sequence))
    .limit(1);
  const lastProgressAt = last && last.at > row.grantedAt ? last.at : row.grantedAt;
  const spentUsd = facts.spentCents / 100;
  const limit = (value: number | undefined) => value ?? null;
  return {
    lease_id: row.id,
    intent_id: row.intentId,
    coordinator_id: row.agentId,
    status: leaseStatus(row, now),
    budget: {
      spent_usd: spentUsd,
      max_budget_usd: limit(g.max_budget_usd),
      remaining_usd: g.max_budget_usd === undefined ? null : Math.max(0, g.max_budget_usd - spentUsd),
      warn_at_percentage: g.warn_at_percentage ?? DEFAULT_WARN_AT_PERCENTAGE,
    },
    plan_versions: { used: facts.planDecisions, limit: limit(g.max_plan_versions) },
    plan_duration_hours: { used: (now.getTime() - facts.coordinationStartedAt.getTime()) / 3_600_000, limit: limit(g.max_plan_duration_hours) },
    open_tasks: { used: Number(open?.n ?? 0), limit: limit(g.max_concurrent_tasks) },
    consecutive_failures: { used: row.consecutiveFailures, limit: limit(g.auto_escalate_after_failures) },
    progress: {
      last_progress_at: isoTimestamp(lastProgressAt),
      require_progress_every_minutes: limit(g.require_progress_every_minutes),
      stalled: row.stallReportedAt !== null && row.stallReportedAt.getTime() >= lastProgressAt.getTime(),
    },
  };
}
