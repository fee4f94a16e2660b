import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { intentEventMsgId, intentsCommands, taskCommands, type Caller } from "@intentmesh/contracts";
import { rowsOf } from "@intentmesh/db";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { agentCaller } from "../../../test/support/cluster";
import type { IntentsService } from "../../intents/src/service";
import type { MemoryService } from "../src/service";

/**
 * The memory service's consumer of task events (task-consumer.ts) beside the intents service
 * that writes them: the local task record follows a task's claim and start from their payloads,
 * without a transaction or an inbox row and without asking the intents service again; the end
 * of a task applies once, through the inbox.
 */
let harness: ServiceHarness<{ intents: IntentsService; memory: MemoryService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(manifestServices({ intents: QUIET.intents, memory: QUIET.memory }));
});
afterAll(async () => {
  await harness?.stop();
});

interface Record_ {
  version: number;
  status: string;
  assigned_agent: string | null;
  ended: boolean;
}

const recordOf = async (taskId: string) =>
  rowsOf<Record_>(await harness.database.db.execute(sql`select version, status, assigned_agent, ended from memory.tasks where task_id = ${taskId}`))[0];

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const inboxIds = async () =>
  rowsOf<{ message_id: string }>(await harness.database.db.execute(sql`select message_id from memory.inbox where consumer = 'memory-task-events'`)).map((r) => r.message_id);

describe("the memory service's consumer of task events", () => {
  it("follows a claim and a start from their payloads, with no inbox row and no request to the intents service, and applies the end once", async () => {
    const agent: Caller = agentCaller("memory-follower");
    // Every task read the memory service asks of the intents service while the task moves.
    const gets: unknown[] = [];
    const subscription = harness.bus.nc.subscribe(harness.bus.subject(taskCommands.get.subject), { callback: (_err, msg) => void gets.push(msg.subject) });
    try {
      const intent = await harness.call(intentsCommands.create, { body: { title: "followed" } });
      const task = await harness.call(taskCommands.create, { intent_id: intent.id, body: { title: "t" } });
      await until(() => recordOf(task.id), (r) => r?.version === 1, "the created task's record");
      expect(gets).toHaveLength(1); // task.created is fetched: its payload does not carry created_by

      await harness.call(taskCommands.claim, { task_id: task.id, if_match: null, body: {} }, agent);
      await harness.call(taskCommands.start, { task_id: task.id, if_match: null, body: {} }, agent);
      expect(await until(() => recordOf(task.id), (r) => r?.version === 3, "the started task's record")).toEqual({
        version: 3,
        status: "running",
        assigned_agent: agent.actor,
        ended: false,
      });
      expect(gets).toHaveLength(1);

      await harness.call(taskCommands.complete, { task_id: task.id, if_match: null, body: {} }, agent);
      expect(await until(() => recordOf(task.id), (r) => r?.ended === true, "the completed task's record")).toMatchObject({ version: 4, status: "completed" });
      // Only the end went through the inbox (the intent's log: created 1, task events 2 to 5).
      const ids = await inboxIds();
      expect(ids).toContain(intentEventMsgId(intent.id, 5));
      expect(ids.filter((id) => id.startsWith(`intent:${intent.id}:`))).toHaveLength(1);
      expect(gets).toHaveLength(1);
    } finally {
      subscription.unsubscribe();
    }
  });
});
