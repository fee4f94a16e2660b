import { describe, expect, it } from "vitest";
import { AppError, INTENT_STATUSES, type IntentStatus } from "@intentmesh/contracts";
import { allowedTargets, assertTransition, STATUS_TRANSITIONS, TERMINAL_STATUSES } from "./status";
import { catchError } from "../../../../test/support/errors";

/** Spec table 3.1, the rows whose trigger is "status transition". */
const ALLOWED: ReadonlyArray<readonly [IntentStatus, IntentStatus]> = [
  ["draft", "active"],
  ["draft", "abandoned"],
  ["active", "blocked"],
  ["active", "completed"],
  ["active", "abandoned"],
  ["blocked", "active"],
  ["blocked", "abandoned"],
];

const isAllowed = (from: IntentStatus, to: IntentStatus) => ALLOWED.some(([f, t]) => f === from && t === to);

const ALL_PAIRS = INTENT_STATUSES.flatMap((from) => INTENT_STATUSES.map((to) => [from, to] as const));
const allowedPairs = ALL_PAIRS.filter(([from, to]) => isAllowed(from, to));
const refusedPairs = ALL_PAIRS.filter(([from, to]) => !isAllowed(from, to));


describe("intent status transitions (spec 3.1)", () => {
  it("covers all six statuses, 36 pairs, 7 allowed", () => {
    expect(INTENT_STATUSES).toHaveLength(6);
    expect(ALL_PAIRS).toHaveLength(36);
    expect(allowedPairs).toHaveLength(7);
    expect(refusedPairs).toHaveLength(29);
  });

  it.each(allowedPairs)("allows %s -> %s", (from, to) => {
    expect(() => assertTransition(from, to)).not.toThrow();
    expect(allowedTargets(from)).toContain(to);
  });

  it.each(refusedPairs)("refuses %s -> %s with INVALID_TRANSITION 409", (from, to) => {
    const error = catchError(() => assertTransition(from, to));
    expect(error).toBeInstanceOf(AppError);
    const appError = error as AppError;
    expect(appError.code).toBe("INVALID_TRANSITION");
    expect(appError.status).toBe(409);
    const expectedAllowed = ALLOWED.filter(([f]) => f === from).map(([, t]) => t);
    expect(appError.details).toEqual({ from, to, allowed: expectedAllowed });
    expect(appError.message).toContain(from);
    expect(appError.message).toContain(to);
  });

  it("has no way out of completed, abandoned or suspended_awaiting_input by status transition", () => {
    expect(STATUS_TRANSITIONS.completed).toEqual([]);
    expect(STATUS_TRANSITIONS.abandoned).toEqual([]);
    expect(STATUS_TRANSITIONS.suspended_awaiting_input).toEqual([]);
    expect([...TERMINAL_STATUSES].sort()).toEqual(["abandoned", "completed"]);
  });

  it("does not let a caller mutate the allowed list through the error details", () => {
    const error = catchError(() => assertTransition("draft", "completed")) as AppError;
    (error.details.allowed as IntentStatus[]).push("completed");
    expect(() => assertTransition("draft", "completed")).toThrow(AppError);
    expect(STATUS_TRANSITIONS.draft).toEqual(["active", "abandoned"]);
  });
});
