/**
 * The guardrails of RFC-0013 section 3 that the server enforces on a coordinator's decision
 * records (docs/coordinators.md "Guardrails"): pure rules over what the intents service already
 * knows when a decision is recorded (the intent's counted spend, when its coordination began, its
 * plan decisions so far, the plan reviews granted). The handler gathers the facts under the
 * intent's row lock and writes what the verdict says.
 */

/** The RFC's keys, read flat (section 1.1) or under their section's name (sections 3.1 to 3.4). */
export interface Guardrails {
  max_budget_usd?: number;
  warn_at_percentage?: number;
  max_plan_versions?: number;
  max_plan_duration_hours?: number;
  requires_plan_review?: boolean;
  requires_replan_review?: boolean;
}

export const GUARDRAIL_SECTIONS = ["budget", "scope", "temporal", "review"] as const;

/** RFC-0013 3.1: "when cumulative task costs approach the budget, a warning event is logged". */
export const DEFAULT_WARN_AT_PERCENTAGE = 80;

/** Plan decisions: the ones max_plan_versions counts and review gates. */
export const PLAN_DECISIONS = ["plan_created", "plan_modified"] as const;
/** Decisions that start or change work: refused once the budget is spent or the plan's time is up. */
export const WORK_DECISIONS = new Set(["plan_created", "plan_modified", "task_assigned", "task_delegated", "checkpoint_evaluated"]);

export interface GuardrailFacts {
  /** The intent's spend that counts toward budgets (cost records, in cents). */
  spentCents: number;
  /** When the intent's first coordinator lease was granted (failover does not restart the clock). */
  coordinationStartedAt: Date;
  /** plan_created and plan_modified decisions recorded on the intent. */
  planDecisions: number;
  /** Decisions recorded that used up a granted plan review. */
  reviewedDecisions: number;
  /** Approvals with action plan_review granted on the intent (undefined: not asked). */
  grantedReviews?: number;
}

export interface GuardrailBreach {
  guardrail: keyof Guardrails;
  attempted_value: number | boolean;
  limit: number | boolean;
  message: string;
}

export interface GuardrailWarning {
  guardrail: keyof Guardrails;
  current_value: number;
  limit: number;
}

export type GuardrailVerdict = { refused: GuardrailBreach } | { refused: null; warnings: GuardrailWarning[]; usesReview: boolean };

const num = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined);
const bool = (value: unknown): boolean | undefined => (typeof value === "boolean" ? value : undefined);

/** The enforced keys of a lease's guardrails; a section's object wins over a flat key of the same name. */
export function readGuardrails(stored: Record<string, unknown> | null | undefined): Guardrails {
  if (!stored) return {};
  const merged: Record<string, unknown> = { ...stored };
  for (const section of GUARDRAIL_SECTIONS) {
    const inner = stored[section];
    if (inner && typeof inner === "object" && !Array.isArray(inner)) Object.assign(merged, inner);
  }
  const g: Guardrails = {
    max_budget_usd: num(merged.max_budget_usd),
    warn_at_percentage: num(merged.warn_at_percentage),
    max_plan_versions: num(merged.max_plan_versions),
    max_plan_duration_hours: num(merged.max_plan_duration_hours),
    requires_plan_review: bool(merged.requires_plan_review),
    requires_replan_review: bool(merged.requires_replan_review),
  };
  return Object.fromEntries(Object.entries(g).filter(([, v]) => v !== undefined)) as Guardrails;
}

/** Whether a decision of this type needs a granted plan review under these guardrails. */
export function needsReview(g: Guardrails, decisionType: string): boolean {
  return (decisionType === "plan_created" && g.requires_plan_review === true) || (decisionType === "plan_modified" && g.requires_replan_review === true);
}

/**
 * The verdict on one decision of the lease holder, at `now` (server clock). Refusals, in the
 * order checked: budget spent, plan duration over, plan versions used up, review missing.
 * Warnings: the spend at or above warn_at_percentage of the budget (the handler logs each once
 * per lease).
 */
export function judgeDecision(g: Guardrails, decisionType: string, facts: GuardrailFacts, now: Date): GuardrailVerdict {
  const spentUsd = facts.spentCents / 100;
  const startsWork = WORK_DECISIONS.has(decisionType);
  if (g.max_budget_usd !== undefined && startsWork && spentUsd >= g.max_budget_usd) {
    return {
      refused: { guardrail: "max_budget_usd", attempted_value: spentUsd, limit: g.max_budget_usd, message: `the intent has spent ${spentUsd} USD of its coordinator's budget of ${g.max_budget_usd} USD` },
    };
  }
  if (g.max_plan_duration_hours !== undefined && startsWork) {
    const hours = (now.getTime() - facts.coordinationStartedAt.getTime()) / 3_600_000;
    if (hours >= g.max_plan_duration_hours) {
      return {
        refused: { guardrail: "max_plan_duration_hours", attempted_value: hours, limit: g.max_plan_duration_hours, message: `the intent has been coordinated for ${hours.toFixed(2)} h, its limit is ${g.max_plan_duration_hours} h` },
      };
    }
  }
  const isPlan = (PLAN_DECISIONS as readonly string[]).includes(decisionType);
  if (g.max_plan_versions !== undefined && isPlan && facts.planDecisions + 1 > g.max_plan_versions) {
    return {
      refused: { guardrail: "max_plan_versions", attempted_value: facts.planDecisions + 1, limit: g.max_plan_versions, message: `plan version ${facts.planDecisions + 1} exceeds the limit of ${g.max_plan_versions}` },
    };
  }
  const usesReview = needsReview(g, decisionType);
  if (usesReview && (facts.grantedReviews ?? 0) <= facts.reviewedDecisions) {
    const guardrail = decisionType === "plan_created" ? "requires_plan_review" : "requires_replan_review";
    return {
      refused: { guardrail, attempted_value: false, limit: true, message: `a ${decisionType} decision needs a granted approval with action plan_review first (granted ${facts.grantedReviews ?? 0}, used ${facts.reviewedDecisions})` },
    };
  }
  const warnings: GuardrailWarning[] = [];
  if (g.max_budget_usd !== undefined) {
    const percent = g.warn_at_percentage ?? DEFAULT_WARN_AT_PERCENTAGE;
    if (spentUsd * 100 >= g.max_budget_usd * percent) warnings.push({ guardrail: "max_budget_usd", current_value: spentUsd, limit: g.max_budget_usd });
  }
  return { refused: null, warnings, usesReview };
}
