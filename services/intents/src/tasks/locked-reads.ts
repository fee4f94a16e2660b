import { eq, sql } from "drizzle-orm";
import { errors, type AppError, type Caller } from "@intentmesh/contracts";
import { rowsOf, type Tx } from "@intentmesh/db";
import { intents } from "../db/schema";
import { tasks } from "../db/schema-tasks";
import { refusalOfStatus } from "../agents/agent-status";
import { accessFactsOf, entriesOfCaller, type AccessFacts } from "../acl/statements";
import type { TaskRow } from "./store";

/**
 * The statements a task change (moves.ts changeTask) opens its transaction with, in the service's
 * lock order (agent, intent, task), each found from the task's id so that nothing is read before
 * the transaction: the claiming agent's status row (claims only), the intent's row, then the task
 * under that lock with what the rest of the change needs to know of its intent.
 */

/**
 * A claim's agent: the one the request names, else the task's assigned agent, else the caller.
 * Holds that agent's status row (shared) until the transaction ends, as lease grants do, so an
 * agent's death being projected waits for the claim and then releases the task too. Answers the
 * agent and the refusal its status means (thrown by the caller once access is decided); 404 when
 * the task does not exist.
 */
export async function holdClaimingAgent(tx: Tx, taskId: string, named: string | null, caller: Caller): Promise<{ agent: string; refusal: AppError | null }> {
  const [row] = rowsOf<{ agent_id: string; status: string | null }>(
    await tx.execute(sql`
      select a.agent_id, (select s.status from intents.agent_status s where s.agent_id = a.agent_id for share) as status
      from (select coalesce(${named}::text, t.assigned_agent, ${caller.actor}::text) as agent_id from intents.tasks t where t.id = ${taskId}) a`),
  );
  if (!row) throw errors.notFound("task", taskId);
  return { agent: row.agent_id, refusal: refusalOfStatus(row.agent_id, row.status ?? undefined) };
}

/**
 * Locks the row of the task's intent for the rest of the transaction (a task never changes
 * intent); 404 when the task does not exist. lockIntentRow's answer, found from the task.
 */
export async function lockIntentOfTask(tx: Tx, taskId: string): Promise<{ id: string; version: number; status: string; blockedReason: string | null }> {
  const [row] = await tx
    .select({ id: intents.id, version: intents.version, status: intents.status, blockedReason: intents.blockedReason })
    .from(intents)
    .where(eq(intents.id, sql`(select ${tasks.intentId} from ${tasks} where ${tasks.id} = ${taskId})`))
    .for("update");
  if (!row) throw errors.notFound("task", taskId);
  return row;
}

/** The task, read under its intent's lock, and what its change needs to know of the intent. */
export interface TaskUnderLock {
  task: TaskRow;
  /** The caller's access facts on the intent (the ACL head and the entries naming the caller). */
  access: AccessFacts;
  /** The intent has a holding coordinator lease (coordinatorEffectsOfTaskChange has work only then). */
  coordinated: boolean;
  /** A pending (or blocked) task of the intent depends on this one (readyDependents has work only then). */
  awaitedByOthers: boolean;
}

/**
 * One statement, after the intent's lock was taken (so it sees every change committed before it):
 * the task, the access facts of its intent for the caller, and whether a coordinator lease or a
 * waiting dependent can make the change do more. Those facts change only under the intent's lock,
 * which this transaction holds until it ends. 404 when the task does not exist.
 */
export async function readTaskUnderLock(tx: Tx, taskId: string, caller: Caller): Promise<TaskUnderLock> {
  const [row] = await tx
    .select({
      task: tasks,
      aclPolicy: intents.aclPolicy,
      aclDefault: intents.aclDefault,
      aclOwner: intents.aclOwner,
      entries: sql<AccessEntriesJson>`${entriesOfCaller(caller)}`,
      coordinated: sql<boolean>`exists (select 1 from intents.coordinator_leases l where l.intent_id = ${tasks.intentId} and l.holds)`,
      awaitedByOthers: sql<boolean>`exists (select 1 from intents.tasks d where d.intent_id = ${tasks.intentId} and d.status in ('pending', 'blocked') and d.depends_on @> array[${tasks.id}]::uuid[])`,
    })
    .from(tasks)
    .innerJoin(intents, eq(intents.id, tasks.intentId))
    .where(eq(tasks.id, taskId));
  if (!row) throw errors.notFound("task", taskId);
  return {
    task: row.task,
    access: accessFactsOf({ intent_id: row.task.intentId, acl_policy: row.aclPolicy, acl_default: row.aclDefault, acl_owner: row.aclOwner, entries: row.entries }),
    coordinated: row.coordinated,
    awaitedByOthers: row.awaitedByOthers,
  };
}

type AccessEntriesJson = { principal_type: string; principal_id: string; permission: string; expires_at: string | null }[] | null;
