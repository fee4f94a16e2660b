import { appError } from "@intentmesh/contracts";
import { AppError, BUDGET_EXCEEDED_REASON, type Budget, type Caller } from "@intentmesh/contracts";

/**
 * Budget rules (spec 2.6). Spend is counted in cents and kept exact: Postgres sums it as
 * `numeric` and hands it over as a decimal string, which is compared here without going
 * through a float, so 100.0000000001 cents is over a limit of 100 and 100.0 is not.
 *
 * When a cost is recorded the same rules run inside the recording statement (see
 * costs/statements.ts): a threshold is crossed when spend goes from below
 * `limit * percent / 100` to at least it; a limit is exceeded when spend goes from at most the
 * limit to above it, or when one record alone is above max_per_call_cents.
 */

export type BudgetRule = "max_total_cents" | "max_per_agent_cents" | "max_per_call_cents";

/** Spend of an intent as the totals keep it: decimal strings of cents. */
export interface Spend {
  total_cents: string;
  /** The largest spend of one agent; null when nobody recorded anything. */
  max_agent_cents: string | null;
  /** The largest cents value of one record; null when no record stated one. */
  max_call_cents: string | null;
}

export interface BudgetViolation {
  rule: BudgetRule;
  limit_cents: number;
  spent_cents: number;
}

const LIMIT_FIELDS = ["max_total_cents", "max_per_agent_cents", "max_per_call_cents", "alert_threshold_percent"] as const;

/**
 * The budget of an intent's constraints, leniently: intents created before budgets were checked
 * may hold anything there, and a field that is not a non-negative number is ignored rather than
 * failing every cost record.
 */
export function readBudget(constraints: Record<string, unknown> | null | undefined): Budget | null {
  const raw = constraints?.budget;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return null;
  const budget: Budget = {};
  for (const field of LIMIT_FIELDS) {
    const value = (raw as Record<string, unknown>)[field];
    if (typeof value === "number" && Number.isFinite(value) && value >= 0) budget[field] = value;
  }
  return budget;
}

/**
 * Compares a non-negative decimal string (as Postgres prints `numeric`: no exponent) with a
 * non-negative integer, exactly. Returns -1, 0 or 1.
 */
export function compareCents(decimal: string, integer: number): -1 | 0 | 1 {
  const match = /^(\d+)(?:\.(\d*))?$/.exec(decimal.trim());
  if (!match) throw new Error(`not a non-negative decimal: ${decimal}`);
  const whole = BigInt(match[1]!);
  const limit = BigInt(integer);
  if (whole !== limit) return whole > limit ? 1 : -1;
  return /[1-9]/.test(match[2] ?? "") ? 1 : 0;
}

const over = (spent: string | null, limit: number | undefined) => spent !== null && limit !== undefined && compareCents(spent, limit) > 0;

/**
 * The first limit the spend so far is over, or null when the budget covers it: the total, the
 * spend of every agent and every single record are within their limits.
 */
export function budgetViolation(budget: Budget | null, spend: Spend): BudgetViolation | null {
  if (!budget) return null;
  const checks: [BudgetRule, string | null][] = [
    ["max_per_call_cents", spend.max_call_cents],
    ["max_total_cents", spend.total_cents],
    ["max_per_agent_cents", spend.max_agent_cents],
  ];
  for (const [rule, spent] of checks) {
    const limit = budget[rule];
    if (over(spent, limit)) return { rule, limit_cents: limit!, spent_cents: Number(spent) };
  }
  return null;
}

/** The intent is blocked because its budget was exceeded (not blocked by hand). */
export const isBudgetBlocked = (intent: { status: string; blocked_reason?: string | null | undefined }) =>
  intent.status === "blocked" && intent.blocked_reason === BUDGET_EXCEEDED_REASON;

/** Callers whose only role is agent: the ones a budget block stops. Operators, coordinators and admins go on. */
export const isAgentOnly = (caller: Caller) => caller.roles.length > 0 && caller.roles.every((role) => role === "agent");

export function budgetExceededError(intentId: string, action: string): AppError {
  return appError("BUDGET_EXCEEDED", `intent ${intentId} is blocked because its budget was exceeded, so agents may not ${action}; an operator must raise the budget (PUT /intents/${intentId}/budget) or return the intent to active`,
    { intent_id: intentId, reason: BUDGET_EXCEEDED_REASON, action },
  );
}

/**
 * Refuses agents work on an intent its budget blocked: lease acquisition, state writes, and
 * moving it back to active (only an operator lifts the block).
 */
export function assertAgentMayWork(intentId: string, intent: { status: string; blocked_reason?: string | null | undefined }, caller: Caller, action: string): void {
  if (isBudgetBlocked(intent) && isAgentOnly(caller)) throw budgetExceededError(intentId, action);
}
