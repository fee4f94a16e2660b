import { describe, expect, it } from "vitest";
import { AppError, TASK_STATUSES, type TaskStatus } from "@intentmesh/contracts";
import { assertDependenciesDone, assertTaskTransition, initialTaskStatus, TASK_TRANSITIONS, unblockTarget, unmetDependencies } from "./task-status";

/** The table written out as the pairs it allows: a change to the table must change this list too. */
const ALLOWED: [TaskStatus, TaskStatus][] = [
  ["pending", "ready"],
  ["pending", "blocked"],
  ["pending", "cancelled"],
  ["pending", "skipped"],
  ["ready", "claimed"],
  ["ready", "blocked"],
  ["ready", "cancelled"],
  ["ready", "skipped"],
  ["claimed", "running"],
  ["claimed", "ready"],
  ["claimed", "blocked"],
  ["claimed", "failed"],
  ["claimed", "cancelled"],
  ["running", "completed"],
  ["running", "failed"],
  ["running", "ready"],
  ["running", "blocked"],
  ["running", "cancelled"],
  ["blocked", "pending"],
  ["blocked", "ready"],
  ["blocked", "claimed"],
  ["blocked", "running"],
  ["blocked", "failed"],
  ["blocked", "cancelled"],
  ["failed", "ready"],
];

const key = (from: TaskStatus, to: TaskStatus) => `${from}>${to}`;
const allowed = new Set(ALLOWED.map(([from, to]) => key(from, to)));

describe("the task transition table", () => {
  it("allows exactly the listed moves", () => {
    const fromTable = Object.entries(TASK_TRANSITIONS).flatMap(([from, targets]) => targets.map((to) => key(from as TaskStatus, to)));
    expect(new Set(fromTable)).toEqual(allowed);
  });

  for (const from of TASK_STATUSES) {
    for (const to of TASK_STATUSES) {
      if (allowed.has(key(from, to))) {
        it(`allows ${from} -> ${to}`, () => expect(() => assertTaskTransition("t", from, to)).not.toThrow());
      } else {
        it(`refuses ${from} -> ${to} with 409 naming the allowed targets`, () => {
          let error: unknown;
          try {
            assertTaskTransition("t", from, to);
          } catch (e) {
            error = e;
          }
          expect(error).toBeInstanceOf(AppError);
          const appError = error as AppError;
          expect(appError.status).toBe(409);
          expect(appError.code).toBe("INVALID_TASK_TRANSITION");
          expect(appError.details).toEqual({ task_id: "t", from, to, allowed: [...TASK_TRANSITIONS[from]] });
          if (TASK_TRANSITIONS[from].length) expect(appError.message).toContain(TASK_TRANSITIONS[from].join(", "));
          else expect(appError.message).toContain("final");
        });
      }
    }
  }

  it("completed, cancelled and skipped are final", () => {
    for (const status of ["completed", "cancelled", "skipped"] as const) expect(TASK_TRANSITIONS[status]).toEqual([]);
  });
});

describe("pending or ready", () => {
  it("is ready without dependencies, or when every dependency is completed or skipped", () => {
    expect(initialTaskStatus([])).toBe("ready");
    expect(initialTaskStatus(["completed", "skipped"])).toBe("ready");
  });
  it("is pending while any dependency is not done", () => {
    for (const status of ["pending", "ready", "claimed", "running", "blocked", "failed", "cancelled"] as const) {
      expect(initialTaskStatus(["completed", status])).toBe("pending");
    }
  });
});

describe("unblocking", () => {
  it("returns to the status it was blocked from", () => {
    for (const status of ["pending", "ready", "claimed", "running"] as const) expect(unblockTarget(status)).toBe(status);
  });
  it("falls back to ready when the origin is unknown or not a target of blocked", () => {
    expect(unblockTarget(null)).toBe("ready");
    expect(unblockTarget("completed")).toBe("ready");
    expect(unblockTarget("blocked")).toBe("ready");
  });
});

describe("dependencies gate claiming (RFC 0012 1.2)", () => {
  it("passes when every dependency is completed or skipped", () => {
    expect(() => assertDependenciesDone("t", [{ id: "a", status: "completed" }, { id: "b", status: "skipped" }])).not.toThrow();
    expect(unmetDependencies([])).toEqual([]);
  });
  it("refuses with TASK_DEPENDENCIES_PENDING naming each unfinished dependency and its status", () => {
    for (const status of ["pending", "ready", "claimed", "running", "blocked", "failed", "cancelled"] as const) {
      let thrown: unknown;
      try {
        assertDependenciesDone("t", [{ id: "a", status: "completed" }, { id: "b", status }]);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toMatchObject({ code: "TASK_DEPENDENCIES_PENDING", details: { task_id: "t", pending_dependencies: [{ task_id: "b", status }] } });
      expect((thrown as Error).message).toContain(`b is ${status}`);
    }
  });
});
