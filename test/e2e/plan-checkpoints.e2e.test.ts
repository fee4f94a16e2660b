import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import type { BodyOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected } from "../support/e2e-helpers";

/**
 * RFC 0012 2.3 checkpoints and 2.4 conditions, enforced (docs/plans.md): a checkpoint requiring
 * approval pauses its plan when its task is done, the plan's next tasks are refused (409
 * PLAN_PAUSED) until it is approved; reject fails the plan; timeout_hours follow on_timeout on
 * the injected clock. A condition's `when` is evaluated when the tasks it names are done, and a
 * false one skips its task; its task is held until then (409 TASK_CONDITION_PENDING).
 */

let cluster: TestCluster;
const clock = new ManualClock(new Date("2026-05-01T08:00:00.000Z"));
beforeAll(async () => {
  cluster = await startTestCluster({ clock });
});
afterAll(async () => {
  await cluster?.stop();
});

/** The typed client with a key, acting as an agent when one is named. */
const as = (key: "admin" | "coordinator" | "operator", agent?: string) => cluster.sdk(key, agent);
const admin = () => as("admin");
const ok = <T,>(res: { status: number; data: T }) => {
  expect(res.status).toBeLessThan(300);
  return res.data;
};
const claim = (taskId: string) => admin().send("tasksClaim", { task_id: taskId, body: {} });
const start = (taskId: string) => admin().send("tasksStart", { task_id: taskId, body: {} });
const finish = async (taskId: string, output: Record<string, unknown> = {}) => {
  ok(await claim(taskId));
  ok(await start(taskId));
  ok(await admin().send("tasksComplete", { task_id: taskId, body: { output } }));
};
const plan = (id: string) => admin().ops.plansGet({ plan_id: id });
const createPlan = (intentId: string, body: BodyOf<"plansCreateForIntent">) => cluster.sdk("coordinator").send("plansCreateForIntent", { intent_id: intentId, body });
const approve = (planId: string, checkpointId: string, client = admin(), body: BodyOf<"plansCheckpointApprove"> = {}) =>
  client.send("plansCheckpointApprove", { plan_id: planId, checkpoint_id: checkpointId, body });
const reject = (planId: string, checkpointId: string, client: ReturnType<typeof admin>, body: BodyOf<"plansCheckpointReject">) =>
  client.send("plansCheckpointReject", { plan_id: planId, checkpoint_id: checkpointId, body });
/** Task ids by step title. */
const stepIds = (created: { steps: { title: string; task_id: string }[] }): Record<string, string> => Object.fromEntries(created.steps.map((s) => [s.title, s.task_id]));
const eventsOf = async (intentId: string, prefix: string[]) => (await allEvents(cluster, intentId)).filter((e) => prefix.some((p) => e.event_type.startsWith(p)));

type Checkpoint = NonNullable<BodyOf<"plansCreateForIntent">["checkpoints"]>[number];

async function gatedPlan(checkpoint: Partial<Checkpoint> = {}, steps: BodyOf<"plansCreateForIntent">["steps"] = [{ title: "draft" }, { title: "publish", depends_on: ["draft"] }]) {
  const intent = await createIntent(cluster);
  const created = ok(await createPlan(intent.id, { title: "gated", steps, checkpoints: [{ name: "editor review", after_task: "draft", ...checkpoint }] }));
  return { intent, planId: created.id, ids: stepIds(created) };
}

describe("checkpoints (RFC 0012 2.3)", () => {
  it("the task a checkpoint follows completes: the plan pauses in that transaction, its next task is refused until the checkpoint is approved", async () => {
    const { intent, planId, ids } = await gatedPlan({ approvers: ["editor"] }, [{ title: "draft" }, { title: "publish", depends_on: ["draft"] }, { title: "side" }]);
    ok(await claim(ids.side!));
    await finish(ids.draft!);
    const paused = await plan(planId);
    expect(paused).toMatchObject({ state: "paused", checkpoints: [{ id: "cp_1", status: "reached" }], progress: { done: 1, total: 3 } });
    const log = await allEvents(cluster, intent.id);
    const at = log.findIndex((e) => e.event_type === "task.completed" && e.payload.task_id === ids.draft);
    // One commit: the task's completion, its dependent readied, the checkpoint reached, the pause.
    expect(log.slice(at, at + 4).map((e) => e.event_type)).toEqual(["task.completed", "task.unblocked", "plan.checkpoint_reached", "plan.paused"]);
    expect(log[at + 3]!.payload).toMatchObject({ reason: "checkpoint", checkpoint_id: "cp_1", task_id: ids.draft, from: "active" });

    const refused = await expectRejected(claim(ids.publish!), 409, "PLAN_PAUSED");
    expect(refused.details).toMatchObject({ plan_id: planId, checkpoint_id: "cp_1" });
    // A task claimed before the pause does not start either.
    await expectRejected(start(ids.side!), 409, "PLAN_PAUSED");
    // Resuming by PATCH skips no gate.
    const update = (body: BodyOf<"plansUpdate">) => admin().send("plansUpdate", { plan_id: planId, ifMatch: paused.version, body });
    await expectRejected(update({ state: "active" }), 409, "PLAN_AT_CHECKPOINT");
    // Writing the checkpoint's status back does not approve it either.
    const rewritten = ok(await update({ checkpoints: [{ ...paused.checkpoints[0]!, status: "approved", approved_by: "me" }] }));
    expect(rewritten).toMatchObject({ state: "paused", checkpoints: [{ status: "reached" }] });
    expect(await admin().ops.plansCheckpoints({ plan_id: planId })).toEqual(rewritten.checkpoints);

    // Only a named approver (or an admin key) decides: the coordinator acting as someone else is refused.
    await expectRejected(approve(planId, "cp_1", as("coordinator", "intern")), 403, "FORBIDDEN");
    await expectRejected(approve(planId, "cp_9", as("coordinator", "editor")), 404, "PLAN_CHECKPOINT_NOT_FOUND");
    const approved = ok(await approve(planId, "cp_1", as("coordinator", "editor"), { comment: "good" }));
    expect(approved).toMatchObject({ state: "active", checkpoints: [{ status: "approved", approved_by: "editor", approved_at: clock.now().toISOString().replace("Z", "+00:00") }] });
    await expectRejected(approve(planId, "cp_1", as("coordinator", "editor")), 409, "CHECKPOINT_NOT_AWAITING");
    expect((await eventsOf(intent.id, ["plan.checkpoint_approved", "plan.resumed"])).map((e) => [e.event_type, e.actor])).toEqual([
      ["plan.checkpoint_approved", "editor"],
      ["plan.resumed", "editor"],
    ]);
    await finish(ids.publish!);
    ok(await start(ids.side!));
    ok(await admin().send("tasksComplete", { task_id: ids.side!, body: { output: {} } }));
    expect(await plan(planId)).toMatchObject({ state: "completed", progress: { percent_complete: 100 } });
  });

  it("a checkpoint after the last task holds the plan's completion until approved; reject fails the plan", async () => {
    const { intent, planId, ids } = await gatedPlan({ after_task: "publish" });
    await finish(ids.draft!);
    await finish(ids.publish!);
    expect(await plan(planId)).toMatchObject({ state: "paused", progress: { done: 2 } });
    const done = ok(await approve(planId, "cp_1"));
    expect(done.state).toBe("completed");
    expect((await eventsOf(intent.id, ["plan."])).map((e) => e.event_type).slice(-4)).toEqual(["plan.paused", "plan.checkpoint_approved", "plan.resumed", "plan.completed"]);

    const second = await gatedPlan();
    await finish(second.ids.draft!);
    const rejected = ok(await reject(second.planId, "cp_1", as("operator", "ops"), { reason: "tone is wrong" }));
    expect(rejected).toMatchObject({ state: "failed", checkpoints: [{ status: "rejected", rejected_by: "ops", reason: "tone is wrong" }] });
    expect((await eventsOf(second.intent.id, ["plan.checkpoint_rejected", "plan.failed"])).map((e) => [e.event_type, e.payload.reason ?? e.payload.error])).toEqual([
      ["plan.checkpoint_rejected", "tone is wrong"],
      ["plan.failed", "checkpoint cp_1 was rejected: tone is wrong"],
    ]);
  });

  it("requires_approval false: reached and passed, the plan goes on", async () => {
    const { intent, planId, ids } = await gatedPlan({ requires_approval: false });
    await finish(ids.draft!);
    expect(await plan(planId)).toMatchObject({ state: "active", checkpoints: [{ status: "passed" }] });
    expect((await eventsOf(intent.id, ["plan.checkpoint"])).map((e) => e.payload.requires_approval)).toEqual([false]);
    expect((await claim(ids.publish!)).status).toBe(200);
  });

  it("timeout_hours on the injected clock: auto_approve resumes, fail fails, escalate keeps the plan paused and due no more", async () => {
    const sweep = () => cluster.intents.planCheckpointSweeper.sweep();
    const auto = await gatedPlan({ timeout_hours: 1, on_timeout: "auto_approve" });
    const failing = await gatedPlan({ timeout_hours: 2, on_timeout: "fail" });
    const escalating = await gatedPlan({ timeout_hours: 1, on_timeout: "escalate" });
    for (const p of [auto, failing, escalating]) await finish(p.ids.draft!);
    expect((await plan(auto.planId)).checkpoints[0]!.due_at).toBe(new Date(clock.now().getTime() + 3_600_000).toISOString().replace("Z", "+00:00"));
    expect(await sweep()).toBe(0);
    clock.advance(3_600_000);
    expect(await sweep()).toBe(2);
    expect(await plan(auto.planId)).toMatchObject({ state: "active", checkpoints: [{ status: "approved", approved_by: "system" }] });
    expect(await plan(escalating.planId)).toMatchObject({ state: "paused", checkpoints: [{ status: "escalated" }] });
    expect(await plan(failing.planId)).toMatchObject({ state: "paused", checkpoints: [{ status: "reached" }] });
    expect((await eventsOf(auto.intent.id, ["plan.checkpoint_timed_out", "plan.checkpoint_approved"])).map((e) => [e.event_type, e.payload.on_timeout ?? e.payload.automatic])).toEqual([
      ["plan.checkpoint_timed_out", "auto_approve"],
      ["plan.checkpoint_approved", true],
    ]);
    clock.advance(3_600_000);
    expect(await sweep()).toBe(1);
    expect(await plan(failing.planId)).toMatchObject({ state: "failed", checkpoints: [{ status: "timed_out" }] });
    // The escalated checkpoint still awaits a person; nothing is due any more.
    clock.advance(10 * 3_600_000);
    expect(await sweep()).toBe(0);
    expect((await eventsOf(escalating.intent.id, ["plan.checkpoint_timed_out"])).length).toBe(1);
    expect(ok(await approve(escalating.planId, "cp_1")).state).toBe("active");
  });
});

describe("conditions (RFC 0012 2.4)", () => {
  it("evaluated when the task it names completes: false skips the task (task.skipped), true lets it run; held until then", async () => {
    const intent = await createIntent(cluster);
    const created = ok(
      await createPlan(intent.id, {
        title: "audit",
        steps: [{ title: "audit" }, { title: "remediate" }, { title: "report" }, { title: "archive", depends_on: ["remediate"] }],
        conditions: [
          { task_id: "remediate", when: "tasks['audit'].output.issues_found > 0" },
          { task_id: "report", when: "tasks['audit'].output.issues_found > 0 or intent.title == 'never'" },
        ],
      }),
    );
    const ids = stepIds(created);
    const held = await expectRejected(claim(ids.remediate!), 409, "TASK_CONDITION_PENDING");
    expect(held.details).toMatchObject({ plan_id: created.id, condition_id: "cond_1" });
    await finish(ids.audit!, { issues_found: 0 });
    const after = await plan(created.id);
    expect(after.steps.map((s) => [s.title, s.status])).toEqual([
      ["audit", "completed"],
      ["remediate", "skipped"],
      ["report", "skipped"],
      // A skipped dependency counts as done.
      ["archive", "ready"],
    ]);
    expect(after.conditions.map((c) => c.result)).toEqual([false, false]);
    expect(after.progress).toMatchObject({ done: 3, by_status: { skipped: 2 }, percent_complete: 75 });
    const log = await eventsOf(intent.id, ["plan.condition_evaluated", "task.skipped"]);
    expect(log.map((e) => [e.event_type, e.actor, e.payload.task_id])).toEqual([
      ["plan.condition_evaluated", "system", ids.remediate],
      ["plan.condition_evaluated", "system", ids.report],
      ["task.skipped", "system", ids.remediate],
      ["task.skipped", "system", ids.report],
    ]);
    expect(log[2]!.payload.reason).toBe("condition_false");
    await finish(ids.archive!);
    expect((await plan(created.id)).state).toBe("completed");
  });

  it("a true condition leaves its task to run; a bad expression or an unknown task name is refused and writes nothing", async () => {
    const intent = await createIntent(cluster);
    const created = ok(await createPlan(intent.id, { title: "t", steps: [{ title: "check" }, { title: "fix" }], conditions: [{ task_id: "fix", when: "'x' in tasks.check.output.flags" }] }));
    const ids = stepIds(created);
    await finish(ids.check!, { flags: ["x"] });
    expect((await plan(created.id)).conditions[0]!.result).toBe(true);
    expect((await claim(ids.fix!)).status).toBe(200);

    const other = await createIntent(cluster);
    const bad = (conditions: BodyOf<"plansCreateForIntent">["conditions"]) => createPlan(other.id, { title: "t", steps: [{ title: "a" }, { title: "b" }], conditions });
    await expectRejected(bad([{ task_id: "b", when: "require('fs')" }]), 400, "VALIDATION_FAILED");
    await expectRejected(bad([{ task_id: "b", when: "tasks.nope.status == 'completed'" }]), 422, "UNKNOWN_TASK_REFERENCE");
    await expectRejected(bad([{ task_id: "zzz", when: "true" }]), 422, "UNKNOWN_TASK_REFERENCE");
    // Raw on purpose: an `otherwise` the typed body forbids.
    const explode = await cluster.api(`/intents/${other.id}/plans`, { key: "coordinator", body: { title: "t", steps: [{ title: "a" }, { title: "b" }], conditions: [{ task_id: "b", when: "true", otherwise: "explode" }] } });
    expectError(explode, 400, "VALIDATION_FAILED");
    expect(await admin().ops.plansList({ intent_id: other.id })).toEqual([]);
    expect(await admin().ops.tasksList({ intent_id: other.id, query: { offset: 0 } })).toEqual([]);
  });
});
