import { describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { eq, TransactionRollbackError } from "drizzle-orm";
import { tasks } from "../src/db/schema-tasks";
import { readTaskUnderLock } from "../src/tasks/locked-reads";
import { toTask, updateTask } from "../src/tasks/store";
import { selectTask } from "../src/tasks/task-sql";
import { coordinatorCommands, intentsCommands, taskCommands, type Caller, type Task } from "@intentmesh/contracts";
import { agentCaller } from "../../../test/support/cluster";
import { recordedIntentsService } from "./process-statements";

/**
 * The PostgreSQL statements one task command runs (docs/benchmarks.md, task_claim_complete): a
 * counting wrapper around every pg client of this process, with the outbox relay stopped and the
 * timers an hour apart, so what runs while a command is answered is that command's work. The
 * intent's log append (event-log.ts) is one statement after a lock that read the log's head: this
 * pins the task path around it, so a second read of the task, a separate access check, a
 * coordinator or dependents statement for an intent that has none, or an append that reads its
 * chain head again fails here.
 */

const recorded = recordedIntentsService();

/** What a statement is, in the words of the task path. */
function kindOf(text: string): string {
  const s = text.replace(/\s+/g, " ").replace(/"/g, "").trim().toLowerCase();
  if (s === "begin" || s === "commit" || s === "rollback") return s;
  // The lock reads the log's head too (event-log.ts rememberLogHead): a lock before it is a log statement.
  if (/^select .* from intents\.intents( i)? where .*for update$/.test(s)) return "lock intent";
  if (/intents\.(events|outbox)|event_seq|chain_(seq|head)/.test(s)) return "log append";
  if (s.includes("intents.agent_status")) return "hold agent";
  if (s.includes("blocked_while_pending")) return "ready dependents";
  if (/^select .* from intents\.tasks( t)? (inner )?join intents\.intents/.test(s)) return "read task";
  if (/^update intents\.tasks/.test(s)) return "update task";
  if (/^insert into intents\.tasks/.test(s)) return "insert task";
  if (s.includes("coordinator_leases")) return "coordinator lease";
  if (s.includes("acl_entries")) return "access facts";
  return s.slice(0, 120);
}

/** The kinds of statements, in order, that one command ran: each event log append is one statement after the lock. */
async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  return (await recorded.statementsDuring(run)).map(kindOf);
}

/** A start or a completion without a coordinator, a plan or dependents: the lock, the task read once, its update, its event. */
const MOVE = ["begin", "lock intent", "read task", "update task", "log append", "commit"];

const agent: Caller = agentCaller("statement-counter");

describe("statements of a task's claim, start and completion", () => {
  it("read the task once under its intent's lock, with its access facts, and nothing for a coordinator, a plan or dependents it does not have", async () => {
    const intent = await recorded.harness().call(intentsCommands.create, { body: { title: "counted" } });
    let task!: Task;
    expect(await statementsOf(async () => (task = await recorded.harness().call(taskCommands.create, { intent_id: intent.id, body: { title: "t" } })))).toEqual([
      "begin",
      "lock intent",
      "coordinator lease",
      "insert task",
      "log append",
      "commit",
    ]);

    expect(await statementsOf(() => recorded.harness().call(taskCommands.claim, { task_id: task.id, if_match: null, body: {} }, agent))).toEqual([
      "begin",
      "hold agent",
      "lock intent",
      "read task",
      "update task",
      "log append",
      "commit",
    ]);
    expect(await statementsOf(() => recorded.harness().call(taskCommands.start, { task_id: task.id, if_match: null, body: {} }, agent))).toEqual(MOVE);
    expect(await statementsOf(() => recorded.harness().call(taskCommands.complete, { task_id: task.id, if_match: null, body: { output: { ok: true } } }, agent))).toEqual(MOVE);
  });

  it("ready a waiting dependent when its dependency completes, and count the completion on the intent's coordinator lease", async () => {
    const intent = await recorded.harness().call(intentsCommands.create, { body: { title: "coordinated" } });
    const coordinator: Caller = { ...agentCaller("counted-coordinator"), roles: ["coordinator"] };
    await recorded.harness().call(coordinatorCommands.createLease, { body: { agent_id: coordinator.actor, intent_id: intent.id } }, coordinator);
    const first = await recorded.harness().call(taskCommands.create, { intent_id: intent.id, body: { title: "first" } });
    const second = await recorded.harness().call(taskCommands.create, { intent_id: intent.id, body: { title: "second", depends_on: [first.id] } });
    expect(second.status).toBe("pending");
    // A dependent blocked while pending returns to ready, not pending, once its dependency is done.
    const third = await recorded.harness().call(taskCommands.create, { intent_id: intent.id, body: { title: "third", depends_on: [first.id] } });
    await recorded.harness().call(taskCommands.patch, { task_id: third.id, if_match: third.version, body: { status: "blocked", blocked_reason: "held" } });
    await recorded.harness().call(taskCommands.claim, { task_id: first.id, if_match: null, body: {} }, agent);
    await recorded.harness().call(taskCommands.start, { task_id: first.id, if_match: null, body: {} }, agent);
    const kinds = await statementsOf(() => recorded.harness().call(taskCommands.complete, { task_id: first.id, if_match: null, body: {} }, agent));
    expect(kinds).toEqual(["begin", "lock intent", "read task", "update task", "ready dependents", "coordinator lease", "log append", "commit"]);
    expect((await recorded.harness().call(taskCommands.get, { task_id: second.id })).status).toBe("ready");
    const [held] = rowsOf<{ status: string; blocked_from: string }>(await recorded.harness().database.db.execute(sql`select status, blocked_from from intents.tasks where id = ${third.id}`));
    expect(held).toEqual({ status: "blocked", blocked_from: "ready" });
  });

  it("read and write every column of a task as the query builder does", async () => {
    const intent = await recorded.harness().call(intentsCommands.create, { body: { title: "columns" } });
    const first = await recorded.harness().call(taskCommands.create, { intent_id: intent.id, body: { title: "first" } });
    const task = await recorded.harness().call(taskCommands.create, {
      intent_id: intent.id,
      body: {
        title: "every column",
        description: "d",
        depends_on: [first.id],
        parent_task_id: first.id,
        capabilities_required: ["a", "b,c", 'd"e'],
        metadata: { nested: { list: [1, "two", null] } },
        retry_policy: { max_retries: 2 },
        input: { n: 1 },
      },
    });
    const db = recorded.harness().database.db;
    await db.transaction(async (tx) => {
      // What the query builder reads of the task in this transaction.
      const built = async () => (await tx.select().from(tasks).where(eq(tasks.id, task.id)))[0]!;
      const read = await readTaskUnderLock(tx, task.id, agent);
      expect(read.task).toEqual(await built());
      // The INSERT's returned row made the create's answer; selectTask makes GET's.
      expect(task).toEqual(toTask(await built()));
      expect(await selectTask(tx, task.id)).toEqual(await built());
      expect(read.awaitedByOthers).toBe(false);
      expect((await readTaskUnderLock(tx, first.id, agent)).awaitedByOthers).toBe(true);
      const before = read.task;
      const updated = await updateTask(
        tx,
        before,
        { status: "failed", previousAgents: ["x", 'y "quoted"', "z,w"], output: { list: [1, { a: null }] }, error: null, completedAt: new Date("2026-01-02T03:04:05.678Z"), assignedAgent: "someone" },
        new Date("2026-01-02T03:04:06.000Z"),
      );
      expect(updated).toEqual(await built());
      expect(updated).toMatchObject({ version: before.version + 1, previousAgents: ["x", 'y "quoted"', "z,w"], output: { list: [1, { a: null }] }, updatedAt: new Date("2026-01-02T03:04:06.000Z") });
      tx.rollback();
    }).catch((error: unknown) => {
      if (!(error instanceof TransactionRollbackError)) throw error;
    });
  });
});

