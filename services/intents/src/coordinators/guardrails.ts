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
  // Scope (RFC-0013 3.2, 3.4), on the tasks the holder creates (judgeTaskCreation).
  max_tasks_per_plan?: number;
  max_concurrent_tasks?: number;
  max_delegation_depth?: number;
  allowed_capabilities?: string[];
  require_human_for_capabilities?: string[];
  /** RFC-0013 3.1: what a refusal also starts (onExceedActions). */
  on_exceed?: string;
  // Temporal and review timers (RFC-0013 3.3, 3.4), run by the intents service (stall sweeper, failure count).
  require_progress_every_minutes?: number;
  auto_escalate_after_failures?: number;
  max_task_wait_hours?: number;
  checkpoint_timeout_hours?: number;
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
  attempted_value: number | boolean | string[];
  limit: number | boolean | string[];
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
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const strings = (value: unknown): string[] | undefined => (Array.isArray(value) && value.every((v) => typeof v === "string") ? (value as string[]) : undefined);

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
    max_tasks_per_plan: num(merged.max_tasks_per_plan),
    max_concurrent_tasks: num(merged.max_concurrent_tasks),
    max_delegation_depth: num(merged.max_delegation_depth),
    allowed_capabilities: strings(merged.allowed_capabilities),
    require_human_for_capabilities: strings(merged.require_human_for_capabilities),
    on_exceed: str(merged.on_exceed),
    require_progress_every_minutes: num(merged.require_progress_every_minutes),
    auto_escalate_after_failures: num(merged.auto_escalate_after_failures),
    max_task_wait_hours: num(merged.max_task_wait_hours),
    checkpoint_timeout_hours: num(merged.checkpoint_timeout_hours),
  };
  return Object.fromEntries(Object.entries(g).filter(([, v]) => v !== undefined)) as Guardrails;
}

/** Whether a decision of this type needs a granted plan review under these guardrails. */
export function needsReview(g: Guardrails, decisionType: string): boolean {
  return (decisionType === "plan_created" && g.requires_plan_review === true) || (decisionType === "plan_modified" && g.requires_replan_review === true);
}

/**
 * RFC-0013 3.4 on the holder's own plan acts (not its decision records): under
 * requires_plan_review a plan of the coordinator starts only after review, so the holder may
 * create plans as drafts and its supervisor activates them (POST /plans/{id}/approve); under
 * requires_replan_review the holder may not change the tasks, conditions or checkpoints of an
 * active plan (the supervisor may: that change is an override). Null when the act is allowed.
 */
export function judgePlanAct(g: Guardrails, act: "activate" | "replan"): GuardrailBreach | null {
  if (act === "activate" && g.requires_plan_review === true) {
    return {
      guardrail: "requires_plan_review",
      attempted_value: true,
      limit: true,
      message: "the coordinator's plans start only after review: create the plan as a draft and have its supervisor approve it (POST /plans/{id}/approve)",
    };
  }
  if (act === "replan" && g.requires_replan_review === true) {
    return {
      guardrail: "requires_replan_review",
      attempted_value: true,
      limit: true,
      message: "the coordinator's active plans change only after review: its supervisor changes the plan, or approves a new draft",
    };
  }
  return null;
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

/** What the holder's act would add: tasks created directly (POST /tasks) or in a plan (POST /plans with steps or tasks). */
export interface TaskCreationFacts {
  /** Tasks the plan they join will hold afterwards (null: they join no plan). */
  planTasksAfter: number | null;
  /** The intent's tasks not ended (pending, ready, claimed, running, blocked) afterwards. */
  openTasksAfter: number;
  /** The deepest sub-task nesting the act creates: 0 for a task without parent_task_id, its parent's depth + 1 otherwise. */
  depth: number;
  /** Every capability the new tasks require. */
  capabilities: string[];
}

/**
 * RFC-0013 3.2 and 3.4 on the tasks the lease holder creates on its intent, checked in this
 * order: capabilities outside allowed_capabilities, capabilities that need a human
 * (require_human_for_capabilities: the coordinator may not route them, a human key creates
 * those tasks), delegation depth (sub-task nesting), tasks per plan, concurrent (open) tasks.
 */
export function judgeTaskCreation(g: Guardrails, facts: TaskCreationFacts): GuardrailBreach | null {
  const capabilities = [...new Set(facts.capabilities)].sort();
  if (g.allowed_capabilities) {
    const allowed = new Set(g.allowed_capabilities);
    const outside = capabilities.filter((c) => !allowed.has(c));
    if (outside.length) {
      return { guardrail: "allowed_capabilities", attempted_value: outside, limit: g.allowed_capabilities, message: `capabilities ${outside.join(", ")} are outside the coordinator's allowed capabilities` };
    }
  }
  if (g.require_human_for_capabilities) {
    const human = new Set(g.require_human_for_capabilities);
    const needHuman = capabilities.filter((c) => human.has(c));
    if (needHuman.length) {
      return {
        guardrail: "require_human_for_capabilities",
        attempted_value: needHuman,
        limit: g.require_human_for_capabilities,
        message: `capabilities ${needHuman.join(", ")} are routed by a human, not by the coordinator`,
      };
    }
  }
  if (g.max_delegation_depth !== undefined && facts.depth > g.max_delegation_depth) {
    return { guardrail: "max_delegation_depth", attempted_value: facts.depth, limit: g.max_delegation_depth, message: `sub-task depth ${facts.depth} exceeds the limit of ${g.max_delegation_depth}` };
  }
  if (g.max_tasks_per_plan !== undefined && facts.planTasksAfter !== null && facts.planTasksAfter > g.max_tasks_per_plan) {
    return { guardrail: "max_tasks_per_plan", attempted_value: facts.planTasksAfter, limit: g.max_tasks_per_plan, message: `the plan would hold ${facts.planTasksAfter} tasks, the limit is ${g.max_tasks_per_plan}` };
  }
  if (g.max_concurrent_tasks !== undefined && facts.openTasksAfter > g.max_concurrent_tasks) {
    return {
      guardrail: "max_concurrent_tasks",
      attempted_value: facts.openTasksAfter,
      limit: g.max_concurrent_tasks,
      message: `the intent would have ${facts.openTasksAfter} open tasks, the limit is ${g.max_concurrent_tasks}`,
    };
  }
  return null;
}

/** What a refusal starts: pause the lease, escalate to a human through governance. notify (and no on_exceed) only logs the violation. */
export function onExceedActions(g: Guardrails): { pause: boolean; escalate: boolean } {
  switch (g.on_exceed) {
    case "pause":
      return { pause: true, escalate: false };
    case "escalate":
      return { pause: false, escalate: true };
    case "pause_and_escalate":
      return { pause: true, escalate: true };
    default:
      return { pause: false, escalate: false };
  }
}

/**
 * RFC-0013 3.3 require_progress_every_minutes: whether the intent has gone the window without
 * progress (its last event other than coordinator.stalled, or the lease's grant if later) and this
 * stall has not been reported yet (one coordinator.stalled per stall: a new one only after new
 * progress and another full window).
 */
export function stallDue(g: Guardrails, lastProgressAt: Date, stallReportedAt: Date | null, now: Date): boolean {
  if (g.require_progress_every_minutes === undefined) return false;
  if (stallReportedAt && stallReportedAt.getTime() >= lastProgressAt.getTime()) return false;
  return now.getTime() - lastProgressAt.getTime() >= g.require_progress_every_minutes * 60_000;
}

/**
 * RFC-0013 3.4 auto_escalate_after_failures: the intent's consecutive task failures after a task
 * ends (a completed task ends the streak), and whether this failure is the one that escalates
 * (exactly when the streak reaches the limit: once per streak).
 */
export function failureStreak(g: Guardrails, before: number, ended: "failed" | "completed"): { streak: number; escalate: boolean } {
  if (ended === "completed") return { streak: 0, escalate: false };
  const streak = before + 1;
  return { streak, escalate: g.auto_escalate_after_failures !== undefined && streak === g.auto_escalate_after_failures };
}

/** The temporal guardrails on waits (RFC-0013 3.3), each reported once per wait by the stall sweeper. */
export const WAIT_GUARDRAILS = ["max_task_wait_hours", "checkpoint_timeout_hours"] as const;
export type WaitGuardrail = (typeof WAIT_GUARDRAILS)[number];

/**
 * max_task_wait_hours (a ready task no agent has claimed, waiting since its last change) and
 * checkpoint_timeout_hours (a plan checkpoint awaiting its decision, since it was reached): whether
 * the wait that began at `since` is over the lease's limit at `now`. No limit, no breach.
 */
export function waitExceeded(g: Guardrails, guardrail: WaitGuardrail, since: Date, now: Date): boolean {
  const hours = g[guardrail];
  if (hours === undefined) return false;
  return now.getTime() - since.getTime() >= hours * 3_600_000;
}
