import { describe, expect, it } from "vitest";
import { judgeDecision, readGuardrails, type GuardrailFacts } from "./guardrails";

const start = new Date("2026-02-07T10:00:00Z");
const facts = (over: Partial<GuardrailFacts> = {}): GuardrailFacts => ({ spentCents: 0, coordinationStartedAt: start, planDecisions: 0, reviewedDecisions: 0, ...over });
const hoursLater = (h: number) => new Date(start.getTime() + h * 3_600_000);

describe("readGuardrails", () => {
  it("reads the RFC's flat keys (1.1) and its sections (3.1 to 3.4); values of the wrong type are not enforced", () => {
    expect(readGuardrails({ max_budget_usd: 50, requires_plan_review: true, max_tasks_per_plan: 20 })).toEqual({ max_budget_usd: 50, requires_plan_review: true });
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
