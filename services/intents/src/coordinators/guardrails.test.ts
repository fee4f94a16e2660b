import { describe, expect, it } from "vitest";
import { failureStreak, judgeDecision, judgePlanAct, judgeTaskCreation, onExceedActions, stallDue, readGuardrails, waitExceeded, type GuardrailFacts, type TaskCreationFacts } from "./guardrails";

const start = new Date("2026-02-07T10:00:00Z");
const facts = (over: Partial<GuardrailFacts> = {}): GuardrailFacts => ({ spentCents: 0, coordinationStartedAt: start, planDecisions: 0, reviewedDecisions: 0, ...over });
const hoursLater = (h: number) => new Date(start.getTime() + h * 3_600_000);

describe("readGuardrails", () => {
  it("reads the RFC's flat keys (1.1) and its sections (3.1 to 3.4); values of the wrong type are not enforced", () => {
    expect(readGuardrails({ max_budget_usd: 50, requires_plan_review: true, max_tasks_per_plan: 20, other: 1 })).toEqual({ max_budget_usd: 50, requires_plan_review: true, max_tasks_per_plan: 20 });
    expect(readGuardrails({ budget: { max_budget_usd: 10, warn_at_percentage: 50 }, temporal: { max_plan_duration_hours: 48 }, scope: { max_plan_versions: 3 }, review: { requires_replan_review: true } })).toEqual({
      max_budget_usd: 10,
      warn_at_percentage: 50,
      max_plan_duration_hours: 48,
      max_plan_versions: 3,
      requires_replan_review: true,
    });
    expect(readGuardrails({ max_budget_usd: "50" })).toEqual({});
    expect(readGuardrails(null)).toEqual({});
  });
});

describe("judgeDecision", () => {
  it("budget: work decisions are refused once the spend reaches max_budget_usd; escalating stays allowed; a warning from warn_at_percentage (default 80)", () => {
    const g = { max_budget_usd: 50 };
    expect(judgeDecision(g, "task_assigned", facts({ spentCents: 3999 }), start)).toEqual({ refused: null, warnings: [], usesReview: false });
    expect(judgeDecision(g, "task_assigned", facts({ spentCents: 4000 }), start)).toEqual({ refused: null, warnings: [{ guardrail: "max_budget_usd", current_value: 40, limit: 50 }], usesReview: false });
    expect(judgeDecision({ ...g, warn_at_percentage: 90 }, "task_assigned", facts({ spentCents: 4000 }), start)).toMatchObject({ warnings: [] });
    expect(judgeDecision(g, "task_assigned", facts({ spentCents: 5000 }), start).refused).toMatchObject({ guardrail: "max_budget_usd", attempted_value: 50, limit: 50 });
    expect(judgeDecision(g, "escalation_initiated", facts({ spentCents: 9000 }), start).refused).toBeNull();
  });

  it("temporal: work decisions are refused from max_plan_duration_hours after coordination began", () => {
    const g = { max_plan_duration_hours: 48 };
    expect(judgeDecision(g, "plan_modified", facts(), hoursLater(47.99)).refused).toBeNull();
    expect(judgeDecision(g, "plan_modified", facts(), hoursLater(48)).refused).toMatchObject({ guardrail: "max_plan_duration_hours", limit: 48 });
    expect(judgeDecision(g, "failure_handled", facts(), hoursLater(100)).refused).toBeNull();
  });

  it("scope: a plan decision beyond max_plan_versions is refused; other decisions are not counted", () => {
    const g = { max_plan_versions: 2 };
    expect(judgeDecision(g, "plan_modified", facts({ planDecisions: 1 }), start).refused).toBeNull();
    expect(judgeDecision(g, "plan_modified", facts({ planDecisions: 2 }), start).refused).toMatchObject({ guardrail: "max_plan_versions", attempted_value: 3, limit: 2 });
    expect(judgeDecision(g, "task_assigned", facts({ planDecisions: 5 }), start).refused).toBeNull();
  });

  it("review: each reviewed plan decision uses one granted plan_review approval", () => {
    const g = { requires_plan_review: true };
    expect(judgeDecision(g, "plan_created", facts({ grantedReviews: 0 }), start).refused).toMatchObject({ guardrail: "requires_plan_review" });
    expect(judgeDecision(g, "plan_created", facts({ grantedReviews: 1 }), start)).toMatchObject({ refused: null, usesReview: true });
    expect(judgeDecision(g, "plan_created", facts({ grantedReviews: 1, reviewedDecisions: 1 }), start).refused).toMatchObject({ guardrail: "requires_plan_review" });
    // Re-plans need their own review only with requires_replan_review.
    expect(judgeDecision(g, "plan_modified", facts(), start)).toMatchObject({ refused: null, usesReview: false });
    expect(judgeDecision({ requires_replan_review: true }, "plan_modified", facts(), start).refused).toMatchObject({ guardrail: "requires_replan_review" });
  });
});

describe("judgePlanAct (RFC-0013 3.4: the holder's own plan acts)", () => {
  it("requires_plan_review refuses activating, requires_replan_review refuses changing an active plan; neither refuses the other act", () => {
    expect(judgePlanAct({ requires_plan_review: true }, "activate")).toMatchObject({ guardrail: "requires_plan_review", attempted_value: true, limit: true });
    expect(judgePlanAct({ requires_plan_review: true }, "replan")).toBeNull();
    expect(judgePlanAct({ requires_replan_review: true }, "replan")).toMatchObject({ guardrail: "requires_replan_review" });
    expect(judgePlanAct({ requires_replan_review: true }, "activate")).toBeNull();
    expect(judgePlanAct({ requires_plan_review: false, requires_replan_review: false }, "activate")).toBeNull();
    expect(judgePlanAct({}, "replan")).toBeNull();
  });
});

describe("judgeTaskCreation (RFC-0013 3.2, 3.4: the tasks the holder creates)", () => {
  const creation = (over: Partial<TaskCreationFacts> = {}): TaskCreationFacts => ({ planTasksAfter: null, openTasksAfter: 1, depth: 0, capabilities: [], ...over });
  it("refuses capabilities outside allowed_capabilities, and those that need a human", () => {
    const g = readGuardrails({ scope: { allowed_capabilities: ["analytics", "reporting"] }, review: { require_human_for_capabilities: ["reporting"] } });
    expect(judgeTaskCreation(g, creation({ capabilities: ["analytics"] }))).toBeNull();
    expect(judgeTaskCreation(g, creation({ capabilities: ["analytics", "payments", "legal"] }))).toMatchObject({ guardrail: "allowed_capabilities", attempted_value: ["legal", "payments"], limit: ["analytics", "reporting"] });
    expect(judgeTaskCreation(g, creation({ capabilities: ["reporting"] }))).toMatchObject({ guardrail: "require_human_for_capabilities", attempted_value: ["reporting"] });
  });
  it("counts sub-task depth, tasks per plan and open tasks against their limits (the limit itself is allowed)", () => {
    const g = readGuardrails({ max_delegation_depth: 2, max_tasks_per_plan: 3, max_concurrent_tasks: 4 });
    expect(judgeTaskCreation(g, creation({ depth: 2, planTasksAfter: 3, openTasksAfter: 4 }))).toBeNull();
    expect(judgeTaskCreation(g, creation({ depth: 3 }))).toMatchObject({ guardrail: "max_delegation_depth", attempted_value: 3, limit: 2 });
    expect(judgeTaskCreation(g, creation({ planTasksAfter: 4 }))).toMatchObject({ guardrail: "max_tasks_per_plan", attempted_value: 4, limit: 3 });
    expect(judgeTaskCreation(g, creation({ planTasksAfter: null, openTasksAfter: 5 }))).toMatchObject({ guardrail: "max_concurrent_tasks", attempted_value: 5, limit: 4 });
    expect(judgeTaskCreation({}, creation({ depth: 50, openTasksAfter: 500, capabilities: ["x"] }))).toBeNull();
  });
});

describe("onExceedActions (RFC-0013 3.1)", () => {
  it("pause, escalate, both, or only the logged violation (notify, or no on_exceed)", () => {
    expect(onExceedActions({ on_exceed: "pause" })).toEqual({ pause: true, escalate: false });
    expect(onExceedActions({ on_exceed: "escalate" })).toEqual({ pause: false, escalate: true });
    expect(onExceedActions({ on_exceed: "pause_and_escalate" })).toEqual({ pause: true, escalate: true });
    expect(onExceedActions({ on_exceed: "notify" })).toEqual({ pause: false, escalate: false });
    expect(onExceedActions({})).toEqual({ pause: false, escalate: false });
  });
});

describe("temporal and failure timers (RFC-0013 3.3, 3.4)", () => {
  const minutes = (m: number) => new Date(start.getTime() + m * 60_000);
  it("stallDue: after a full window without progress, once per stall", () => {
    const g = readGuardrails({ temporal: { require_progress_every_minutes: 30 } });
    expect(stallDue(g, start, null, minutes(29))).toBe(false);
    expect(stallDue(g, start, null, minutes(30))).toBe(true);
    expect(stallDue(g, start, minutes(30), minutes(90))).toBe(false);
    // New progress after the report starts a new window.
    expect(stallDue(g, minutes(40), minutes(30), minutes(69))).toBe(false);
    expect(stallDue(g, minutes(40), minutes(30), minutes(70))).toBe(true);
    expect(stallDue({}, start, null, minutes(1000))).toBe(false);
  });
  it("waitExceeded: max_task_wait_hours and checkpoint_timeout_hours, read flat or under temporal, from the wait's start", () => {
    const g = readGuardrails({ max_task_wait_hours: 4, temporal: { checkpoint_timeout_hours: 24 } });
    expect(g).toEqual({ max_task_wait_hours: 4, checkpoint_timeout_hours: 24 });
    expect(waitExceeded(g, "max_task_wait_hours", start, hoursLater(3.99))).toBe(false);
    expect(waitExceeded(g, "max_task_wait_hours", start, hoursLater(4))).toBe(true);
    expect(waitExceeded(g, "checkpoint_timeout_hours", start, hoursLater(23))).toBe(false);
    expect(waitExceeded(g, "checkpoint_timeout_hours", start, hoursLater(24))).toBe(true);
    expect(waitExceeded({}, "max_task_wait_hours", start, hoursLater(1000))).toBe(false);
    expect(readGuardrails({ max_task_wait_hours: "4" })).toEqual({});
  });
  it("failureStreak: consecutive failures escalate once, when the streak reaches the limit; a completion ends the streak", () => {
    const g = readGuardrails({ review: { auto_escalate_after_failures: 2 } });
    expect(failureStreak(g, 0, "failed")).toEqual({ streak: 1, escalate: false });
    expect(failureStreak(g, 1, "failed")).toEqual({ streak: 2, escalate: true });
    expect(failureStreak(g, 2, "failed")).toEqual({ streak: 3, escalate: false });
    expect(failureStreak(g, 3, "completed")).toEqual({ streak: 0, escalate: false });
    expect(failureStreak({}, 5, "failed")).toEqual({ streak: 6, escalate: false });
  });
});
