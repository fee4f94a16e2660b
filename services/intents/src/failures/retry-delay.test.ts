import { describe, expect, it } from "vitest";
import { decideAfterFailure, retryDelayMs, type RetryRules } from "./retry-delay";

const policy = (overrides: Partial<RetryRules> = {}): RetryRules => ({
  strategy: "exponential",
  max_retries: 3,
  base_delay_ms: 1000,
  max_delay_ms: 60_000,
  failure_threshold: 4,
  ...overrides,
});

describe("retryDelayMs", () => {
  const delays = (rules: RetryRules, n = 4) => Array.from({ length: n }, (_, i) => retryDelayMs(rules, i + 1));

  it("follows the patterns of spec 2.8 with base 1 s", () => {
    expect(delays(policy({ strategy: "fixed" }), 3)).toEqual([1000, 1000, 1000]);
    expect(delays(policy({ strategy: "exponential" }))).toEqual([1000, 2000, 4000, 8000]);
    expect(delays(policy({ strategy: "linear" }))).toEqual([1000, 2000, 3000, 4000]);
  });

  it("has no delay for strategy none: there is no retry", () => {
    expect(retryDelayMs(policy({ strategy: "none" }), 1)).toBeNull();
  });

  it("caps every delay at max_delay_ms", () => {
    expect(delays(policy({ strategy: "exponential", max_delay_ms: 5000 }))).toEqual([1000, 2000, 4000, 5000]);
    expect(delays(policy({ strategy: "linear", base_delay_ms: 300, max_delay_ms: 700 }))).toEqual([300, 600, 700, 700]);
    expect(retryDelayMs(policy({ strategy: "fixed", base_delay_ms: 500, max_delay_ms: 500 }), 9)).toBe(500);
  });

  it("stays finite for huge attempt numbers", () => {
    expect(retryDelayMs(policy({ strategy: "exponential", max_delay_ms: 604_800_000 }), 1_000_000)).toBe(604_800_000);
    expect(retryDelayMs(policy({ strategy: "exponential", base_delay_ms: 0, max_delay_ms: 0 }), 1_000_000)).toBe(0);
  });
});

describe("decideAfterFailure", () => {
  const decide = (p: RetryRules | null, attemptNumber: number, errorCode = "TIMEOUT", unresolvedFailures = attemptNumber) =>
    decideAfterFailure({ policy: p, attemptNumber, errorCode, unresolvedFailures });

  it("schedules a retry with the policy's delay while retries remain", () => {
    expect(decide(policy(), 1)).toEqual({ retryAllowed: true, delayMs: 1000, handOver: false, reason: null });
    expect(decide(policy(), 3)).toEqual({ retryAllowed: true, delayMs: 4000, handOver: false, reason: null });
  });

  it("exhausts the retries when attempt_number exceeds max_retries (the boundary)", () => {
    expect(decide(policy({ max_retries: 3, failure_threshold: 100 }), 3).retryAllowed).toBe(true);
    expect(decide(policy({ max_retries: 3, failure_threshold: 100 }), 4)).toEqual({ retryAllowed: false, delayMs: null, handOver: true, reason: "retries_exhausted" });
    expect(decide(policy({ max_retries: 0, failure_threshold: 100 }), 1).reason).toBe("retries_exhausted");
  });

  it("hands over when the agent's unresolved failures reach failure_threshold", () => {
    const p = policy({ max_retries: 10, failure_threshold: 2 });
    expect(decide(p, 5, "TIMEOUT", 1).retryAllowed).toBe(true);
    expect(decide(p, 5, "TIMEOUT", 2)).toEqual({ retryAllowed: false, delayMs: null, handOver: true, reason: "failure_threshold" });
  });

  it("never retries under strategy none, and hands over at once", () => {
    expect(decide(policy({ strategy: "none" }), 1)).toEqual({ retryAllowed: false, delayMs: null, handOver: true, reason: "strategy_none" });
  });

  it("never retries PERMISSION_DENIED and hands it over", () => {
    expect(decide(policy(), 1, "PERMISSION_DENIED")).toEqual({ retryAllowed: false, delayMs: null, handOver: true, reason: "not_retryable" });
  });

  it("never retries BUDGET_EXCEEDED and does not hand it over: it needs a human", () => {
    expect(decide(policy(), 1, "BUDGET_EXCEEDED")).toEqual({ retryAllowed: false, delayMs: null, handOver: false, reason: "needs_human" });
  });

  it("treats unknown codes and the retryable ones alike", () => {
    for (const code of ["RATE_LIMIT", "NETWORK_ERROR", "INVALID_OUTPUT", "SOMETHING_ELSE"]) expect(decide(policy(), 2, code).delayMs).toBe(2000);
  });

  it("without a policy schedules nothing and hands nothing over, but still refuses non-retryable codes", () => {
    expect(decide(null, 7)).toEqual({ retryAllowed: true, delayMs: null, handOver: false, reason: null });
    expect(decide(null, 1, "PERMISSION_DENIED")).toEqual({ retryAllowed: false, delayMs: null, handOver: false, reason: "not_retryable" });
    expect(decide(null, 1, "BUDGET_EXCEEDED").retryAllowed).toBe(false);
  });
});
