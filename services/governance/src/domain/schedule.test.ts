import { describe, expect, it } from "vitest";
import { attemptWindowSeconds, dueStep, nextDueAt } from "./schedule";

const at = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000);
const record = (policy: any, totalSeconds: number | null) => ({
  suspended_at: at(0).toISOString(),
  expires_at: totalSeconds === null ? null : at(totalSeconds).toISOString(),
  retry_policy: policy,
});

describe("suspension schedule", () => {
  it("windows: fixed, linear, exponential", () => {
    expect([1, 2, 3].map((k) => attemptWindowSeconds({ interval_seconds: 10, strategy: "fixed" }, k))).toEqual([10, 10, 10]);
    expect([1, 2, 3].map((k) => attemptWindowSeconds({ interval_seconds: 10, strategy: "linear" }, k))).toEqual([10, 20, 30]);
    expect([1, 2, 3].map((k) => attemptWindowSeconds({ interval_seconds: 10, strategy: "exponential" }, k))).toEqual([10, 20, 40]);
  });

  it("without a retry policy the only step is the final one at expires_at; without a deadline nothing is due", () => {
    expect(nextDueAt(record(undefined, 30), 1)).toEqual(at(30));
    expect(dueStep(record(undefined, 30), 1)).toEqual({ kind: "final" });
    expect(nextDueAt(record(undefined, null), 1)).toBeNull();
  });

  it("fixed: renotify at each interval with the escalations of the attempt that passed, final at interval x max_attempts", () => {
    const policy = { max_attempts: 3, interval_seconds: 100, strategy: "fixed", escalation_ladder: [{ after_attempt: 2, channel: "pager", notify: "oncall" }] };
    const r = record(policy, 300);
    expect(nextDueAt(r, 1)).toEqual(at(100));
    expect(dueStep(r, 1)).toEqual({ kind: "renotify", attempt: 2, escalations: [], nextDueAt: at(200) });
    expect(dueStep(r, 2)).toEqual({ kind: "renotify", attempt: 3, escalations: [policy.escalation_ladder[0]], nextDueAt: at(300) });
    expect(dueStep(r, 3)).toEqual({ kind: "final" });
  });

  it("linear and exponential stop re-notifying at the total deadline", () => {
    const linear = record({ max_attempts: 3, interval_seconds: 10, strategy: "linear", escalation_ladder: [] }, 30);
    expect(dueStep(linear, 1)).toMatchObject({ kind: "renotify", attempt: 2, nextDueAt: at(30) });
    expect(dueStep(linear, 2)).toEqual({ kind: "final" });
  });
});
