import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { AppError, intentsCommands, planCommands, streams, taskCommands, type Caller, type IntentEvent, type Plan } from "@intentmesh/contracts";
import { expectExactlyOnce, openFaultHarness, writeThroughFault, type FaultHarness } from "../support/fault-harness";
import { readStream } from "../support/service-process";

// Fault test (issue 27): the intents service is killed (SIGKILL) while 6 workers drive the tasks
// of 4 active plans to completion (claim, start, complete), each plan of 20 tasks with a checkpoint half-way
// (approved when a worker meets PLAN_PAUSED) and a condition that skips one task. Afterwards
// every plan's progress equals its tasks' states, every plan completed exactly once (in the
// transaction of its last task), each checkpoint was reached and approved once, each condition
// evaluated once, and the stream carries every event of the log exactly once.
const caller: Caller = { principal: "plan-worker", roles: ["coordinator"], actor: "plan-worker", agent_id: null };
const PLANS = 4;
const STEPS = 20;
let harness: FaultHarness;

beforeAll(async () => {
  harness = await openFaultHarness("plans-kill", caller);
});
afterAll(async () => {
  await harness?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A state the driver cannot move on from: the test fails with it instead of retrying. */
class Unexpected extends Error {}

describe("killing the intents service while the tasks of plans complete", () => {
  it("keeps each plan's progress equal to its tasks' states and writes every plan event once", { timeout: 180_000 }, async () => {
    const { client } = harness;
    await harness.start("intents");
    const intent = await client.request(intentsCommands.create, caller, { body: { title: "plans under fire", status: "active" } });
    const plans: Plan[] = [];
    for (let p = 0; p < PLANS; p++) {
      plans.push(
        await client.request(planCommands.create, caller, {
          intent_id: intent.id,
          body: {
            title: `plan ${p}`,
            steps: Array.from({ length: STEPS }, (_, s) => ({ title: `s${s}`, depends_on: [] })),
            checkpoints: [{ name: "half-way", after_task: "s10", requires_approval: true, approvers: [], on_timeout: "escalate", status: "pending" }],
            conditions: [{ task_id: "s19", when: "tasks['s0'].output.keep == true", otherwise: "skip" }],
          },
        }),
      );
    }
    const queue = plans.flatMap((plan) => plan.steps.filter((s) => s.title !== "s19").map((s) => ({ taskId: s.task_id, planId: plan.id })));

    /** Moves one task to completed, whatever it reached before a failure; approves the checkpoint that pauses its plan. */
    const drive = async (item: { taskId: string; planId: string }): Promise<string> => {
      for (let attempt = 0; attempt < 400; attempt++) {
        try {
          const task = await client.request(taskCommands.get, caller, { task_id: item.taskId });
          const ref = { task_id: item.taskId, if_match: null };
          if (task.status === "completed") return item.taskId;
          if (task.status === "ready") await client.request(taskCommands.claim, caller, { ...ref, body: {} });
          else if (task.status === "claimed") await client.request(taskCommands.start, caller, { ...ref, body: {} });
          else if (task.status === "running") await client.request(taskCommands.complete, caller, { ...ref, body: { output: { keep: false } } });
          else throw new Unexpected(`task ${item.taskId} is ${task.status}`);
        } catch (err) {
          if (err instanceof AppError && err.code === "PLAN_PAUSED") {
            await client.request(planCommands.approveCheckpoint, caller, { plan_id: item.planId, checkpoint_id: "cp_1", body: {} }).catch(() => undefined);
          } else if (err instanceof Unexpected) throw err;
          else await sleep(50);
        }
      }
      throw new Error(`task ${item.taskId} did not complete`);
    };

    let next = 0;
    const { acknowledged } = await writeThroughFault({
      workers: 6,
      write: async () => {
        const item = queue[next++];
        if (!item) throw new Error("no task left");
        return drive(item);
      },
      fault: () => harness.killAndRestart("intents"),
      warmup: 15,
      after: 25,
      until: harness.until,
    });
    // The rest, so that every plan can finish.
    while (next < queue.length) acknowledged.push(await drive(queue[next++]!));
    await harness.drained("intents");

    const taskRows = await harness.rows<{ id: string; plan_id: string; status: string }>(sql`select id, plan_id, status from intents.tasks where intent_id = ${intent.id}`);
    const events = await harness.rows<{ event_type: string; payload: Record<string, unknown> }>(sql`select event_type, payload from intents.events where intent_id = ${intent.id} order by sequence`);
    expect(new Set(acknowledged).size).toBe(queue.length);
    for (const plan of plans) {
      const now = await client.request(planCommands.get, caller, { plan_id: plan.id });
      const rows = taskRows.filter((t) => t.plan_id === plan.id);
      const count = (status: string) => rows.filter((t) => t.status === status).length;
      expect(now.progress.by_status).toMatchObject({ completed: count("completed"), skipped: count("skipped") });
      expect(now.progress).toMatchObject({ total: STEPS, done: STEPS, percent_complete: 100 });
      expect([count("completed"), count("skipped")]).toEqual([STEPS - 1, 1]);
      expect(now).toMatchObject({ state: "completed", checkpoints: [{ status: "approved" }], conditions: [{ result: false }] });
      const of = (type: string) => events.filter((e) => e.event_type === type && e.payload.plan_id === plan.id).length;
      expect([of("plan.checkpoint_reached"), of("plan.paused"), of("plan.checkpoint_approved"), of("plan.resumed"), of("plan.condition_evaluated"), of("plan.completed")]).toEqual([1, 1, 1, 1, 1, 1]);
    }
    const completions = events.filter((e) => e.event_type === "task.completed").map((e) => String(e.payload.task_id));
    expectExactlyOnce({ acknowledged, stored: taskRows.filter((t) => t.status === "completed").map((t) => t.id), published: { "task.completed per task": completions } });
    const logged = await harness.rows<{ id: string }>(sql`select id from intents.events`);
    expectExactlyOnce({
      acknowledged: [],
      stored: logged.map((e) => e.id),
      published: { [streams.intents.name]: await readStream(harness.bus, harness.bus.streamName(streams.intents.name), (msg) => msg.json<IntentEvent>().id) },
    });
  });
});
