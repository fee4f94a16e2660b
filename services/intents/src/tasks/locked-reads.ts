import { sql } from "drizzle-orm";
import { errors, type AppError, type Caller } from "@intentmesh/contracts";
import { rowsOf, withParams, type Tx } from "@intentmesh/db";
import { refusalOfStatus } from "../agents/agent-status";
import { rememberLogHead } from "../kernel/event-log";
import { accessFactsOf, callerEntriesColumn, callerParams, type AccessFacts, type RawFacts } from "../acl/statements";
import type { TaskRow } from "./store";
import { taskColumnList, taskRowOf } from "./task-sql";

/**
 * The statements a task change (moves.ts changeTask) opens its transaction with, in the service's
 * lock order (agent, intent, task), each found from the task's id so that nothing is read before
 * the transaction: the claiming agent's status row (claims only), the intent's row, then the task
 * under that lock with what the rest of the change needs to know of its intent. SQL text made
 * once (task-sql.ts): these run on every move.
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

/** What a task change knows of its intent's row: lockIntentRow's answer, and the id. */
export interface LockedIntent {
  id: string;
  version: number;
  status: string;
  blockedReason: string | null;
}

/**
 * Locks the row of the task's intent for the rest of the transaction (a task never changes
 * intent); 404 when the task does not exist.
 */
export async function lockIntentOfTask(tx: Tx, taskId: string): Promise<LockedIntent> {
  const [row] = rowsOf<{ id: string; version: number; status: string; blocked_reason: string | null; event_seq: string; chain_seq: string; chain_head: string | null }>(
    await tx.execute(
      sql`select i.id, i.version, i.status, i.blocked_reason, i.event_seq, i.chain_seq, i.chain_head from intents.intents i where i.id = (select t.intent_id from intents.tasks t where t.id = ${taskId}) for update`,
    ),
  );
  if (!row) throw errors.notFound("task", taskId);
  // The log's head as the lock read it: the change's events then go in one statement (kernel/event-log.ts appendToLog).
  rememberLogHead(tx, row.id, { eventSeq: row.event_seq, chainSeq: row.chain_seq, chainHead: row.chain_head });
  return { id: row.id, version: row.version, status: row.status, blockedReason: row.blocked_reason };
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

const READ_UNDER_LOCK = `
  select ${taskColumnList("t")}, i.acl_policy, i.acl_default, i.acl_owner, ${callerEntriesColumn("$2", "$3", "$4")},
    exists (select 1 from intents.coordinator_leases l where l.intent_id = t.intent_id and l.holds) as coordinated,
    exists (select 1 from intents.tasks d where d.intent_id = t.intent_id and d.status in ('pending', 'blocked') and d.depends_on @> array[t.id]) as awaited_by_others
  from intents.tasks t join intents.intents i on i.id = t.intent_id
  where t.id = $1`;

/**
 * One statement, after the intent's lock was taken (so it sees every change committed before it):
 * the task, the access facts of its intent for the caller, and whether a coordinator lease or a
 * waiting dependent can make the change do more. Those facts change only under the intent's lock,
 * which this transaction holds until it ends. 404 when the task does not exist.
 */
export async function readTaskUnderLock(tx: Tx, taskId: string, caller: Caller): Promise<TaskUnderLock> {
  const [row] = rowsOf<Record<string, unknown> & Omit<RawFacts, "intent_id"> & { intent_id: string; coordinated: boolean; awaited_by_others: boolean }>(
    await tx.execute(withParams(READ_UNDER_LOCK, [taskId, ...callerParams(caller)])),
  );
  if (!row) throw errors.notFound("task", taskId);
  return {
    task: taskRowOf(row),
    access: accessFactsOf(row),
    coordinated: row.coordinated,
    awaitedByOthers: row.awaited_by_others,
  };
}
