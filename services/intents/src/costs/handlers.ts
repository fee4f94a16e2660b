import { appError, costsCommands, type CommandResult, intentEvents } from "@intentmesh/contracts";
import { sql } from "drizzle-orm";
import { enforceGovernance } from "../governance/handlers";
import {
  BUDGET_EXCEEDED_REASON,
  centsOf,
  MAX_COST_AGENTS_PER_INTENT,
  errors,
  type Budget,
  type Caller,
  type CostRecord,
  type Intent,
  type IntentEvent,
  type ListCostsQuery,
  type RecordCostBody,
} from "@intentmesh/contracts";
import { RawJson, newEvent } from "@intentmesh/bus";
import { rowsOf, type Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { recordCostInTransaction, recordCostStatement, selectCostPage, selectSpend, type CheckedBeforeWrite, type NewCost, type RecordedCost } from "./statements";
import { bypassesAcl } from "../acl/rules";
import { INTENT_COLUMNS, rawToIntent, type RawIntent } from "../kernel/statements";
import { appendToLog, missingOrStale, rememberLogHead, type NewEvent } from "../kernel/event-log";
import { budgetViolation, isBudgetBlocked, readBudget } from "./budget";
import { actingAgent } from "@intentmesh/contracts";

/** What recording a cost needs; the spec's fields, with `cents` for amounts in other units. */
export type CostInput = Pick<RecordCostBody, "cost_type" | "amount" | "unit"> & {
  agent_id?: string | undefined;
  provider?: string | null | undefined;
  metadata?: Record<string, unknown> | undefined;
  cents?: number | undefined;
};

function newCost(input: CostInput, caller: Caller): NewCost {
  return {
    agent_id: actingAgent(caller, input.agent_id),
    cost_type: input.cost_type,
    amount: input.amount,
    unit: input.unit,
    provider: input.provider ?? null,
    metadata: input.metadata ?? {},
    cents: centsOf(input),
  };
}

/** 404 for an absent intent; 409 COST_AGENTS_FULL when the record would add an agent past the limit. */
function refuseUnrecorded(recorded: RecordedCost, intentId: string, agentId: string): void {
  if (!recorded.found) throw errors.notFound("intent", intentId);
  if (!recorded.accepted) {
    throw appError("COST_AGENTS_FULL", `intent ${intentId} already has costs from ${MAX_COST_AGENTS_PER_INTENT} agents, the most one intent tracks; record this cost under one of them`,
      { intent_id: intentId, agent_id: agentId, limit: MAX_COST_AGENTS_PER_INTENT },
    );
  }
}

type CostAnswer = CommandResult<typeof costsCommands.record>;
type CostsPage = CommandResult<typeof costsCommands.list>;

/** Runs of the recording statement before giving up on an intent whose policy or ACL keeps changing under it. */
const GATE_ATTEMPTS = 5;

/**
 * POST /intents/{id}/costs. The cost is always recorded (it has been spent already); crossing an
 * alert threshold appends budget_alert, exceeding a limit blocks the intent, both in the same
 * statement as the record (see costs/statements.ts). Answers the record.
 *
 * The access rule (write) and the governance policy are checked here, not by the guard before the
 * handler: the statement reads both with the intent's row and writes only when they are what was
 * checked (its gate). An intent with neither costs one statement; one with a policy or an ACL is
 * answered by the gated statement with what to check, checked as before (ACL first, then
 * enforceGovernance), and the statement runs again, gated on what was checked.
 */
export async function recordCost(ctx: IntentsContext, intentId: string, body: RecordCostBody, caller: Caller): Promise<RawJson<CostAnswer>> {
  const cost = newCost(body, caller);
  const checked: CheckedBeforeWrite = { policy: null, aclChecked: bypassesAcl(caller) };
  for (let attempt = 1; ; attempt++) {
    const recorded = await recordCostStatement(ctx.query, intentId, cost, caller.actor, ctx.clock.now(), checked);
    if (!recorded.gated) {
      refuseUnrecorded(recorded, intentId, cost.agent_id);
      if (recorded.events.length) ctx.published();
      return new RawJson<CostAnswer>(recorded.wire);
    }
    if (attempt >= GATE_ATTEMPTS) throw errors.unavailable(`intent ${intentId} is too busy to record a cost; try again`);
    if (recorded.gated.hasAcl && !checked.aclChecked) {
      await ctx.access.check(costsCommands.record, intentId, caller);
      checked.aclChecked = true;
    }
    await enforceGovernance(ctx, intentId, recorded.gated.policy, { kind: "cost", amount: body.amount }, caller);
    checked.policy = recorded.gated.policy;
  }
}

/**
 * Records a cost inside the caller's transaction, with the same rules as POST /costs (the budget
 * events and a block are written in that transaction too). For other handlers that record a cost
 * along with something else, e.g. a failed attempt. Throws INTENT_NOT_FOUND when the intent does
 * not exist. The events returned are already in the log and the outbox: call ctx.published()
 * after the commit when there are any. `input.agent_id` defaults to the acting agent.
 */
export async function recordCostInTx(
  tx: Tx,
  intentId: string,
  input: CostInput,
  caller: Caller,
  now: Date,
): Promise<{ cost: CostRecord; events: IntentEvent[] }> {
  const cost = newCost(input, caller);
  const recorded = await recordCostInTransaction(tx, intentId, cost, caller.actor, now);
  refuseUnrecorded(recorded, intentId, cost.agent_id);
  return { cost: recorded.record, events: recorded.events };
}

/**
 * GET /intents/{id}/costs: a page of records, oldest first (cursor `after`, `limit`), the summary
 * of ALL records from the running totals, and the budget with whether it blocks the intent.
 */
export async function listCosts(ctx: IntentsContext, intentId: string, query: ListCostsQuery): Promise<RawJson<CostsPage>> {
  const after = query.after === undefined ? 0 : Number(query.after);
  const page = await selectCostPage(ctx.query, intentId, after, query.limit);
  if (page.budget === null) throw errors.notFound("intent", intentId);
  const cursor = String(page.last ?? after);
  return new RawJson<CostsPage>(
    `{"costs":${page.costsJson},"summary":${page.summaryJson},"budget":${page.budget},"next_cursor":"${cursor}","has_more":${page.hasMore}}`,
  );
}

/**
 * PUT /intents/{id}/budget: replaces constraints.budget (`{}` removes every limit). If-Match
 * required; version + 1; intent.budget_updated. The new budget is checked against the spend so
 * far: an intent its budget blocked goes back to active when the new budget covers the spend
 * (total, every agent, every single record); an active intent whose spend the new budget does
 * not cover is blocked. Operators, coordinators and admins only (the route's roles).
 */
export async function setBudget(ctx: IntentsContext, intentId: string, ifMatch: number | null, budget: Budget, caller: Caller): Promise<Intent> {
  if (ifMatch === null) throw errors.preconditionRequired("intent budget");
  const now = ctx.clock.now();
  const intent = await ctx.db.transaction(async (tx) => {
    const [current] = rowsOf<{ status: string; version: number; blocked_reason: string | null; budget: unknown; event_seq: string | number; chain_seq: string | number; chain_head: string | null }>(
      await tx.execute(
        sql`select status, version, blocked_reason, constraints->'budget' as budget, event_seq, chain_seq, chain_head from intents.intents where id = ${intentId} for no key update`,
      ),
    );
    if (!current) throw errors.notFound("intent", intentId);
    rememberLogHead(tx, intentId, { eventSeq: current.event_seq, chainSeq: current.chain_seq, chainHead: current.chain_head });
    if (current.version !== ifMatch) throw await missingOrStale(tx, intentId, ifMatch);
    const version = ifMatch + 1;
    const violation = budgetViolation(readBudget({ budget }), await selectSpend(tx, intentId));
    const previous = current.budget && typeof current.budget === "object" ? (current.budget as Record<string, unknown>) : null;

    let status = current.status;
    let blockedReason = current.blocked_reason;
    const events: NewEvent[] = [newEvent(intentEvents.budgetUpdated, caller.actor, { budget, previous, version })];
    if (isBudgetBlocked(current) && !violation) {
      status = "active";
      blockedReason = null;
      events.push(newEvent(intentEvents.statusChanged, caller.actor, { from: "blocked", to: "active", reason: "budget_raised", version }));
    } else if (violation && current.status === "active") {
      status = "blocked";
      blockedReason = BUDGET_EXCEEDED_REASON;
      events.push(newEvent(intentEvents.statusChanged, caller.actor, { from: "active", to: "blocked", reason: BUDGET_EXCEEDED_REASON, version, budget: { ...violation, agent_id: null, cost_id: null } }));
    } else if (violation && current.status === "blocked") {
      blockedReason = BUDGET_EXCEEDED_REASON;
    }

    const [row] = rowsOf<RawIntent>(
      await tx.execute(sql`
        update intents.intents set
          constraints = jsonb_set(constraints, '{budget}', ${JSON.stringify(budget)}::jsonb),
          status = ${status}, blocked_reason = ${blockedReason}, version = version + 1, updated_at = ${now}
        where id = ${intentId}
        returning ${sql.raw(INTENT_COLUMNS)}`),
    );
    await appendToLog(tx, intentId, events, now);
    return rawToIntent(row!);
  });
  ctx.published();
  return intent;
}
