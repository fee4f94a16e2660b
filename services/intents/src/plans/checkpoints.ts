import { and, asc, isNotNull, lte, sql } from "drizzle-orm";
import { appError, isoTimestamp, type Caller, type Plan, type PlanCheckpoint, type PlanCheckpointView, type PlanState } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { rowsOf } from "@intentmesh/db";
import { Sweeper } from "@intentmesh/service";
import type { IntentsContext } from "../kernel/context";
import { plans } from "../db/schema-plans";
import { appendToLog, lockIntentRow, type NewEvent } from "../kernel/event-log";
import { advancePlan } from "./effects";
import { awaitsApproval, checkpointDueAt } from "./follow";
import { checkpointsOf, planEvent, readPlan, stateEvent, tasksOfPlan, toPlan, updatePlanRow, type PlanRow } from "./statements";

/**
 * Checkpoint decisions (RFC 0012 2.3, docs/plans.md): approve (the plan resumes once no
 * checkpoint awaits approval, and follows its tasks again), reject (the plan fails), and the
 * timeout of a checkpoint awaiting approval (on_timeout: escalate, auto_approve, fail), each in
 * one transaction under the intent's lock with its events.
 */

type Decision = { kind: "approve"; by: string; automatic: boolean } | { kind: "reject"; by: string; reason: string | null } | { kind: "timeout" };

/** Applies a decision to one checkpoint of a paused plan; answers the plan row after it and the events. */
async function decide(tx: Tx, plan: PlanRow, checkpointId: string, decision: Decision, now: Date): Promise<{ row: PlanRow; events: NewEvent[] }> {
  const at = isoTimestamp(now);
  const checkpoints = plan.checkpoints.map((cp) => ({ ...cp }));
  const cp = checkpoints.find((c) => c.id === checkpointId)!;
  const action = decision.kind === "timeout" ? cp.on_timeout : decision.kind;
  const events: ((row: PlanRow) => NewEvent)[] = [];
  const base = (row: PlanRow) => ({ plan_id: row.id, state: row.state as PlanState, version: row.version, checkpoint_id: cp.id! });
  if (decision.kind === "timeout") events.push((row) => planEvent("checkpointTimedOut", "system", { ...base(row), on_timeout: cp.on_timeout }));
  let to: PlanState | null = null;
  if (action === "approve" || action === "auto_approve") {
    const by = decision.kind === "approve" ? decision.by : "system";
    Object.assign(cp, { status: "approved", approved_by: by, approved_at: at });
    events.push((row) => planEvent("checkpointApproved", by, { ...base(row), approved_by: by, automatic: decision.kind !== "approve" }));
    if (!checkpoints.some(awaitsApproval)) to = "active";
  } else if (action === "reject" || action === "fail") {
    const by = decision.kind === "reject" ? decision.by : "system";
    const reason = decision.kind === "reject" ? decision.reason : "timeout";
    Object.assign(cp, decision.kind === "reject" ? { status: "rejected", rejected_by: by, reason } : { status: "timed_out", reason });
    if (decision.kind === "reject") events.push((row) => planEvent("checkpointRejected", by, { ...base(row), rejected_by: by, reason }));
    to = "failed";
  } else {
    // escalate: the plan stays paused, the checkpoint still awaits approval but is due no more.
    Object.assign(cp, { status: "escalated" });
  }
  const row = await updatePlanRow(tx, plan, { checkpoints, checkpointDueAt: checkpointDueAt(checkpoints), ...(to ? { state: to } : {}), ...(to === "active" ? { activatedAt: now } : {}) }, now);
  const out = events.map((e) => e(row));
  const actor = decision.kind === "timeout" ? "system" : decision.by;
  if (to === "failed") out.push(await stateEvent(tx, row, "paused", "failed", actor, { reason: `checkpoint_${cp.status}`, taskId: null, error: `checkpoint ${cp.id} ${cp.status === "rejected" ? "was rejected" : "timed out"}${cp.reason && cp.reason !== "timeout" ? `: ${cp.reason}` : ""}` }, now));
  if (to === "active") {
    out.push(await stateEvent(tx, row, "paused", "active", actor, { reason: "checkpoint_approved", taskId: null, error: null }, now));
    const followed = await advancePlan(tx, row, null, now);
    return { row: followed.row, events: [...out, ...followed.events] };
  }
  return { row, events: out };
}

/** The checkpoint of the plan, or 404 PLAN_CHECKPOINT_NOT_FOUND; 409 CHECKPOINT_NOT_AWAITING unless it awaits approval on a paused plan. */
function awaitingCheckpoint(plan: PlanRow, checkpointId: string): PlanCheckpoint {
  const cp = plan.checkpoints.find((c) => c.id === checkpointId);
  if (!cp) throw appError("PLAN_CHECKPOINT_NOT_FOUND", `plan ${plan.id} has no checkpoint ${checkpointId}`, { plan_id: plan.id, checkpoint_id: checkpointId });
  if (!awaitsApproval(cp) || plan.state !== "paused") {
    throw appError("CHECKPOINT_NOT_AWAITING", `checkpoint ${checkpointId} of plan ${plan.id} is ${cp.status} and the plan ${plan.state}; only a reached checkpoint of a paused plan is approved or rejected`, {
      plan_id: plan.id,
      checkpoint_id: checkpointId,
      status: cp.status,
      plan_state: plan.state,
    });
  }
  return cp;
}

/** A checkpoint naming approvers is decided by one of them (or an admin key); one naming none by any caller the route admits. */
function assertApprover(cp: PlanCheckpoint, caller: Caller): void {
  if (!cp.approvers.length || cp.approvers.includes(caller.actor) || caller.roles.includes("admin")) return;
  throw appError("FORBIDDEN", `checkpoint ${cp.id} is decided by ${cp.approvers.join(", ")}; ${caller.actor} is not one of them`, { checkpoint_id: cp.id, approvers: cp.approvers });
}

/** POST /plans/{id}/checkpoints/{cp}/approve and /reject. */
export async function decideCheckpoint(ctx: IntentsContext, planId: string, checkpointId: string, decision: { kind: "approve" } | { kind: "reject"; reason: string | null }, caller: Caller): Promise<Plan> {
  const now = ctx.clock.now();
  const before = await readPlan(ctx.db, planId);
  const row = await ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, before.intentId, null);
    const plan = await readPlan(tx, planId);
    const cp = awaitingCheckpoint(plan, checkpointId);
    assertApprover(cp, caller);
    const done = await decide(tx, plan, checkpointId, decision.kind === "approve" ? { kind: "approve", by: caller.actor, automatic: false } : { kind: "reject", by: caller.actor, reason: decision.reason }, now);
    await appendToLog(tx, plan.intentId, done.events, now);
    return done.row;
  });
  ctx.published();
  return toPlan(row, await tasksOfPlan(ctx.db, row));
}

/** GET /plans/{id}/checkpoints: the checkpoints with their status, in plan order. */
export async function listCheckpoints(ctx: IntentsContext, planId: string): Promise<PlanCheckpointView[]> {
  return checkpointsOf(await readPlan(ctx.db, planId));
}

/**
 * Applies on_timeout to checkpoints whose timeout_hours have passed (plans.checkpoint_due_at <=
 * now, a partial index). Safe with several replicas: one sweep per database at a time (advisory
 * lock); each plan is handled in its own transaction under its intent's lock (the order every
 * request takes), re-read there, so a decision that came first wins. Time from the injected clock.
 */
export class PlanCheckpointSweeper extends Sweeper {
  constructor(
    private readonly ctx: IntentsContext,
    intervalMs = 1000,
    private readonly batchSize = 200,
  ) {
    super(intervalMs, ctx.logger, "plan checkpoint sweep");
  }

  /** One pass; returns how many checkpoints timed out. Tests call it directly with a manual clock. */
  async sweep(): Promise<number> {
    const now = this.ctx.clock.now();
    return this.ctx.db.transaction(async (outer) => {
      const [lock] = rowsOf<{ locked: boolean }>(await outer.execute(sql`select pg_try_advisory_xact_lock(hashtext('im-intents-plan-checkpoint-sweeper')) as locked`));
      if (!lock?.locked) return 0;
      const due = await outer
        .select({ id: plans.id, intentId: plans.intentId })
        .from(plans)
        .where(and(isNotNull(plans.checkpointDueAt), lte(plans.checkpointDueAt, now)))
        .orderBy(asc(plans.checkpointDueAt))
        .limit(this.batchSize);
      let total = 0;
      for (const { id, intentId } of due) {
        total += await this.ctx.db.transaction(async (tx) => {
          await lockIntentRow(tx, intentId, null);
          let plan = await readPlan(tx, id);
          const events: NewEvent[] = [];
          let count = 0;
          for (const cp of plan.checkpoints) {
            if (cp.status !== "reached" || !cp.due_at || new Date(cp.due_at) > now || plan.state !== "paused") continue;
            const done = await decide(tx, plan, cp.id!, { kind: "timeout" }, now);
            plan = done.row;
            events.push(...done.events);
            count += 1;
          }
          if (plan.checkpointDueAt && plan.checkpointDueAt <= now && !count) {
            // Nothing due any more (decided meanwhile, or the plan moved on): clear the marker.
            await updatePlanRow(tx, plan, { checkpointDueAt: checkpointDueAt(plan.state === "paused" ? plan.checkpoints : []) }, now);
          }
          if (events.length) await appendToLog(tx, intentId, events, now);
          return count;
        });
      }
      if (total) this.ctx.published();
      return total;
    });
  }
}
