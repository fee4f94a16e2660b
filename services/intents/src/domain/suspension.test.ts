import { describe, expect, it } from "vitest";
import { AppError, SuspensionRequest } from "@intentmesh/contracts";
import { assertDeadlineWithinDueBefore, buildSuspensionRecord, suspensionDeadline } from "./suspension";

const at = new Date("2026-11-22T10:00:00.000Z");
const request = (extra: Record<string, unknown> = {}) =>
  SuspensionRequest.parse({ question: "Ship it?", response_type: "confirm", fallback_policy: "fail", ...extra });

describe("suspensionDeadline", () => {
  it("is suspended_at + timeout_seconds without a retry policy", () => {
    expect(suspensionDeadline(request({ timeout_seconds: 600 }), at)?.toISOString()).toBe("2026-11-22T10:10:00.000Z");
  });

  it("is suspended_at + interval_seconds x max_attempts with a retry policy, whatever timeout_seconds says", () => {
    const r = request({ timeout_seconds: 60, retry_policy: { max_attempts: 3, interval_seconds: 300 } });
    expect(suspensionDeadline(r, at)?.toISOString()).toBe("2026-11-22T10:15:00.000Z");
  });

  it("is null when nothing bounds the suspension", () => {
    expect(suspensionDeadline(request(), at)).toBeNull();
  });
});

describe("buildSuspensionRecord", () => {
  it("adds id, suspended_at and expires_at, and takes fallback_policy from the retry policy's final one", () => {
    const r = SuspensionRequest.parse({
      question: "Which vendor?",
      choices: [{ value: "a", label: "A" }],
      retry_policy: { max_attempts: 2, interval_seconds: 60, final_fallback_policy: "complete_with_fallback" },
    });
    const record = buildSuspensionRecord(r, "11111111-1111-4111-8111-111111111111", at);
    expect(record).toMatchObject({
      id: "11111111-1111-4111-8111-111111111111",
      response_type: "choice",
      fallback_policy: "complete_with_fallback",
      suspended_at: "2026-11-22T10:00:00.000+00:00",
      expires_at: "2026-11-22T10:02:00.000+00:00",
    });
  });
});

describe("SuspensionRequest", () => {
  it("needs a fallback policy, and a choice for response_type choice", () => {
    expect(SuspensionRequest.safeParse({ question: "q", response_type: "text" }).success).toBe(false);
    expect(SuspensionRequest.safeParse({ question: "q", fallback_policy: "fail" }).success).toBe(false);
    expect(SuspensionRequest.safeParse({ question: "q", response_type: "text", fallback_policy: "fail" }).success).toBe(true);
  });

  it("refuses a fallback_policy that contradicts retry_policy.final_fallback_policy", () => {
    const parsed = SuspensionRequest.safeParse({
      question: "q",
      response_type: "text",
      fallback_policy: "fail",
      retry_policy: { max_attempts: 1, interval_seconds: 1, final_fallback_policy: "complete_with_fallback" },
    });
    expect(parsed.success).toBe(false);
  });
});

describe("assertDeadlineWithinDueBefore", () => {
  const due = (iso: string, id = "p1") => ({ portfolio_id: id, due_before: new Date(iso) });

  it("accepts a deadline at or before every due_before, and anything when no portfolio has one", () => {
    expect(() => assertDeadlineWithinDueBefore("i", new Date("2026-11-22T11:00:00Z"), [due("2026-11-22T11:00:00Z"), due("2026-12-01T00:00:00Z")])).not.toThrow();
    expect(() => assertDeadlineWithinDueBefore("i", null, [])).not.toThrow();
  });

  it("refuses a deadline past a due_before with 409 naming the earliest portfolio violated", () => {
    let error: unknown;
    try {
      assertDeadlineWithinDueBefore("i", new Date("2026-11-23T00:00:00Z"), [due("2026-11-22T20:00:00Z", "late"), due("2026-11-22T12:00:00Z", "early")]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: "SUSPENSION_PAST_DUE_BEFORE", status: 409, details: { portfolio_id: "early" } });
  });

  it("refuses a suspension without a deadline in a portfolio with a due_before", () => {
    expect(() => assertDeadlineWithinDueBefore("i", null, [due("2027-01-01T00:00:00Z")])).toThrow(/needs a deadline/);
  });
});
