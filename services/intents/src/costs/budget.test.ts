import { describe, expect, it } from "vitest";
import { Budget, IntentConstraints, RecordCostBody, centsOf, routeAdmits, routeById, type Caller } from "@intentmesh/contracts";
import { assertAgentMayWork, budgetViolation, compareCents, isAgentOnly, isBudgetBlocked, readBudget } from "./budget";

/** Who may set a budget (and so lift a budget block): the route's roles, the only role gate. */
const mayManageBudget = (c: Caller) => routeAdmits(routeById("costsSetBudget"), c.roles);

const caller = (...roles: Caller["roles"]): Caller => ({ principal: "p", roles, actor: "p", agent_id: null });
const spend = (total: string, maxAgent: string | null = null, maxCall: string | null = null) => ({ total_cents: total, max_agent_cents: maxAgent, max_call_cents: maxCall });

describe("compareCents", () => {
  it.each([
    ["100", 100, 0],
    ["100.0000", 100, 0],
    ["100.", 100, 0],
    ["100.0000000001", 100, 1],
    ["99.9999999999", 100, -1],
    ["0", 0, 0],
    ["0.01", 0, 1],
    ["12345678901234567890", 9007199254740991, 1],
  ] as const)("compares %s with %i exactly", (decimal, integer, expected) => {
    expect(compareCents(decimal, integer)).toBe(expected);
  });

  it("refuses what is not a non-negative decimal", () => {
    expect(() => compareCents("-1", 0)).toThrow();
    expect(() => compareCents("1e3", 0)).toThrow();
  });
});

describe("budgetViolation", () => {
  it("is null without a budget, with an empty one, and at exactly every limit", () => {
    expect(budgetViolation(null, spend("1000"))).toBeNull();
    expect(budgetViolation({}, spend("1000", "1000", "1000"))).toBeNull();
    expect(budgetViolation({ max_total_cents: 100, max_per_agent_cents: 60, max_per_call_cents: 30 }, spend("100", "60", "30"))).toBeNull();
  });

  it("names the limit passed, per call first, then total, then per agent", () => {
    const budget = { max_total_cents: 100, max_per_agent_cents: 60, max_per_call_cents: 30 };
    expect(budgetViolation(budget, spend("100.5", "60", "30"))).toEqual({ rule: "max_total_cents", limit_cents: 100, spent_cents: 100.5 });
    expect(budgetViolation(budget, spend("90", "60.01", "30"))).toEqual({ rule: "max_per_agent_cents", limit_cents: 60, spent_cents: 60.01 });
    expect(budgetViolation(budget, spend("101", "61", "31"))).toEqual({ rule: "max_per_call_cents", limit_cents: 30, spent_cents: 31 });
  });

  it("treats a limit of 0 as no spend allowed, and spend nobody recorded as within it", () => {
    expect(budgetViolation({ max_total_cents: 0, max_per_agent_cents: 0, max_per_call_cents: 0 }, spend("0"))).toBeNull();
    expect(budgetViolation({ max_total_cents: 0 }, spend("0.001"))?.rule).toBe("max_total_cents");
  });
});

describe("readBudget", () => {
  it("reads the budget of constraints and ignores fields that are not non-negative numbers", () => {
    expect(readBudget({})).toBeNull();
    expect(readBudget({ budget: "lots" })).toBeNull();
    expect(readBudget({ budget: [1] })).toBeNull();
    expect(readBudget({ budget: { max_total_cents: 100, max_per_agent_cents: "50", max_per_call_cents: -1, alert_threshold_percent: 80, other: 1 } })).toEqual({
      max_total_cents: 100,
      alert_threshold_percent: 80,
    });
  });
});

describe("who a budget block stops", () => {
  const blocked = { status: "blocked", blocked_reason: "budget_exceeded" };

  it("is a block only when the intent is blocked for its budget", () => {
    expect(isBudgetBlocked(blocked)).toBe(true);
    expect(isBudgetBlocked({ status: "blocked", blocked_reason: null })).toBe(false);
    expect(isBudgetBlocked({ status: "active", blocked_reason: "budget_exceeded" })).toBe(false);
  });

  it("stops callers whose only role is agent, with 403 BUDGET_EXCEEDED", () => {
    expect(() => assertAgentMayWork("i-1", blocked, caller("agent"), "take leases on it")).toThrow(expect.objectContaining({ code: "BUDGET_EXCEEDED", status: 403 }));
    expect(() => assertAgentMayWork("i-1", { status: "blocked", blocked_reason: null }, caller("agent"), "x")).not.toThrow();
    for (const role of ["operator", "coordinator", "admin"] as const) {
      expect(() => assertAgentMayWork("i-1", blocked, caller(role), "x")).not.toThrow();
      expect(() => assertAgentMayWork("i-1", blocked, caller("agent", role), "x")).not.toThrow();
    }
  });

  it("lets operators, coordinators and admins manage budgets, not agents", () => {
    expect(isAgentOnly(caller("agent"))).toBe(true);
    expect(isAgentOnly(caller())).toBe(false);
    expect(mayManageBudget(caller("agent"))).toBe(false);
    expect(mayManageBudget(caller("operator"))).toBe(true);
    expect(mayManageBudget(caller("coordinator"))).toBe(true);
    expect(mayManageBudget(caller("admin"))).toBe(true);
  });
});

describe("contracts", () => {
  it("counts cents only: a cents amount as itself, another unit by its stated cents, else nothing", () => {
    expect(centsOf({ unit: "cents", amount: 12.5 })).toBe(12.5);
    expect(centsOf({ unit: "tokens", amount: 5000 })).toBeNull();
    expect(centsOf({ unit: "tokens", amount: 5000, cents: 3 })).toBe(3);
    expect(centsOf({ unit: "seconds", amount: 2, cents: 0 })).toBe(0);
  });

  it("accepts a cost body of the spec's fields and refuses non-finite, negative and oversized amounts", () => {
    expect(RecordCostBody.parse({ cost_type: "compute", amount: 0, unit: "seconds" })).toEqual({ cost_type: "compute", amount: 0, unit: "seconds", metadata: {} });
    for (const amount of [Infinity, -Infinity, NaN, -0.01, 1e15 + 2]) expect(RecordCostBody.safeParse({ cost_type: "compute", amount, unit: "seconds" }).success).toBe(false);
    expect(RecordCostBody.safeParse({ cost_type: "api_call", amount: 5, unit: "cents", cents: 5 }).success).toBe(true);
    expect(RecordCostBody.safeParse({ cost_type: "api_call", amount: 5, unit: "cents", cents: 4 }).success).toBe(false);
  });

  it("checks constraints.budget and leaves the rest of constraints free", () => {
    expect(IntentConstraints.parse({ region: "eu", budget: { max_total_cents: 5 } })).toEqual({ region: "eu", budget: { max_total_cents: 5 } });
    expect(IntentConstraints.safeParse({ budget: { alert_threshold_percent: 100 } }).success).toBe(true);
    expect(IntentConstraints.safeParse({ budget: { alert_threshold_percent: 0 } }).success).toBe(false);
    expect(IntentConstraints.safeParse({ budget: null }).success).toBe(false);
    expect(Budget.safeParse({ max_total_cents: Number.MAX_SAFE_INTEGER + 1 }).success).toBe(false);
  });
});
