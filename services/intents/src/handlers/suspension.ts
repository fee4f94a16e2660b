import { appError } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import {
  AppError,
  errors,
  intentEventTypes,
  isoTimestamp,
  type Caller,
  type Intent,
  type IntentStatus,
  type JsonObject,
  type SuspensionEndInput,
  type SuspensionRecord,
  type SuspensionRequest,
} from "@intentmesh/contracts";
import { rowsOf, type Tx } from "@intentmesh/db";
import type { IntentsContext } from "../context";
import { INTENT_COLUMNS, rawToIntent, type RawIntent } from "../db/statements";
import { reserveSequences, writeEvents, type NewEvent } from "../event-log";
import { assertDeadlineWithinDueBefore, buildSuspensionRecord } from "../domain/suspension";
import { assertStateWithinLimit } from "../domain/state-size";
import { blockTasksForSuspension, releaseTasksAfterSuspension } from "./task-effects";

/**
 * The intents side of human-input suspension (spec 3.1, 2.9), served on the bus only
 * (im.intents.suspension.begin / .end): the governance service owns the REST surface, the
 * operator notification and the timeouts, and calls these to move the intent. Each is one
 * transaction: state._suspension, status, version + 1, the intent's events and outbox rows.
 */

const SUSPENDED: IntentStatus = "suspended_awaiting_input";

async function lockForSuspension(tx: Tx, intentId: string, ifMatch: number | null) {
  const [row] = rowsOf<{ status: string; version: number; state: JsonObject }>(
    await tx.execute(sql`select status, version, state from intents.intents where id = ${intentId} for update`),
  );
  if (!row) throw errors.notFound("intent", intentId);
  if (ifMatch !== null && row.version !== ifMatch) throw errors.versionMismatch("intent", intentId, row.version, ifMatch);
  return { status: row.status as IntentStatus, version: Number(row.version), state: row.state };
}

/** Writes the new state and status at version + 1 and the events, in the caller's transaction. */
async function commitSuspensionChange(tx: Tx, intentId: string, state: JsonObject, status: IntentStatus, newEvents: NewEvent[], at: Date): Promise<Intent> {
  assertStateWithinLimit(intentId, state);
  const { firstSequence } = await reserveSequences(tx, intentId, newEvents.length, null);
  const [row] = rowsOf<RawIntent>(
    await tx.execute(sql`
      update intents.intents set state = ${JSON.stringify(state)}::jsonb, status = ${status}, version = version + 1, updated_at = ${at}
      where id = ${intentId} returning ${sql.raw(INTENT_COLUMNS)}`),
  );
  await writeEvents(tx, intentId, firstSequence, newEvents, at);
  return rawToIntent(row!);
}

/**
 * active -> suspended_awaiting_input. The record gets its id (when the caller sent none),
 * suspended_at and expires_at; its deadline must not pass the due_before of any portfolio
 * holding the intent (spec 8), read under a share lock so neither a due_before change nor a new
 * membership slips past the check. Events: intent.suspended {suspension, version} and
 * status_changed {from, to, reason, version, suspension_id}.
 */
export async function beginSuspension(
  ctx: IntentsContext,
  input: { intent_id: string; if_match: number | null; suspension: SuspensionRequest },
  caller: Caller,
): Promise<Intent> {
  const now = ctx.clock.now();
  const intentId = input.intent_id;
  const intent = await ctx.db.transaction(async (tx) => {
    const current = await lockForSuspension(tx, intentId, input.if_match);
    if (current.status !== "active") {
      throw appError("INVALID_TRANSITION", `only an active intent can be suspended; intent ${intentId} is ${current.status}`, {
        from: current.status,
        to: SUSPENDED,
        allowed_from: ["active"],
      });
    }
    const record = buildSuspensionRecord(input.suspension, input.suspension.id ?? randomUUID(), now);
    // Every portfolio holding the intent is share-locked, not only those with a due_before now:
    // a due_before being set concurrently must be waited for, not read from a snapshot.
    const holders = rowsOf<{ id: string; due_before: Date | string | null }>(
      await tx.execute(sql`
        select p.id, p.due_before from intents.portfolios p
        join intents.portfolio_members m on m.portfolio_id = p.id
        where m.intent_id = ${intentId}
        order by p.id for share of p`),
    );
    assertDeadlineWithinDueBefore(
      intentId,
      record.expires_at ? new Date(record.expires_at) : null,
      holders.flatMap((p) => (p.due_before === null ? [] : [{ portfolio_id: p.id, due_before: new Date(p.due_before) }])),
    );
    const version = current.version + 1;
    const suspended = await commitSuspensionChange(
      tx,
      intentId,
      { ...current.state, _suspension: record },
      SUSPENDED,
      [
        { eventType: intentEventTypes.suspended, actor: caller.actor, payload: { suspension: record, version } },
        {
          eventType: intentEventTypes.statusChanged,
          actor: caller.actor,
          payload: { from: "active", to: SUSPENDED, reason: "awaiting operator input", version, suspension_id: record.id },
        },
      ],
      now,
    );
    // Spec 3.1: the intent's claimed and running tasks block with it, in this transaction.
    await blockTasksForSuspension(tx, intentId, caller.actor, now);
    return suspended;
  });
  ctx.published();
  return intent;
}

/**
 * suspended_awaiting_input -> active (responded, cancelled, expired) or abandoned (expired with
 * the `fail` fallback). The suspension named must be the active one; state._suspension keeps
 * the record with its resolution (and the response). Events: intent.resumed, or
 * intent.suspension_expired, then status_changed.
 */
export async function endSuspension(ctx: IntentsContext, input: SuspensionEndInput, caller: Caller): Promise<Intent> {
  const now = ctx.clock.now();
  const intentId = input.intent_id;
  const intent = await ctx.db.transaction(async (tx) => {
    const current = await lockForSuspension(tx, intentId, input.if_match);
    if (current.status !== SUSPENDED) {
      throw appError("NOT_SUSPENDED", `intent ${intentId} is ${current.status}, not suspended_awaiting_input`, { status: current.status });
    }
    const active = current.state._suspension as SuspensionRecord | undefined;
    // The active id is not echoed: it is a capability (spec 5.5).
    if (!active || active.id !== input.suspension_id) {
      throw appError("SUSPENSION_MISMATCH", `suspension ${input.suspension_id} is not the active suspension of intent ${intentId}`, {
        suspension_id: input.suspension_id,
      });
    }
    const responded =
      input.resolution === "responded" ? { response: input.response, responded_by: input.responded_by ?? caller.actor, responded_at: isoTimestamp(now) } : {};
    const record: SuspensionRecord = { ...active, ...responded, resolution: input.resolution };
    const to: IntentStatus = input.status;
    const version = current.version + 1;
    const ending: NewEvent =
      input.resolution === "expired"
        ? {
            eventType: intentEventTypes.suspensionExpired,
            actor: caller.actor,
            payload: { suspension_id: active.id, resolution: "expired", fallback_policy: active.fallback_policy, status: to, version },
          }
        : { eventType: intentEventTypes.resumed, actor: caller.actor, payload: { suspension_id: active.id, resolution: input.resolution, ...responded, version } };
    const ended = await commitSuspensionChange(
      tx,
      intentId,
      { ...current.state, _suspension: record },
      to,
      [ending, { eventType: intentEventTypes.statusChanged, actor: caller.actor, payload: { from: SUSPENDED, to, reason: input.resolution, version, suspension_id: active.id } }],
      now,
    );
    // The tasks the suspension blocked return to what they were doing (or are cancelled with an abandoned intent).
    await releaseTasksAfterSuspension(tx, intentId, to === "active", caller.actor, now);
    return ended;
  });
  ctx.published();
  return intent;
}
