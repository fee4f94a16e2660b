import { randomUUID } from "node:crypto";
import { and, asc, desc, eq, gt, inArray, lte, sql } from "drizzle-orm";
import {
  appError,
  coordinatorCommands,
  errors,
  intentEventTypes,
  isAdmin,
  isoTimestamp,
  MAX_HELD_LEASES_ANSWERED,
  type Caller,
  type CoordinatorLease,
  type CreateCoordinatorLeaseBody,
  type CreateDecisionRecordBody,
  type DecisionView,
  type IntentEvent,
  type RecordDecisionBody,
  intentEvents,
  type SetCoordinatorBody,
} from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { assignments, events } from "../db/schema";
import { agentStatus } from "../db/schema-agents";
import { coordinatorLeases } from "../db/schema-coordinators";
import { grantedReviewsFor, guardedDecision } from "./decision-guard";
import type { GuardrailBreach } from "./guardrails";
import { appendToLog, assertIntentExists, lockIntentRow, type NewEvent } from "../kernel/event-log";
import { assertNoLiveHolder, expiryAfter, isLive, nextCandidate, toCoordinatorLease, type CoordinatorLeaseRow } from "./rules";

/**
 * Coordinator leases and decisions (RFC-0013; docs/coordinators.md). Every change locks the
 * intent's row first (the order every intent write takes), then the lease rows; the event and
 * the change commit in one transaction.
 */

export const assigned = (row: CoordinatorLeaseRow, actor: string): NewEvent =>
  newEvent(intentEvents.coordinatorAssigned, actor, { lease_id: row.id, coordinator_id: row.agentId, supervisor_id: row.supervisorId, expires_at: isoTimestamp(row.expiresAt), predecessor_id: row.predecessorId });

const failedOver = (old: CoordinatorLeaseRow, next: CoordinatorLeaseRow | undefined, reason: "expired" | "agent_dead"): NewEvent =>
  newEvent(intentEvents.coordinatorFailedOver, "system", { old_lease_id: old.id, old_coordinator_id: old.agentId, new_lease_id: next?.id ?? null, new_coordinator_id: next?.agentId ?? null, reason });

/** The row of a new lease taking over (or granted fresh), live for two heartbeat intervals. */
function newLease(intentId: string, agentId: string, from: Omit<CoordinatorLeaseRow, "id" | "intentId" | "agentId" | "holds" | "grantedAt" | "lastHeartbeat" | "expiresAt" | "endedAt" | "endReason" | "predecessorId" | "version" | "pausedAt" | "pausedBy" | "pauseReason" | "stallReportedAt" | "consecutiveFailures">, now: Date, predecessorId: string | null): CoordinatorLeaseRow {
  return {
    id: randomUUID(),
    intentId,
    agentId,
    supervisorId: from.supervisorId,
    coordinatorType: from.coordinatorType,
    guardrails: from.guardrails,
    metadata: from.metadata,
    heartbeatIntervalSeconds: from.heartbeatIntervalSeconds,
    failoverCandidates: from.failoverCandidates,
    holds: true,
    grantedAt: now,
    lastHeartbeat: now,
    expiresAt: expiryAfter(now, from.heartbeatIntervalSeconds),
    endedAt: null,
    endReason: null,
    predecessorId,
    version: 1,
    pausedAt: null,
    pausedBy: null,
    pauseReason: null,
    stallReportedAt: null,
    consecutiveFailures: 0,
  };
}

/**
 * The lease `to` takes over from an ended one (handoff, replacement), with its terms: supervisor,
 * type, guardrails, metadata, interval, the other failover candidates, the intent's failure
 * streak, and (keepPause) its pause. Inserted in the caller's transaction.
 */
export async function grantSuccessor(tx: Tx, ended: CoordinatorLeaseRow, to: string, now: Date, keepPause: boolean): Promise<CoordinatorLeaseRow> {
  const successor: CoordinatorLeaseRow = {
    ...newLease(ended.intentId, to, { ...ended, failoverCandidates: ended.failoverCandidates.filter((c) => c !== to) }, now, ended.id),
    consecutiveFailures: ended.consecutiveFailures,
    ...(keepPause ? { pausedAt: ended.pausedAt, pausedBy: ended.pausedBy, pauseReason: ended.pauseReason } : {}),
  };
  await tx.insert(coordinatorLeases).values(successor);
  return successor;
}

async function endLease(tx: Tx, id: string, reason: "expired" | "agent_dead", now: Date): Promise<CoordinatorLeaseRow | undefined> {
  const [ended] = await tx
    .update(coordinatorLeases)
    .set({ holds: false, endedAt: now, endReason: reason, version: sql`${coordinatorLeases.version} + 1` })
    .where(and(eq(coordinatorLeases.id, id), eq(coordinatorLeases.holds, true)))
    .returning();
  return ended;
}

/**
 * POST /coordinators: the caller's acting agent becomes the intent's coordinator. A live lease of
 * another (or the same) agent is 409 COORDINATOR_LEASE_HELD with `existing_lease`; one past its
 * expiry is taken over (coordinator.failed_over, reason expired) in the same transaction.
 */
export async function createCoordinatorLease(ctx: IntentsContext, body: CreateCoordinatorLeaseBody, caller: Caller): Promise<CoordinatorLease> {
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, body.intent_id, null);
    const [holder] = await tx.select().from(coordinatorLeases).where(and(eq(coordinatorLeases.intentId, body.intent_id), eq(coordinatorLeases.holds, true))).for("update");
    assertNoLiveHolder(body.intent_id, holder, now);
    const logged: NewEvent[] = [];
    const granted = newLease(
      body.intent_id,
      body.agent_id,
      {
        supervisorId: body.supervisor_id ?? null,
        coordinatorType: body.coordinator_type,
        guardrails: body.guardrails ?? null,
        metadata: body.metadata,
        heartbeatIntervalSeconds: body.heartbeat_interval_seconds,
        failoverCandidates: body.failover_candidates,
      },
      now,
      holder?.id ?? null,
    );
    if (holder) {
      const ended = await endLease(tx, holder.id, "expired", now);
      if (ended) logged.push(failedOver(ended, granted, "expired"));
    }
    await tx.insert(coordinatorLeases).values(granted);
    logged.push(assigned(granted, caller.actor));
    await appendToLog(tx, body.intent_id, logged, now);
    return granted;
  });
  ctx.published();
  return toCoordinatorLease(row, now);
}

/**
 * POST /intents/{id}/coordinator (the MCP server's set_coordinator): the grant of POST
 * /coordinators for `coordinator_id`; the policy name is kept in the lease's metadata.
 */
export async function assignCoordinator(ctx: IntentsContext, intentId: string, body: SetCoordinatorBody, caller: Caller): Promise<CoordinatorLease> {
  if (body.set_by !== undefined && body.set_by !== caller.actor) {
    throw appError("AGENT_MISMATCH", `set_by ${body.set_by} is not the acting agent ${caller.actor}`, { set_by: body.set_by, actor: caller.actor });
  }
  return createCoordinatorLease(
    ctx,
    {
      agent_id: body.coordinator_id,
      intent_id: intentId,
      scope: "intent",
      coordinator_type: "llm",
      supervisor_id: body.supervisor_id ?? null,
      guardrails: body.guardrails ?? null,
      heartbeat_interval_seconds: body.heartbeat_interval_seconds,
      failover_candidates: body.failover_candidates,
      metadata: { governance_policy: body.governance_policy },
    },
    caller,
  );
}

async function leaseById(ctx: IntentsContext, leaseId: string): Promise<CoordinatorLeaseRow> {
  const [row] = await ctx.db.select().from(coordinatorLeases).where(eq(coordinatorLeases.id, leaseId));
  if (!row) throw errors.notFound("coordinator_lease", leaseId);
  return row;
}

/** GET /coordinators/{id}: read on its intent. */
export async function getCoordinatorLease(ctx: IntentsContext, leaseId: string, caller: Caller): Promise<CoordinatorLease> {
  const row = await leaseById(ctx, leaseId);
  await ctx.access.check(coordinatorCommands.listLeases, row.intentId, caller);
  return toCoordinatorLease(row, ctx.clock.now());
}

/** GET /intents/{id}/coordinators: every lease of the intent, newest first (at most 100). */
export async function listCoordinatorLeases(ctx: IntentsContext, intentId: string): Promise<CoordinatorLease[]> {
  await assertIntentExists(ctx.db, intentId);
  const rows = await ctx.db.select().from(coordinatorLeases).where(eq(coordinatorLeases.intentId, intentId)).orderBy(desc(coordinatorLeases.grantedAt), desc(coordinatorLeases.id)).limit(100);
  const now = ctx.clock.now();
  return rows.map((row) => toCoordinatorLease(row, now));
}

/**
 * POST /coordinators/{id}/heartbeat: the holder's only (403 NOT_LEASE_HOLDER for anyone else,
 * admin keys included: a heartbeat says the coordinator itself is alive). The lease then holds
 * two more intervals; an unresponsive lease nobody took over is revived; an ended one is 409.
 */
export async function coordinatorHeartbeat(ctx: IntentsContext, leaseId: string, caller: Caller): Promise<CoordinatorLease> {
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    const [current] = await tx.select().from(coordinatorLeases).where(eq(coordinatorLeases.id, leaseId)).for("update");
    if (!current) throw errors.notFound("coordinator_lease", leaseId);
    if (current.agentId !== caller.actor) {
      throw appError("NOT_LEASE_HOLDER", `coordinator lease ${leaseId} is held by ${current.agentId}, not ${caller.actor}`, { lease_id: leaseId, agent_id: current.agentId });
    }
    if (!current.holds) {
      throw appError("COORDINATOR_LEASE_ENDED", `coordinator lease ${leaseId} ended (${current.endReason}); take a new lease`, { lease_id: leaseId, end_reason: current.endReason });
    }
    const [renewed] = await tx
      .update(coordinatorLeases)
      .set({ lastHeartbeat: now, expiresAt: expiryAfter(now, current.heartbeatIntervalSeconds), version: sql`${coordinatorLeases.version} + 1` })
      .where(eq(coordinatorLeases.id, leaseId))
      .returning();
    return renewed!;
  });
  return toCoordinatorLease(row, now);
}

/**
 * Failover (spec 3.4, RFC-0013 5.2): in the agent-lifecycle consumer's transaction, when an agent
 * dies, each coordinator lease it holds ends (reason agent_dead) and the next candidate that is
 * not dead takes over with the same terms; coordinator.failed_over names both. Conditional on
 * `holds`, and in the consumer's inbox transaction: exactly once across replicas and redeliveries.
 * Returns the new leases.
 */
export async function failOverCoordinatorsOf(tx: Tx, agentId: string, now: Date, grantedBy?: Date): Promise<CoordinatorLeaseRow[]> {
  const held = await tx
    .select()
    .from(coordinatorLeases)
    .where(and(eq(coordinatorLeases.agentId, agentId), eq(coordinatorLeases.holds, true), grantedBy ? lte(coordinatorLeases.grantedAt, grantedBy) : undefined))
    .orderBy(asc(coordinatorLeases.intentId));
  const successors: CoordinatorLeaseRow[] = [];
  for (const lease of held) {
    await lockIntentRow(tx, lease.intentId, null);
    const ended = await endLease(tx, lease.id, "agent_dead", now);
    if (!ended) continue;
    const candidates = ended.failoverCandidates;
    const statuses = candidates.length
      ? new Map((await tx.select({ agentId: agentStatus.agentId, status: agentStatus.status }).from(agentStatus).where(inArray(agentStatus.agentId, candidates))).map((r) => [r.agentId, r.status]))
      : new Map<string, string>();
    const next = nextCandidate(candidates, agentId, statuses);
    // The successor resumes from the last known state (RFC-0013 5.2): a supervisor's pause and the failure streak go with it.
    const successor = next ? await grantSuccessor(tx, { ...ended, failoverCandidates: [next.agentId, ...next.rest] }, next.agentId, now, true) : undefined;
    if (successor) successors.push(successor);
    await appendToLog(tx, lease.intentId, successor ? [failedOver(ended, successor, "agent_dead"), assigned(successor, "system")] : [failedOver(ended, undefined, "agent_dead")], now);
  }
  return successors;
}

/** The intent's live coordinator lease holder (nulls when none, or when the intent is unknown). */
export async function coordinatorOf(ctx: IntentsContext, intentId: string): Promise<{ intent_id: string; agent_id: string | null; lease_id: string | null }> {
  const [holder] = await ctx.db.select().from(coordinatorLeases).where(and(eq(coordinatorLeases.intentId, intentId), eq(coordinatorLeases.holds, true)));
  const live = holder && isLive(holder, ctx.clock.now()) ? holder : undefined;
  return { intent_id: intentId, agent_id: live?.agentId ?? null, lease_id: live?.id ?? null };
}

/** The intents whose live coordinator lease `agentId` holds (at most MAX_HELD_LEASES_ANSWERED, newest grants first). */
export async function intentsHeldBy(ctx: IntentsContext, agentId: string): Promise<{ intent_ids: string[] }> {
  const rows = await ctx.db
    .select({ intentId: coordinatorLeases.intentId })
    .from(coordinatorLeases)
    .where(and(eq(coordinatorLeases.agentId, agentId), eq(coordinatorLeases.holds, true), gt(coordinatorLeases.expiresAt, ctx.clock.now())))
    .orderBy(desc(coordinatorLeases.grantedAt))
    .limit(MAX_HELD_LEASES_ANSWERED);
  return { intent_ids: rows.map((r) => r.intentId) };
}

/** The intents (up to 10) whose live coordinator lease `coordinator` holds and to which `agentId` is assigned. */
export async function intentsCoordinatedFor(ctx: IntentsContext, coordinator: string, agentId: string): Promise<{ intent_ids: string[] }> {
  const rows = await ctx.db
    .select({ intentId: coordinatorLeases.intentId })
    .from(coordinatorLeases)
    .innerJoin(assignments, and(eq(assignments.intentId, coordinatorLeases.intentId), eq(assignments.agentId, agentId)))
    .where(and(eq(coordinatorLeases.agentId, coordinator), eq(coordinatorLeases.holds, true), gt(coordinatorLeases.expiresAt, ctx.clock.now())))
    .orderBy(asc(coordinatorLeases.intentId))
    .limit(10);
  return { intent_ids: rows.map((r) => r.intentId) };
}

// ---------------------------------------------------------------- decisions

function decisionView(event: Pick<IntentEvent, "id" | "intent_id" | "sequence" | "actor" | "payload" | "created_at">): DecisionView {
  const p = event.payload as Record<string, unknown>;
  const rationale = String(p.rationale ?? "");
  return {
    id: event.id,
    type: intentEvents.coordinatorDecision.name,
    intent_id: event.intent_id,
    coordinator_id: String(p.coordinator_id ?? event.actor),
    decision_maker_id: String(p.coordinator_id ?? event.actor),
    lease_id: (p.lease_id as string | null) ?? null,
    decision_type: String(p.decision_type),
    summary: String(p.summary ?? ""),
    rationale,
    reasoning: rationale,
    outcome: (p.outcome as string | Record<string, unknown> | null) ?? null,
    alternatives_considered: (p.alternatives_considered as Record<string, unknown>[] | undefined) ?? [],
    confidence: (p.confidence as number | null | undefined) ?? null,
    timestamp: event.created_at,
    created_at: event.created_at,
    sequence: event.sequence,
  };
}

/** Writes a decision (or its refusal) and answers it; a refusal commits its violation event, then is thrown. */
async function writeDecision(ctx: IntentsContext, intentId: string, decide: (tx: Tx) => Promise<{ events: NewEvent[]; breach: GuardrailBreach | null }>, now: Date): Promise<DecisionView> {
  const outcome = await ctx.db.transaction(async (tx) => {
    const { events: logged, breach } = await decide(tx);
    const { events: written } = await appendToLog(tx, intentId, logged, now);
    return { first: written[0]!, breach };
  });
  ctx.published();
  if (outcome.breach) {
    const { guardrail, attempted_value, limit, message } = outcome.breach;
    throw appError("GUARDRAIL_VIOLATION", `refused by the coordinator's guardrail ${guardrail}: ${message}`, { intent_id: intentId, guardrail, attempted_value, limit });
  }
  return decisionView(outcome.first);
}

/**
 * POST /decisions: a decision record of the intent's coordinator (RFC-0013 4.1). The caller's
 * acting agent must hold the intent's live coordinator lease (admin keys excepted), and
 * `coordinator_id` must name it (its agent id or its lease id). One event, coordinator.decision,
 * under the intent's row lock: the holder cannot change between the check and the write. The
 * lease's guardrails apply to the decisions recorded under it.
 */
export async function createDecisionRecord(ctx: IntentsContext, body: CreateDecisionRecordBody, caller: Caller): Promise<DecisionView> {
  const now = ctx.clock.now();
  const grantedReviews = await grantedReviewsFor(ctx, body.intent_id, body.decision_type, caller);
  return writeDecision(
    ctx,
    body.intent_id,
    async (tx) => {
      await lockIntentRow(tx, body.intent_id, null);
      const [holder] = await tx.select().from(coordinatorLeases).where(and(eq(coordinatorLeases.intentId, body.intent_id), eq(coordinatorLeases.holds, true)));
      const live = holder && isLive(holder, now) ? holder : undefined;
      const names = (row: CoordinatorLeaseRow) => body.coordinator_id === row.agentId || body.coordinator_id === row.id;
      if (!isAdmin(caller) && !(live && live.agentId === caller.actor && names(live))) {
        const who = live ? `the coordinator of intent ${body.intent_id} is ${live.agentId} (lease ${live.id})` : `intent ${body.intent_id} has no live coordinator lease`;
        throw appError("NOT_LEASE_HOLDER", `${caller.actor} may not record a decision as ${body.coordinator_id}: ${who}`, { intent_id: body.intent_id, coordinator_id: body.coordinator_id });
      }
      const lease = live && names(live) ? live : undefined;
      const payload = {
        coordinator_id: lease ? lease.agentId : body.coordinator_id,
        lease_id: lease?.id ?? null,
        decision_type: body.decision_type,
        summary: body.summary,
        rationale: body.rationale,
        outcome: null,
        alternatives_considered: body.alternatives_considered,
        confidence: body.confidence ?? null,
        ...(body.metadata ? { metadata: body.metadata } : {}),
      };
      if (!lease) return { events: [newEvent(intentEvents.coordinatorDecision, caller.actor, payload)], breach: null };
      const { events: logged, breach } = await guardedDecision(tx, lease, { decisionType: body.decision_type, payload }, grantedReviews, now);
      // The caller is the event's actor (an admin may record for the coordinator).
      return { events: logged.map((e) => (e.eventType === intentEventTypes.coordinatorDecision ? { ...e, actor: caller.actor } : e)), breach };
    },
    now,
  );
}

/**
 * POST /intents/{id}/decisions (record_decision): a decision on the intent by the caller (write
 * on it). When the caller holds the live coordinator lease, it is the coordinator's decision and
 * the lease's guardrails apply.
 */
export async function recordDecision(ctx: IntentsContext, intentId: string, body: RecordDecisionBody, caller: Caller): Promise<DecisionView> {
  if (body.decided_by && body.decided_by !== caller.actor) {
    throw appError("AGENT_MISMATCH", `decided_by ${body.decided_by} is not the acting agent ${caller.actor}`, { decided_by: body.decided_by, actor: caller.actor });
  }
  const now = ctx.clock.now();
  const grantedReviews = await grantedReviewsFor(ctx, intentId, body.decision_type, caller);
  return writeDecision(
    ctx,
    intentId,
    async (tx) => {
      await lockIntentRow(tx, intentId, null);
      const [holder] = await tx.select().from(coordinatorLeases).where(and(eq(coordinatorLeases.intentId, intentId), eq(coordinatorLeases.holds, true), eq(coordinatorLeases.agentId, caller.actor)));
      const lease = holder && isLive(holder, now) ? holder : undefined;
      const payload = {
        coordinator_id: caller.actor,
        lease_id: lease?.id ?? null,
        decision_type: body.decision_type,
        // An object outcome (the MCP server's) is kept as sent; the summary is then the decision's type.
        summary: typeof body.outcome === "string" ? body.outcome : body.decision_type,
        rationale: body.reasoning ?? body.rationale!,
        outcome: body.outcome,
        alternatives_considered: [],
        confidence: null,
      };
      if (!lease) return { events: [newEvent(intentEvents.coordinatorDecision, caller.actor, payload)], breach: null };
      return guardedDecision(tx, lease, { decisionType: body.decision_type, payload }, grantedReviews, now);
    },
    now,
  );
}

async function decisionsOf(ctx: IntentsContext, intentId: string, limit: number) {
  await assertIntentExists(ctx.db, intentId);
  const rows = await ctx.db
    .select({ id: events.id, intentId: events.intentId, sequence: events.sequence, actor: events.actor, payload: events.payload, createdAt: events.createdAt })
    .from(events)
    .where(and(eq(events.intentId, intentId), eq(events.eventType, intentEventTypes.coordinatorDecision)))
    .orderBy(asc(events.sequence))
    .limit(limit + 1);
  const views = rows.slice(0, limit).map((r) => decisionView({ id: r.id, intent_id: r.intentId, sequence: r.sequence, actor: r.actor, payload: r.payload, created_at: isoTimestamp(r.createdAt) }));
  return { views, hasMore: rows.length > limit };
}

/** GET /intents/{id}/coordinator-decisions: a bare list, as list_decision_records returns it. */
export async function listDecisionRecords(ctx: IntentsContext, intentId: string, limit: number): Promise<DecisionView[]> {
  return (await decisionsOf(ctx, intentId, limit)).views;
}

/** GET /intents/{id}/decisions: {decisions, has_more}. */
export async function listDecisions(ctx: IntentsContext, intentId: string, limit: number) {
  const { views, hasMore } = await decisionsOf(ctx, intentId, limit);
  return { decisions: views, has_more: hasMore };
}
