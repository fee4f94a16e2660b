import { describe, expect, it } from "vitest";
import type { PlanCheckpoint, PlanCondition, TaskStatus } from "@intentmesh/contracts";
import { checkpointDueAt, followPlan, pendingConditionOf, type FollowInput, type FollowTask } from "./follow";

const NOW = new Date("2026-03-01T10:00:00.000Z");
const t = (id: string, status: TaskStatus, output: unknown = null): FollowTask => ({ id, title: `title-${id}`, status, output });
const cp = (extra: Partial<PlanCheckpoint> = {}): PlanCheckpoint => ({ id: "cp_1", name: "review", after_task: "a", requires_approval: true, approvers: [], on_timeout: "escalate", status: "pending", ...extra });
const cond = (extra: Partial<PlanCondition> = {}): PlanCondition => ({ id: "cond_1", task_id: "b", when: "tasks['a'].output.n > 0", otherwise: "skip", ...extra });

function input(tasks: FollowTask[], extra: { checkpoints?: PlanCheckpoint[]; conditions?: PlanCondition[]; changed?: FollowInput["changed"]; state?: FollowInput["plan"]["state"]; onFailure?: FollowInput["plan"]["onFailure"] } = {}): FollowInput {
  return {
    plan: { id: "p", state: extra.state ?? "active", title: null, metadata: {}, onFailure: extra.onFailure ?? "pause_and_escalate", checkpoints: extra.checkpoints ?? [], conditions: extra.conditions ?? [] },
    tasks,
    intent: { id: "i", status: "active", title: "x", state: {} },
    changed: extra.changed ?? null,
    now: NOW,
  };
}

describe("checkpoints (RFC 0012 2.3)", () => {
  it("a checkpoint requiring approval is reached when its task is done: the plan pauses, due after timeout_hours", () => {
    const out = followPlan(input([t("a", "completed"), t("b", "ready")], { checkpoints: [cp({ timeout_hours: 2 })], changed: { id: "a", status: "completed" } }));
    expect(out.to).toEqual({ state: "paused", reason: "checkpoint", taskId: "a", checkpointId: "cp_1" });
    expect(out.reached).toEqual([{ checkpointId: "cp_1", taskId: "a", requiresApproval: true, dueAt: new Date("2026-03-01T12:00:00.000Z") }]);
    expect(out.checkpoints[0]).toMatchObject({ status: "reached", reached_at: "2026-03-01T10:00:00.000+00:00", due_at: "2026-03-01T12:00:00.000+00:00" });
    expect(checkpointDueAt(out.checkpoints)).toEqual(new Date("2026-03-01T12:00:00.000Z"));
  });

  it("even after the last task: the plan pauses instead of completing", () => {
    const out = followPlan(input([t("a", "completed")], { checkpoints: [cp()] }));
    expect(out.to?.state).toBe("paused");
    expect(checkpointDueAt(out.checkpoints)).toBeNull();
  });

  it("a checkpoint without requires_approval passes; one naming its task by title works; an undone task reaches nothing", () => {
    const passed = followPlan(input([t("a", "completed"), t("b", "ready")], { checkpoints: [cp({ requires_approval: false, after_task: "title-a" })] }));
    expect(passed.to).toBeNull();
    expect(passed.checkpoints[0]!.status).toBe("passed");
    const waiting = followPlan(input([t("a", "running"), t("b", "ready")], { checkpoints: [cp()] }));
    expect(waiting).toMatchObject({ to: null, reached: [] });
  });

  it("a draft or paused plan moves nothing", () => {
    for (const state of ["draft", "paused"] as const) expect(followPlan(input([t("a", "completed")], { checkpoints: [cp()], state })).reached).toEqual([]);
  });
});

describe("conditions (RFC 0012 2.4)", () => {
  it("false once its named tasks are done: its task is skipped; true: left to run", () => {
    const skipped = followPlan(input([t("a", "completed", { n: 0 }), t("b", "ready")], { conditions: [cond()] }));
    expect(skipped.skip).toEqual(["b"]);
    expect(skipped.evaluated).toEqual([{ conditionId: "cond_1", taskId: "b", result: false, skipped: true }]);
    expect(skipped.conditions[0]).toMatchObject({ result: false, evaluated_at: "2026-03-01T10:00:00.000+00:00" });
    // Every task now completed or skipped: the plan completes in the same decision.
    expect(skipped.to?.state).toBe("completed");
    const kept = followPlan(input([t("a", "completed", { n: 2 }), t("b", "ready")], { conditions: [cond()] }));
    expect(kept).toMatchObject({ skip: [], to: null, evaluated: [{ result: true, skipped: false }] });
  });

  it("waits while a named task is not done, and is not re-evaluated once it has a result", () => {
    expect(followPlan(input([t("a", "running"), t("b", "ready")], { conditions: [cond()] })).evaluated).toEqual([]);
    expect(followPlan(input([t("a", "completed", { n: 0 }), t("b", "ready")], { conditions: [cond({ result: true })] })).skip).toEqual([]);
  });

  it("a skip can make another condition evaluable (chains), and a task already started is not skipped", () => {
    const chain = followPlan(input([t("a", "completed", { n: 0 }), t("b", "pending"), t("c", "pending")], { conditions: [cond({ id: "c2", task_id: "c", when: "tasks.b.status == 'completed'" }), cond()] }));
    expect(chain.skip).toEqual(["b", "c"]);
    expect(chain.to?.state).toBe("completed");
    expect(followPlan(input([t("a", "completed", { n: 0 }), t("b", "running")], { conditions: [cond()] })).skip).toEqual([]);
  });

  it("a task whose condition has no result is held (TASK_CONDITION_PENDING)", () => {
    const tasks = [t("a", "running"), t("b", "ready")];
    expect(pendingConditionOf("b", tasks, [cond()])?.id).toBe("cond_1");
    expect(pendingConditionOf("b", tasks, [cond({ task_id: "title-b" })])?.id).toBe("cond_1");
    expect(pendingConditionOf("b", tasks, [cond({ result: true })])).toBeUndefined();
    expect(pendingConditionOf("a", tasks, [cond()])).toBeUndefined();
  });
});

describe("failure, as before", () => {
  it("on_failure follows the task that failed; completion when all done", () => {
    expect(followPlan(input([t("a", "failed"), t("b", "ready")], { changed: { id: "a", status: "failed" }, onFailure: "fail" })).to).toMatchObject({ state: "failed", taskId: "a" });
    expect(followPlan(input([t("a", "failed"), t("b", "ready")], { changed: { id: "a", status: "failed" } })).to).toMatchObject({ state: "paused", reason: "task_failed" });
    expect(followPlan(input([t("a", "failed")], { changed: { id: "a", status: "failed" }, onFailure: "notify" })).to).toBeNull();
  });
});
