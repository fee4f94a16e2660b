import { appError, intentEvents } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { enforceGovernance } from "../governance/handlers";
import { and, asc, count, eq, gt, inArray, isNull, type SQL } from "drizzle-orm";
import {
  fitPage,
  jsonBytes,
  isoTimestamp,
  MAX_FAILURE_PAGE,
  MAX_LEASE_TTL_SECONDS,
  type Caller,
  type FailureRecord,
  type RecordFailureBody,
  type RetryPolicy,
} from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { intents, leases } from "../db/schema";
import { failures, retryPolicies } from "../db/schema-records";
import { appendToLog, assertIntentExists, lockIntent, lockIntentRow, type NewEvent } from "../kernel/event-log";
import { decideAfterFailure, type FailureDecision } from "./retry-delay";
import { isBudgetBlocked } from "../costs/budget";
import { TERMINAL_STATUSES } from "../intents/status";
import { toLease } from "../kernel/mapping";
import { actingAgent } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import { recordCostInTx } from "../costs/handlers";
import { toRetryPolicy } from "./retry-policy";
import { agentWorkRefusal } from "../agents/agent-status";
import { taskOfIntent } from "../tasks/store";

type FailureRow = typeof failures.$inferSelect;
type LeaseRow = typeof leases.$inferSelect;

export function toFailure(row: FailureRow): FailureRecord {
  return {
    id: row.id,
    intent_id: row.intentId,
    agent_id: row.agentId,
    task_id: row.taskId,
    attempt_number: row.attemptNumber,
    error_code: row.errorCode,
    error_message: row.errorMessage,
    retry_scheduled_at: row.retryScheduledAt ? isoTimestamp(row.retryScheduledAt) : null,
    resolved_at: row.resolvedAt ? isoTimestamp(row.resolvedAt) : null,
    metadata: row.metadata,
    retries_exhausted: row.retriesExhausted,
    fallback_agent_id: row.fallbackAgentId,
    cost_id: row.costId,
    created_at: isoTimestamp(row.createdAt),
  };
}

/**
 * POST /intents/{id}/failures. In one transaction, serialized per intent on its row lock:
 * records the failure, schedules the retry from the retry policy when the client named no
 * retry_scheduled_at, and, when the failure exhausts the retries (or reaches failure_threshold,
 * or is not retryable) and the policy names a fallback agent, hands the failing agent's live
 * leases over to it (see handOver). Two concurrent failures of one agent hand over once: the
 * second finds the leases already moved.
 */
export async function recordFailure(ctx: IntentsContext, intentId: string, ifMatch: number | null, body: RecordFailureBody, caller: Caller): Promise<FailureRecord> {
  await enforceGovernance(ctx, intentId, undefined, body.cost ? { kind: "cost", amount: body.cost.amount } : { kind: "failure" }, caller);
  const agentId = actingAgent(caller, body.agent_id);
  const now = ctx.clock.now();
  if (body.cost?.agent_id && body.cost.agent_id !== agentId) {
    throw appError("AGENT_MISMATCH", `cost.agent_id ${body.cost.agent_id} differs from the failing agent ${agentId}`, {
      cost_agent_id: body.cost.agent_id,
      agent_id: agentId,
    });
  }
  let published = false;
  const record = await ctx.db.transaction(async (tx) => {
    const intent = await lockIntentRow(tx, intentId, ifMatch);
    const [policyRow] = await tx.select().from(retryPolicies).where(eq(retryPolicies.intentId, intentId));
    const intentPolicy = policyRow ? toRetryPolicy(policyRow) : null;
    // A failure of a task follows the task's retry policy when it has one (spec 2.8).
    const task = body.task_id ? await taskOfIntent(tx, intentId, body.task_id) : null;
    const policy: RetryPolicy | null = task?.retryPolicy
      ? { ...task.retryPolicy, id: intentPolicy?.id ?? task.id, intent_id: intentId, created_at: isoTimestamp(task.createdAt), updated_at: isoTimestamp(task.updatedAt) }
      : intentPolicy;
    const [unresolved] = await tx
      .select({ n: count() })
      .from(failures)
      .where(and(eq(failures.intentId, intentId), eq(failures.agentId, agentId), isNull(failures.resolvedAt)));
    const decision = decideAfterFailure({ policy, attemptNumber: body.attempt_number, errorCode: body.error_code, unresolvedFailures: (unresolved?.n ?? 0) + 1 });

    const retryScheduledAt = retryTime(body, decision, policy, now);

    let costId: string | null = null;
    if (body.cost) {
      // Failed attempts still record costs (spec 2.8), with the budget rules of POST /costs.
      const recorded = await recordCostInTx(tx, intentId, { ...body.cost, agent_id: agentId }, caller, now);
      costId = recorded.cost.id;
      if (recorded.events.length) published = true;
    }

    const [inserted] = await tx
      .insert(failures)
      .values({
        id: randomUUID(),
        intentId,
        agentId,
        taskId: body.task_id ?? null,
        attemptNumber: body.attempt_number,
        errorCode: body.error_code,
        errorMessage: body.error_message,
        retryScheduledAt,
        metadata: body.metadata,
        retriesExhausted: !decision.retryAllowed,
        costId,
        createdAt: now,
      })
      .returning();
    let row = inserted!;

    const fallbackAgentId = policy?.fallback_agent_id ?? null;
    const open = !TERMINAL_STATUSES.includes(intent.status as never);
    if (
      decision.handOver &&
      fallbackAgentId &&
      fallbackAgentId !== agentId &&
      open &&
      !(await budgetBlocked(tx, intentId)) &&
      // A fallback agent that is draining, dead or deregistered takes nothing over.
      !(await agentWorkRefusal(tx, fallbackAgentId))
    ) {
      const moved = await handOver(tx, { intentId, intentStatus: intent.status, failure: row, fallbackAgentId, reason: decision.reason!, actor: caller.actor, now });
      if (moved) {
        row = moved;
        published = true;
      }
    }
    return toFailure(row);
  });
  if (published) ctx.published();
  return record;
}

/**
 * GET /intents/{id}/failures: the failure history, in the order it was recorded; agent_id filters.
 * At most `limit` (default and ceiling 1000) per read, so a long history cannot make one answer
 * unbounded; `after` = next_cursor reads on. Failures are inserted under the intent's row lock,
 * so their order of `seq` is their commit order and a cursor skips none.
 */
export async function listFailures(
  ctx: IntentsContext,
  intentId: string,
  query: { agent_id?: string | undefined; after?: string | undefined; limit?: number | undefined },
): Promise<{ failures: FailureRecord[]; next_cursor: string; has_more: boolean }> {
  const limit = query.limit ?? MAX_FAILURE_PAGE;
  const after = query.after === undefined ? 0 : Number(query.after);
  const filters: SQL[] = [eq(failures.intentId, intentId), gt(failures.seq, after)];
  if (query.agent_id) filters.push(eq(failures.agentId, query.agent_id));
  const rows = await ctx.db.select().from(failures).where(and(...filters)).orderBy(asc(failures.seq)).limit(limit + 1);
  if (!rows.length) await assertIntentExists(ctx.db, intentId);
  const shown = fitPage(rows.slice(0, limit), (row) => jsonBytes(row.metadata) + 512);
  const page = shown.items;
  return { failures: page.map(toFailure), next_cursor: String(page.at(-1)?.seq ?? after), has_more: shown.cut || rows.length > limit };
}

/**
 * When the next attempt should run. Omitted: the policy's delay after now (none without a
 * policy). null: the client schedules no retry. A time: kept, unless no retry is allowed.
 */
function retryTime(body: RecordFailureBody, decision: FailureDecision, policy: RetryPolicy | null, now: Date): Date | null {
  if (body.retry_scheduled_at === undefined) return decision.delayMs === null ? null : new Date(now.getTime() + decision.delayMs);
  if (body.retry_scheduled_at === null) return null;
  if (!decision.retryAllowed) {
    throw appError("RETRY_NOT_ALLOWED", `no retry may follow attempt ${body.attempt_number} (${decision.reason?.replace(/_/g, " ")}); send retry_scheduled_at null or leave it out`,
      { reason: decision.reason, attempt_number: body.attempt_number, max_retries: policy?.max_retries ?? null, failure_threshold: policy?.failure_threshold ?? null },
    );
  }
  return new Date(body.retry_scheduled_at);
}

interface HandOver {
  intentId: string;
  intentStatus: string;
  failure: FailureRow;
  fallbackAgentId: string;
  reason: string;
  actor: string;
  now: Date;
}

/**
 * The fallback of spec 2.8, inside the failure's transaction: the failing agent's live leases
 * on the intent are released (lease_released, reason fallback), the fallback agent receives a
 * lease of each same scope for the term the failing lease was granted (lease_acquired), the
 * failing agent's unresolved failures are resolved, and fallback_triggered is appended. The
 * intent's state and failure history stay readable to the fallback agent as to everyone.
 * Returns the updated failure, or null when the failing agent holds no live lease to hand over.
 */
async function handOver(tx: Tx, h: HandOver): Promise<FailureRow | null> {
  const failedAgentId = h.failure.agentId;
  const suspended = h.intentStatus === "suspended_awaiting_input";
  const live: SQL[] = [eq(leases.intentId, h.intentId), eq(leases.agentId, failedAgentId), eq(leases.holdsScope, true)];
  // Leases of a suspended intent do not lapse (spec 3.1).
  if (!suspended) live.push(gt(leases.expiresAt, h.now));
  const held = await tx.select().from(leases).where(and(...live)).orderBy(asc(leases.acquiredAt));
  if (!held.length) return null;

  // Moves the lease epoch: a state write checked against the old leases is sent back to check again.
  await lockIntent(tx, h.intentId, null);
  await tx
    .update(leases)
    .set({ releasedAt: h.now, holdsScope: false, endReason: "fallback", endedAt: h.now })
    .where(inArray(leases.id, held.map((lease) => lease.id)));
  const granted = await tx
    .insert(leases)
    .values(
      held.map((lease) => ({
        id: randomUUID(),
        intentId: h.intentId,
        agentId: h.fallbackAgentId,
        scope: lease.scope,
        scopeKey: lease.scopeKey,
        acquiredAt: h.now,
        expiresAt: new Date(h.now.getTime() + fallbackTermMs(lease)),
        holdsScope: true,
      })),
    )
    .returning();
  const byScope = new Map(granted.map((lease) => [lease.scopeKey, toLease(lease)]));

  await tx
    .update(failures)
    .set({ resolvedAt: h.now })
    .where(and(eq(failures.intentId, h.intentId), eq(failures.agentId, failedAgentId), isNull(failures.resolvedAt)));
  const [failure] = await tx.update(failures).set({ fallbackAgentId: h.fallbackAgentId }).where(eq(failures.id, h.failure.id)).returning();

  const moves = held.map((lease) => ({ scope: lease.scope, released_lease_id: lease.id, lease_id: byScope.get(lease.scopeKey)!.id, expires_at: byScope.get(lease.scopeKey)!.expires_at }));
  const newEvents: NewEvent[] = [
    ...held.map((lease) => newEvent(intentEvents.leaseReleased, h.actor, { lease_id: lease.id, agent_id: failedAgentId, scope: lease.scope, reason: "fallback" })),
    ...moves.map((move) => newEvent(intentEvents.leaseAcquired, h.actor, { lease_id: move.lease_id, agent_id: h.fallbackAgentId, scope: move.scope, expires_at: move.expires_at })),
    newEvent(intentEvents.fallbackTriggered, h.actor, {
      failed_agent_id: failedAgentId,
      fallback_agent_id: h.fallbackAgentId,
      failure_id: h.failure.id,
      attempt_number: h.failure.attemptNumber,
      error_code: h.failure.errorCode,
      reason: h.reason,
      scopes: moves.map((move) => move.scope),
      leases: moves,
    }),
  ];
  await appendToLog(tx, h.intentId, newEvents, h.now);
  return failure!;
}

/**
 * An intent its budget blocked grants agents no new lease until an operator raises the budget or
 * returns it to active, so nothing passes to a fallback agent (it would spend from the same
 * budget): the failure is recorded and the failing agent keeps its leases. Read after this
 * failure's own cost, which may be what blocked it.
 */
async function budgetBlocked(tx: Tx, intentId: string): Promise<boolean> {
  const [row] = await tx.select({ status: intents.status, blockedReason: intents.blockedReason }).from(intents).where(eq(intents.id, intentId));
  return row ? isBudgetBlocked({ status: row.status, blocked_reason: row.blockedReason }) : false;
}

/** The fallback lease lasts as long as the failing lease was granted for (its remaining time may be nearly nothing). */
function fallbackTermMs(lease: LeaseRow): number {
  const granted = lease.expiresAt.getTime() - lease.acquiredAt.getTime();
  return Math.min(Math.max(granted, 1000), MAX_LEASE_TTL_SECONDS * 1000);
}
