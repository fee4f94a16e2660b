import { and, count, eq, min, sql } from "drizzle-orm";
import { errors, governanceCommands, intentEventTypes, PLAN_REVIEW_ACTION, type Caller } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { events } from "../db/schema";
import { coordinatorLeases } from "../db/schema-coordinators";
import { costTotals } from "../db/schema-costs";
import type { NewEvent } from "../kernel/event-log";
import { judgeDecision, needsReview, PLAN_DECISIONS, readGuardrails, WORK_DECISIONS, type GuardrailBreach, type GuardrailFacts, type Guardrails } from "./guardrails";
import { refusalEvents } from "./holder-guard";
import { assertNotPaused, type CoordinatorLeaseRow } from "./rules";

/**
 * A coordinator's decision under its lease's guardrails (guardrails.ts): the facts the rules
 * need, gathered from the intents service's own tables (and the governance service's granted
 * plan reviews), and the events the verdict writes. docs/coordinators.md "Guardrails".
 */

/** The action of the approvals that grant a plan review (RFC-0013 3.4 requires_plan_review). */
export { PLAN_REVIEW_ACTION };

export interface DecisionDraft {
  decisionType: string;
  payload: Record<string, unknown>;
}

/**
 * The approvals with action plan_review granted on the intent, asked of the governance service
 * before the transaction (grants only grow, so a count read early is never too high), and only
 * when the holder's guardrails make this decision need one.
 */
export async function grantedReviewsFor(ctx: IntentsContext, intentId: string, decisionType: string, caller: Caller): Promise<number | undefined> {
  const [holder] = await ctx.db.select({ guardrails: coordinatorLeases.guardrails }).from(coordinatorLeases).where(and(eq(coordinatorLeases.intentId, intentId), eq(coordinatorLeases.holds, true)));
  if (!holder || !needsReview(readGuardrails(holder.guardrails), decisionType)) return undefined;
  if (!ctx.client) throw errors.unavailable("the governance service is needed to check plan reviews");
  const reply = await ctx.client.request(governanceCommands.grantedApprovals, caller, { intent_id: intentId, action: PLAN_REVIEW_ACTION });
  return reply.granted;
}

const countDecisions = async (tx: Pick<Tx, "select">, intentId: string, where: ReturnType<typeof sql>) =>
  Number(
    (
      await tx
        .select({ n: count() })
        .from(events)
        .where(and(eq(events.intentId, intentId), eq(events.eventType, intentEventTypes.coordinatorDecision), where))
    )[0]?.n ?? 0,
  );

/** What the decision guardrails count, read in the caller's transaction (also answered by GET /coordinators/{id}/guardrails/status). */
export async function guardrailFacts(tx: Pick<Tx, "select">, lease: Pick<CoordinatorLeaseRow, "intentId" | "grantedAt">): Promise<Omit<GuardrailFacts, "grantedReviews">> {
  const [spent] = await tx.select({ cents: costTotals.cents }).from(costTotals).where(eq(costTotals.intentId, lease.intentId));
  const [started] = await tx.select({ at: min(coordinatorLeases.grantedAt) }).from(coordinatorLeases).where(eq(coordinatorLeases.intentId, lease.intentId));
  return {
    spentCents: Number(spent?.cents ?? 0),
    coordinationStartedAt: started?.at ?? lease.grantedAt,
    planDecisions: await countDecisions(tx, lease.intentId, sql`${events.payload}->>'decision_type' in (${sql.join(PLAN_DECISIONS.map((t) => sql`${t}`), sql`, `)})`),
    reviewedDecisions: await countDecisions(tx, lease.intentId, sql`(${events.payload}->>'plan_review')::boolean is true`),
  };
}

/**
 * The guardrails of the live lease applied to one of its holder's decisions (guardrails.ts), in
 * the decision's transaction under the intent's row lock: either the decision's events (the
 * decision, and a warning the lease has not logged yet), or the breach and its
 * coordinator.guardrail_violation event (RFC-0013 3: "attempts are rejected ... and the attempt
 * is logged").
 */
export async function guardedDecision(
  tx: Tx,
  lease: CoordinatorLeaseRow,
  draft: DecisionDraft,
  grantedReviews: number | undefined,
  now: Date,
): Promise<{ events: NewEvent[]; breach: GuardrailBreach | null }> {
  const decision = (extra: Record<string, unknown> = {}): NewEvent => ({ eventType: intentEventTypes.coordinatorDecision, actor: lease.agentId, payload: { ...draft.payload, ...extra } });
  // A paused coordinator may still escalate, hand off or handle a failure, not start or change work.
  if (WORK_DECISIONS.has(draft.decisionType)) assertNotPaused(lease);
  const g: Guardrails = readGuardrails(lease.guardrails);
  if (Object.keys(g).length === 0) return { events: [decision()], breach: null };
  const facts = { ...(await guardrailFacts(tx, lease)), grantedReviews };
  const verdict = judgeDecision(g, draft.decisionType, facts, now);
  if (verdict.refused) return { events: await refusalEvents(tx, lease, verdict.refused, { decisionType: draft.decisionType, action: "decision" }, now), breach: verdict.refused };
  const logged: NewEvent[] = [decision(verdict.usesReview ? { plan_review: true } : {})];
  for (const warning of verdict.warnings) {
    const [seen] = await tx
      .select({ id: events.id })
      .from(events)
      .where(
        and(
          eq(events.intentId, lease.intentId),
          eq(events.eventType, intentEventTypes.coordinatorGuardrailWarning),
          sql`${events.payload}->>'lease_id' = ${lease.id}`,
          sql`${events.payload}->>'guardrail' = ${warning.guardrail}`,
        ),
      )
      .limit(1);
    if (!seen) logged.push({ eventType: intentEventTypes.coordinatorGuardrailWarning, actor: "system", payload: { lease_id: lease.id, coordinator_id: lease.agentId, ...warning } });
  }
  return { events: logged, breach: null };
}
