import { sql } from "drizzle-orm";
import { errors, type IntentStatus, type JsonObject } from "@intentmesh/contracts";
import { rowsOf, type Tx } from "@intentmesh/db";
import { INTENT_COLUMNS, rawToIntent, type RawIntent } from "../kernel/statements";
import { rememberLogHead } from "../kernel/event-log";
import { suspensionMovesTasksSql } from "../tasks/effects";

/**
 * The statements of a suspension's transaction (handlers.ts): the row lock, then one statement
 * for the intent's change and what the transaction needs to know after it. The events follow
 * through kernel/event-log.ts appendToLog, in one statement after the lock that read the log's head.
 */

export interface LockedForSuspension {
  status: IntentStatus;
  version: number;
  state: JsonObject;
}

/**
 * Locks the intent row for the suspension's transaction and reads what its rules decide from:
 * 404; then `checkAccess` with the row's ACL policy (the caller's permission comes before any
 * other refusal); then 409 past an If-Match.
 */
export async function lockForSuspension(
  tx: Tx,
  intentId: string,
  ifMatch: number | null,
  checkAccess?: (aclPolicy: string | null) => Promise<void>,
): Promise<LockedForSuspension> {
  const [row] = rowsOf<{ status: string; version: number; state: JsonObject; acl_policy: string | null; event_seq: string; chain_seq: string; chain_head: string | null }>(
    await tx.execute(sql`select status, version, state, acl_policy, event_seq, chain_seq, chain_head from intents.intents where id = ${intentId} for update`),
  );
  if (!row) throw errors.notFound("intent", intentId);
  // The log's head as the lock read it: the change's events go in one statement after it (kernel/event-log.ts appendToLog).
  rememberLogHead(tx, intentId, { eventSeq: row.event_seq, chainSeq: row.chain_seq, chainHead: row.chain_head });
  await checkAccess?.(row.acl_policy ?? null);
  if (ifMatch !== null && row.version !== ifMatch) throw errors.versionMismatch("intent", intentId, row.version, ifMatch);
  return { status: row.status as IntentStatus, version: Number(row.version), state: row.state };
}

/** A portfolio holding the intent, share-locked by the change's statement. */
export interface Holder {
  portfolio_id: string;
  due_before: Date | null;
}

export interface SuspensionChange {
  state: JsonObject;
  status: IntentStatus;
  at: Date;
  /** Whether tasks move with it: held ones block at the start, blocked ones are released at the end; null: none (a record adopted by an intent already suspended). */
  tasksAt: "start" | "end" | null;
  /** Read (and share-lock) the portfolios holding the intent: a start whose deadline they bound (spec 8). */
  holders: boolean;
}

/**
 * The intent's new state and status at version + 1, in one statement, which also answers, read under the row lock the transaction holds (its snapshot
 * is taken after the lock):
 * - the portfolios holding the intent, each share-locked in id order, so that neither a
 *   due_before set meanwhile nor a new membership slips past the deadline check (a member is
 *   added under a share lock of the intent row, which this transaction holds exclusively);
 * - whether any task moves with the suspension.
 * A refusal after it (a deadline past due_before, a state over its limit) rolls the transaction back.
 *
 * Whether the holders are read is written into the text, not passed as a parameter: as a
 * parameter, PostgreSQL's generic plan of the statement that reads none still joined the
 * portfolios and so cost more than the custom plans, which prune it, and PostgreSQL then planned
 * that statement afresh on every call (340 µs per suspension's end, pg_stat_statements).
 */
export async function writeSuspensionChange(tx: Tx, intentId: string, change: SuspensionChange) {
  const [row] = rowsOf<RawIntent & { holders: { portfolio_id: string; due_before: string | null }[] | null; moves_tasks: boolean }>(
    await tx.execute(sql`
      with u as (
        update intents.intents
        set state = ${JSON.stringify(change.state)}::jsonb, status = ${change.status}, version = version + 1,
            updated_at = ${change.at}
        where id = ${intentId}
        returning ${sql.raw(INTENT_COLUMNS)}),
      holders as (
        select p.id, p.due_before from intents.portfolios p
        join intents.portfolio_members m on m.portfolio_id = p.id
        where ${sql.raw(change.holders ? "true" : "false")} and m.intent_id = ${intentId}
        order by p.id for share of p)
      select u.*,
        (select json_agg(json_build_object('portfolio_id', h.id, 'due_before', h.due_before) order by h.id) from holders h) as holders,
        ${change.tasksAt ? suspensionMovesTasksSql(intentId, change.tasksAt) : sql`false`} as moves_tasks
      from u`),
  );
  if (!row) throw errors.notFound("intent", intentId);
  return {
    intent: rawToIntent(row),
    holders: (row.holders ?? []).map((h): Holder => ({ portfolio_id: h.portfolio_id, due_before: h.due_before === null ? null : new Date(h.due_before) })),
    movesTasks: row.moves_tasks === true,
  };
}
