import { describe, expect, it } from "vitest";
import { routeAdmits, routeById, type Caller, type TaskStatus } from "@intentmesh/contracts";
import { assertMayClaimTask, assertMayMoveTask, assertMayPatchTask } from "./task-access";

/** Creating and cancelling are gated by their routes' roles, the only role gate (the gateway answers 403 FORBIDDEN). */
const assertMayCreateTask = (c: Caller) => {
  if (!routeAdmits(routeById("tasksCreate"), c.roles) || !routeAdmits(routeById("tasksCreateWithIntentId"), c.roles)) throw Object.assign(new Error("forbidden"), { status: 403, code: "FORBIDDEN" });
};
const assertMayCancelTask = (_task: unknown, c: Caller) => {
  if (!routeAdmits(routeById("tasksCancel"), c.roles)) throw Object.assign(new Error("forbidden"), { status: 403, code: "FORBIDDEN" });
};

const caller = (roles: Caller["roles"], actor: string): Caller => ({ principal: actor, roles, actor, agent_id: actor });
const coordinator = caller(["coordinator"], "coord");
const admin = caller(["admin"], "root");
const owner = caller(["agent"], "worker-1");
const other = caller(["agent"], "worker-2");
const operator = caller(["operator"], "ops");
const task = (assignedAgent: string | null, status: TaskStatus = "running", blockedFrom: string | null = null) => ({ id: "t1", assignedAgent, status, blockedFrom });

const forbidden = (fn: () => void) => expect(fn).toThrow(expect.objectContaining({ status: 403, code: "FORBIDDEN" }));

describe("task access", () => {
  it("coordinators and admins create and cancel; agents and operators may not", () => {
    for (const c of [coordinator, admin]) {
      expect(() => assertMayCreateTask(c)).not.toThrow();
      expect(() => assertMayCancelTask(task("worker-1"), c)).not.toThrow();
    }
    for (const c of [owner, operator]) {
      forbidden(() => assertMayCreateTask(c));
      forbidden(() => assertMayCancelTask(task("worker-1"), c));
    }
  });

  it("the assigned agent moves its own task; others may not; coordinators move any", () => {
    expect(() => assertMayMoveTask(task("worker-1"), owner, "complete")).not.toThrow();
    expect(() => assertMayMoveTask(task("worker-1"), coordinator, "complete")).not.toThrow();
    forbidden(() => assertMayMoveTask(task("worker-1"), other, "complete"));
    forbidden(() => assertMayMoveTask(task(null), owner, "complete"));
    forbidden(() => assertMayMoveTask(task("worker-1"), operator, "complete"));
  });

  it("an agent claims an unassigned task or its own, for itself only; operators never", () => {
    expect(() => assertMayClaimTask(task(null, "ready"), owner, "worker-1")).not.toThrow();
    expect(() => assertMayClaimTask(task("worker-1", "ready"), owner, "worker-1")).not.toThrow();
    forbidden(() => assertMayClaimTask(task("worker-2", "ready"), owner, "worker-1"));
    forbidden(() => assertMayClaimTask(task(null, "ready"), owner, "worker-2"));
    forbidden(() => assertMayClaimTask(task(null, "ready"), operator, "ops"));
    expect(() => assertMayClaimTask(task("worker-2", "ready"), coordinator, "worker-2")).not.toThrow();
  });

  it("PATCH: the assigned agent moves to its targets and back from a block; assignment and other targets are for coordinators", () => {
    for (const to of ["completed", "failed", "blocked"] as const) expect(() => assertMayPatchTask(task("worker-1"), owner, { to, assignedAgent: undefined })).not.toThrow();
    expect(() => assertMayPatchTask(task("worker-1", "blocked", "ready"), owner, { to: "ready", assignedAgent: undefined })).not.toThrow();
    forbidden(() => assertMayPatchTask(task("worker-1", "blocked", "running"), owner, { to: "ready", assignedAgent: undefined }));
    for (const to of ["cancelled", "skipped", "ready"] as const) forbidden(() => assertMayPatchTask(task("worker-1"), owner, { to, assignedAgent: undefined }));
    forbidden(() => assertMayPatchTask(task("worker-1"), owner, { to: undefined, assignedAgent: "worker-2" }));
    forbidden(() => assertMayPatchTask(task("worker-1"), other, { to: undefined, assignedAgent: undefined }));
    // Claiming by PATCH: an unassigned ready task, for itself.
    expect(() => assertMayPatchTask(task(null, "ready"), owner, { to: "claimed", assignedAgent: "worker-1" })).not.toThrow();
    forbidden(() => assertMayPatchTask(task(null, "ready"), owner, { to: "claimed", assignedAgent: "worker-2" }));
    expect(() => assertMayPatchTask(task("worker-1"), coordinator, { to: "cancelled", assignedAgent: "worker-9" })).not.toThrow();
  });
});
