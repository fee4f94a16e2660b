import { describe, expect, it } from "vitest";
import { AppError, SuspensionRequest, activeRecord } from "@intentmesh/contracts";
import { assertDeadlineWithinDueBefore, assertMayAdoptRecord, assertMaySuspend, buildSuspensionRecord, cancelledByAbandon, endedRecord, suspensionDeadline, suspensionToEnd } from "./rules";
import { catchError } from "../../../../test/support/errors";

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

describe("the suspension moves outside table 3.1", () => {
  const record = buildSuspensionRecord(request({ timeout_seconds: 600 }), "5f0c6f55-4a8a-4c50-9d52-7a1bb1f0e0a1", at);
  const waiting = { other: 1, _suspension: record };

  it("suspends only an active intent, naming what it may start from (begin) or what the client may do next (status)", () => {
    expect(catchError(() => assertMaySuspend("i", "active", "begin"))).toBeUndefined();
    expect(catchError(() => assertMaySuspend("i", "blocked", "begin"))).toMatchObject({ code: "INVALID_TRANSITION", status: 409, details: { from: "blocked", to: "suspended_awaiting_input", allowed_from: ["active"] } });
    expect(catchError(() => assertMaySuspend("i", "draft", "status"))).toMatchObject({ code: "INVALID_TRANSITION", status: 409, details: { from: "draft", allowed: [] } });
  });

  it("ends only the waiting suspension of a suspended intent, without echoing its id", () => {
    expect(suspensionToEnd("i", "suspended_awaiting_input", waiting, record.id)).toBe(record);
    expect(catchError(() => suspensionToEnd("i", "active", waiting, record.id))).toMatchObject({ code: "NOT_SUSPENDED", status: 409 });
    const mismatch = catchError(() => suspensionToEnd("i", "suspended_awaiting_input", waiting, "another")) as AppError;
    expect(mismatch).toMatchObject({ code: "SUSPENSION_MISMATCH", status: 409, details: { suspension_id: "another" } });
    expect(JSON.stringify(mismatch.toWire())).not.toContain(record.id);
    expect(catchError(() => suspensionToEnd("i", "suspended_awaiting_input", {}, record.id))).toMatchObject({ code: "SUSPENSION_MISMATCH" });
    // A record already answered is not the waiting one, even under its own id (suspended again through POST /status).
    expect(catchError(() => suspensionToEnd("i", "suspended_awaiting_input", { _suspension: { ...record, resolution: "responded" } }, record.id))).toMatchObject({ code: "SUSPENSION_MISMATCH" });
  });

  it("keeps the response and its responder when answered, the fallback value alone when an expiry continues, nothing when cancelled", () => {
    const answered = endedRecord(record, { resolution: "responded", response: "yes" }, "operator-1", at);
    expect(answered.record).toMatchObject({ id: record.id, resolution: "responded", response: "yes", responded_by: "operator-1", responded_at: "2026-11-22T10:00:00.000+00:00" });
    expect(endedRecord(record, { resolution: "responded", response: 1, responded_by: "alice" }, "operator-1", at).responded.responded_by).toBe("alice");
    const expired = endedRecord(record, { resolution: "expired", response: "fallback" }, "governance", at);
    expect(expired.responded).toEqual({ response: "fallback" });
    expect(expired.record).not.toHaveProperty("responded_by");
    const cancelled = endedRecord(record, { resolution: "cancelled" }, "operator-1", at);
    expect(cancelled.responded).toEqual({});
    expect(cancelled.record).toEqual({ ...record, resolution: "cancelled" });
  });

  it("lets a client set _suspension only on an intent suspended through POST /status that waits for its record", () => {
    expect(catchError(() => assertMayAdoptRecord("i", "suspended_awaiting_input", {}))).toBeUndefined();
    expect(catchError(() => assertMayAdoptRecord("i", "suspended_awaiting_input", { _suspension: { ...record, resolution: "responded" } }))).toBeUndefined();
    expect(catchError(() => assertMayAdoptRecord("i", "active", {}))).toMatchObject({ code: "PATCH_FAILED", status: 400, details: { path: "_suspension" } });
    expect(catchError(() => assertMayAdoptRecord("i", "suspended_awaiting_input", waiting))).toMatchObject({ code: "SUSPENSION_ACTIVE", status: 409 });
  });

  it("cancels the waiting record when a suspended intent is abandoned, and only a suspended one", () => {
    const { state, cancelled } = cancelledByAbandon("i", "suspended_awaiting_input", waiting);
    expect(cancelled).toBe(record);
    expect(state).toEqual({ other: 1, _suspension: { ...record, resolution: "cancelled" } });
    expect(cancelledByAbandon("i", "suspended_awaiting_input", { other: 1 })).toEqual({ state: { other: 1 }, cancelled: undefined });
    expect(catchError(() => cancelledByAbandon("i", "active", waiting))).toMatchObject({ code: "INVALID_TRANSITION", status: 409, details: { from: "active", to: "abandoned" } });
  });

  it("counts as waiting only a record without a resolution", () => {
    expect(activeRecord(waiting)).toBe(record);
    expect(activeRecord({ _suspension: { ...record, resolution: "expired" } })).toBeUndefined();
    expect(activeRecord({})).toBeUndefined();
  });
});
