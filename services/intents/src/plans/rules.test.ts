import { describe, expect, it } from "vitest";
import { AppError, PLAN_STATES, type PlanState, type TaskStatus } from "@intentmesh/contracts";
import {
  assertPlanTransition,
  computeProgress,
  decomposeDescription,
  decompositionTasks,
  PLAN_TRANSITIONS,
  planAfterTaskChange,
  planEventOf,
  resolveSteps,
  type ProgressTask,
} from "./rules";

const thrown = (fn: () => void): AppError => {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error("did not throw");
};

describe("plan states (RFC 0012 2.2)", () => {
  it("allows exactly the table's moves; the final states move nowhere", () => {
    for (const from of PLAN_STATES) {
      for (const to of PLAN_STATES) {
        const allowed = PLAN_TRANSITIONS[from].includes(to);
        const run = () => assertPlanTransition("p", from, to, ["completed"]);
        if (allowed) expect(run).not.toThrow();
        else expect(thrown(run)).toMatchObject({ code: "INVALID_PLAN_TRANSITION", details: { plan_id: "p", from, to } });
      }
    }
    for (const s of ["completed", "failed", "cancelled"] as const) expect(PLAN_TRANSITIONS[s]).toEqual([]);
  });
  it("completes only when every task is completed or skipped", () => {
    expect(() => assertPlanTransition("p", "active", "completed", ["completed", "skipped"])).not.toThrow();
    const err = thrown(() => assertPlanTransition("p", "active", "completed", ["completed", "running"]));
    expect(err).toMatchObject({ code: "INVALID_PLAN_TRANSITION", details: { open_tasks: 1 } });
    expect(err.message).toContain("1 of its 2 tasks");
  });
  it("names the event of each move", () => {
    const cases: [PlanState, PlanState, string][] = [
      ["draft", "active", "activated"],
      ["paused", "active", "resumed"],
      ["active", "paused", "paused"],
      ["active", "completed", "completed"],
      ["paused", "failed", "failed"],
      ["draft", "cancelled", "cancelled"],
    ];
    for (const [from, to, key] of cases) expect(planEventOf(from, to)).toBe(key);
  });
});

const task = (status: TaskStatus, extra: Partial<ProgressTask> = {}): ProgressTask => ({
  id: `t-${Math.random()}`,
  status,
  blockedReason: null,
  suspendedIntentId: null,
  intentId: "i",
  suspendedSince: null,
  expiresAt: null,
  ...extra,
});

describe("progress from task states", () => {
  it("counts every status, done = completed + skipped, percent rounded to 2 places", () => {
    const p = computeProgress([task("completed"), task("skipped"), task("running"), task("pending"), task("pending"), task("failed")]);
    expect(p).toMatchObject({ total: 6, done: 2, percent_complete: 33.33, suspended_tasks: [] });
    expect(p.by_status).toEqual({ pending: 2, ready: 0, claimed: 0, running: 1, blocked: 0, completed: 1, failed: 1, cancelled: 0, skipped: 1 });
  });
  it("an empty plan is 0 percent", () => {
    expect(computeProgress([])).toMatchObject({ total: 0, done: 0, percent_complete: 0 });
  });
  it("suspended_tasks lists the tasks blocked because an intent is suspended, with since and expiry; other blocked tasks are not suspended", () => {
    const suspended = task("blocked", { id: "s", blockedReason: "intent_suspended", suspendedIntentId: "j", suspendedSince: "2026-01-01T00:00:00.000+00:00", expiresAt: "2026-01-01T01:00:00.000+00:00" });
    const p = computeProgress([suspended, task("blocked", { blockedReason: "waiting" })]);
    expect(p.suspended_tasks).toEqual([{ task_id: "s", intent_id: "j", suspended_since: "2026-01-01T00:00:00.000+00:00", expires_at: "2026-01-01T01:00:00.000+00:00" }]);
  });
});

describe("what a task's change does to its plan", () => {
  const active = { state: "active" as const, onFailure: "pause_and_escalate" as const };
  it("an active plan completes when every task is completed or skipped", () => {
    expect(planAfterTaskChange(active, { status: "completed" }, ["completed", "skipped"])).toEqual({ to: "completed", reason: "all_tasks_done" });
    expect(planAfterTaskChange(active, { status: "completed" }, ["completed", "running"])).toBeNull();
  });
  it("a task failed for good: fail fails the plan, pause_and_escalate pauses it, notify leaves it", () => {
    expect(planAfterTaskChange({ ...active, onFailure: "fail" }, { status: "failed" }, ["failed"])).toEqual({ to: "failed", reason: "task_failed" });
    expect(planAfterTaskChange(active, { status: "failed" }, ["failed"])).toEqual({ to: "paused", reason: "task_failed" });
    expect(planAfterTaskChange({ ...active, onFailure: "notify" }, { status: "failed" }, ["failed"])).toBeNull();
  });
  it("a plan that is not active does not move on its own", () => {
    for (const state of ["draft", "paused", "completed", "failed", "cancelled"] as const) {
      expect(planAfterTaskChange({ ...active, state }, { status: "completed" }, ["completed"])).toBeNull();
    }
  });
});

describe("MCP steps into tasks", () => {
  it("depends_on names earlier steps by title, or existing tasks by id", () => {
    const existing = "0b6f3c1e-6a51-4d7e-9a4b-2f1d8c3e5a70";
    const tasks = resolveSteps(
      [
        { title: "draft", depends_on: [existing.toUpperCase()] },
        { title: "review", depends_on: ["draft"] },
        { title: "publish", depends_on: ["draft", "review", "review"] },
      ],
      ["a", "b", "c"],
      new Set([existing]),
    );
    expect(tasks.map((t) => [t.id, t.dependsOn])).toEqual([
      ["a", [existing]],
      ["b", ["a"]],
      ["c", ["a", "b"]],
    ]);
  });
  it("a later step or an unknown name is 422 UNKNOWN_TASK_REFERENCE naming it", () => {
    const err = thrown(() => resolveSteps([{ title: "a", depends_on: ["b"] }, { title: "b", depends_on: ["nope"] }], ["1", "2"], new Set()));
    expect(err).toMatchObject({ code: "UNKNOWN_TASK_REFERENCE", details: { missing: ["b", "nope"] } });
  });
});

describe("decomposing a task description", () => {
  it("list items are subtasks, nested by indentation; the heading is the title", () => {
    const tree = decomposeDescription("Launch the product\n1. Build\n   - backend\n   - frontend\n2. Test\n3. Release", 3);
    expect(tree.title).toBe("Launch the product");
    expect(tree.children.map((c) => [c.title, c.children.map((g) => g.title)])).toEqual([
      ["Build", ["backend", "frontend"]],
      ["Test", []],
      ["Release", []],
    ]);
  });
  it("items deeper than max_depth fold into their ancestor's description", () => {
    const tree = decomposeDescription("- Build\n  - backend\n    - db\n- Test", 1);
    expect(tree.children.map((c) => c.title)).toEqual(["Build", "Test"]);
    expect(tree.children[0]!.children).toEqual([]);
    expect(tree.children[0]!.description).toBe("backend\ndb");
  });
  it("without a list, sentences (and 'then') are the steps; one sentence is the task alone", () => {
    expect(decomposeDescription("Fetch the data. Clean it; then train the model.", 3).children.map((c) => c.title)).toEqual(["Fetch the data", "Clean it", "train the model"]);
    expect(decomposeDescription("Just one thing", 3).children).toEqual([]);
  });
  it("tasks: siblings run in order, a parent waits on its children, children name their parent", () => {
    let n = 0;
    const tasks = decompositionTasks(decomposeDescription("Root\n- A\n  - A1\n  - A2\n- B", 3), () => `id${n++}`);
    const byTitle = Object.fromEntries(tasks.map((t) => [t.title, t]));
    expect(tasks.map((t) => t.title)).toEqual(["Root", "A", "A1", "A2", "B"]);
    expect(byTitle.A1).toMatchObject({ parentTaskId: byTitle.A!.id, dependsOn: [] });
    expect(byTitle.A2).toMatchObject({ parentTaskId: byTitle.A!.id, dependsOn: [byTitle.A1!.id] });
    expect(byTitle.A!.dependsOn).toEqual([byTitle.A1!.id, byTitle.A2!.id]);
    expect(byTitle.B).toMatchObject({ parentTaskId: byTitle.Root!.id, dependsOn: [byTitle.A!.id] });
    expect(byTitle.Root).toMatchObject({ parentTaskId: null, dependsOn: [byTitle.A!.id, byTitle.B!.id] });
  });
});
