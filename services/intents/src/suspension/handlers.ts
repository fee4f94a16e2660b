import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import {
  activeRecord,
  intentEventTypes,
  type Caller,
  AdoptedSuspension,
  type Intent,
  type IntentEvent,
  type IntentStatus,
  type JsonObject,
  type SuspensionEndInput,
  type SuspensionRecord,
  type SuspensionRequest,
  intentEvents,
  suspensionCommands,
  validateResponseValue,
} from "@intentmesh/contracts";
import { and, desc, eq } from "drizzle-orm";
import { rowsOf, type Tx } from "@intentmesh/db";
import { validationError, newEvent } from "@intentmesh/bus";
import { events } from "../db/schema";
import { toEvent } from "../kernel/mapping";
import type { IntentsContext } from "../kernel/context";
import { appendToLog, type NewEvent } from "../kernel/event-log";
import { queryOn } from "../acl/guard";
import { lockForSuspension, writeSuspensionChange, type SuspensionChange } from "./statements";
import {
  assertDeadlineWithinDueBefore,
  assertMayAdoptRecord,
  assertMaySuspend,
  buildSuspensionRecord,
  cancelledByAbandon,
  endedRecord,
  SUSPENDED,
  suspensionToEnd,
} from "./rules";
import { assertStateWithinLimit } from "../kernel/state-size";
import { blockTasksForSuspension, releaseTasksAfterSuspension } from "../tasks/effects";

/**
 * The intents side of human-input suspension (spec 3.1, 2.9), served on the bus only
 * (im.intents.suspension.begin / .end): the governance service owns the REST surface, the
 * operator notification and the timeouts, and calls these to move the intent. Each is one
 * transaction: state._suspension, status, version + 1, the intent's events and outbox rows.
 */

/**
 * Writes the new state and status at version + 1 and the events, and moves the tasks that go
 * with it (blocked at the start, released at the end), in the caller's transaction. A start
 * checks the record's deadline against the portfolios holding the intent (spec 8), which the
 * change's statement reads under a share lock.
 */
async function commitSuspensionChange(
  tx: Tx,
  intentId: string,
  change: Omit<SuspensionChange, "holders"> & { deadlineOf?: SuspensionRecord },
  newEvents: NewEvent[],
  actor: string,
): Promise<Intent> {
  const { intent, holders, movesTasks } = await writeSuspensionChange(tx, intentId, { ...change, holders: change.deadlineOf !== undefined });
  if (change.deadlineOf) {
    const record = change.deadlineOf;
    assertDeadlineWithinDueBefore(
      intentId,
      record.expires_at ? new Date(record.expires_at) : null,
      holders.flatMap((p) => (p.due_before === null ? [] : [{ portfolio_id: p.portfolio_id, due_before: p.due_before }])),
    );
  }
  assertStateWithinLimit(intentId, change.state);
  // One statement: the lock remembered the log's head (statements.ts lockForSuspension).
  await appendToLog(tx, intentId, newEvents, change.at);
  if (movesTasks) {
    // Spec 3.1: the intent's claimed and running tasks block with it, and return (or are
    // cancelled with an abandoned intent) when it ends, in this transaction.
    if (change.tasksAt === "start") await blockTasksForSuspension(tx, intentId, actor, change.at);
    else await releaseTasksAfterSuspension(tx, intentId, change.status === "active", actor, change.at);
  }
  return intent;
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
    // The route's permission, checked here for the governance service (intent-access.ts): nothing more is read without an ACL.
    const current = await lockForSuspension(tx, intentId, input.if_match, (aclPolicy) => ctx.access.afterRead(suspensionCommands.begin, intentId, aclPolicy, caller, queryOn(tx)));
    assertMaySuspend(intentId, current.status, "begin");
    const record = buildSuspensionRecord(input.suspension, input.suspension.id ?? randomUUID(), now);
    const version = current.version + 1;
    return commitSuspensionChange(
      tx,
      intentId,
      { state: { ...current.state, _suspension: record }, status: SUSPENDED, at: now, tasksAt: "start", deadlineOf: record },
      [
        newEvent(intentEvents.suspended, caller.actor, { suspension: record, version }),
        newEvent(intentEvents.statusChanged, caller.actor, { from: "active", to: SUSPENDED, reason: "awaiting operator input", version, suspension_id: record.id }),
      ],
      caller.actor,
    );
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
    const current = await lockForSuspension(tx, intentId, input.if_match, (aclPolicy) => ctx.access.afterRead(suspensionCommands.end, intentId, aclPolicy, caller, queryOn(tx)));
    const active = suspensionToEnd(intentId, current.status, current.state, input.suspension_id);
    // An answer (POST /suspend/respond) is held to the waiting record here, under the lock, after the status and id.
    if (input.validate_response) validateResponseValue(active, input.response);
    const { record, responded } = endedRecord(active, input, caller.actor, now);
    const to: IntentStatus = input.status;
    const version = current.version + 1;
    const ending: NewEvent =
      input.resolution === "expired"
        ? newEvent(intentEvents.suspensionExpired, caller.actor, { suspension_id: active.id, resolution: "expired", fallback_policy: active.fallback_policy, status: to, version })
        : // intent_id and value as the official clients read intent.resumed (CLIENTS.md §1).
          newEvent(intentEvents.resumed, caller.actor, {
            intent_id: intentId,
            suspension_id: active.id,
            resolution: input.resolution,
            ...responded,
            ...(input.resolution === "responded" ? { value: input.response } : {}),
            version,
          });
    // The tasks the suspension blocked return to what they were doing (or are cancelled with an abandoned intent).
    return commitSuspensionChange(
      tx,
      intentId,
      { state: { ...current.state, _suspension: record }, status: to, at: now, tasksAt: "end" },
      [ending, newEvent(intentEvents.statusChanged, caller.actor, { from: SUSPENDED, to, reason: input.resolution, version, suspension_id: active.id })],
      caller.actor,
    );
  });
  ctx.published();
  return intent;
}

/**
 * The official clients' agent-side sequence, step 1 (CLIENTS.md §1): POST /status
 * {status: suspended_awaiting_input} on an active intent. The intent suspends at once (version + 1,
 * status_changed, its tasks blocked) and waits for its record, which the next step's
 * `set _suspension` patch brings (adoptSuspension). Until then there is no tracked suspension.
 */
export async function suspendByStatus(ctx: IntentsContext, intentId: string, ifMatch: number, reason: string | null, caller: Caller): Promise<Intent> {
  const now = ctx.clock.now();
  const intent = await ctx.db.transaction(async (tx) => {
    const current = await lockForSuspension(tx, intentId, ifMatch);
    assertMaySuspend(intentId, current.status, "status");
    const version = current.version + 1;
    return commitSuspensionChange(
      tx,
      intentId,
      { state: current.state, status: SUSPENDED, at: now, tasksAt: "start" },
      [newEvent(intentEvents.statusChanged, caller.actor, { from: "active", to: SUSPENDED, reason: reason ?? "awaiting operator input", version })],
      caller.actor,
    );
  });
  ctx.published();
  return intent;
}

/**
 * Step 2 of the clients' sequence: one `set _suspension` patch on an intent suspended without a
 * waiting record. The value is read as a SuspensionRequest; the server sets suspended_at and
 * expires_at on its clock and announces it with intent.suspended, the one event of this
 * suspension (the client's own intent.suspended, step 3, is answered with it: acknowledgeSuspended).
 * The governance service tracks the suspension from that event, with the same timeouts as one
 * begun through POST /intents/{id}/suspend.
 */
export async function adoptSuspension(ctx: IntentsContext, intentId: string, ifMatch: number, value: unknown, caller: Caller): Promise<Intent> {
  const parsed = AdoptedSuspension.safeParse(value);
  if (!parsed.success) throw validationError(parsed.error);
  const now = ctx.clock.now();
  const intent = await ctx.db.transaction(async (tx) => {
    const current = await lockForSuspension(tx, intentId, ifMatch);
    assertMayAdoptRecord(intentId, current.status, current.state);
    const record = buildSuspensionRecord(parsed.data, parsed.data.id ?? randomUUID(), now);
    const version = current.version + 1;
    return commitSuspensionChange(
      tx,
      intentId,
      // The intent's tasks were blocked when it suspended (step 1).
      { state: { ...current.state, _suspension: record }, status: SUSPENDED, at: now, tasksAt: null, deadlineOf: record },
      [
        newEvent(intentEvents.statePatched, caller.actor, { patches: [{ op: "set", path: "_suspension", value: record }], version }),
        newEvent(intentEvents.suspended, caller.actor, { suspension: record, version }),
      ],
      caller.actor,
    );
  });
  ctx.published();
  return intent;
}

/**
 * Step 3 of the clients' sequence: POST /events intent.suspended. The server already announced
 * the suspension; the client's append returns that event (201) and writes nothing, so the log
 * holds one intent.suspended per suspension. Anything else stays reserved (400).
 */
export async function acknowledgeSuspended(ctx: IntentsContext, intentId: string, payload: JsonObject): Promise<IntentEvent | null> {
  const [row] = rowsOf<{ status: string; state: JsonObject }>(await ctx.db.execute(sql`select status, state from intents.intents where id = ${intentId}`));
  if (!row || row.status !== SUSPENDED) return null;
  const record = activeRecord(row.state);
  if (!record) return null;
  const named = payload.suspension_id ?? payload.id;
  if (named !== undefined && String(named).toLowerCase() !== record.id) return null;
  const [event] = await ctx.db
    .select()
    .from(events)
    .where(and(eq(events.intentId, intentId), eq(events.eventType, intentEventTypes.suspended), sql`${events.payload}->'suspension'->>'id' = ${record.id}`))
    .orderBy(desc(events.sequence))
    .limit(1);
  return event ? toEvent(event) : null;
}

/**
 * suspended_awaiting_input -> abandoned through POST /status: the suspension is cancelled
 * (resolution `cancelled`, spec 3.5), its tasks are cancelled with the intent; status_changed
 * carries suspension_id and resolution so the governance service stops its timers.
 */
export async function cancelByAbandon(ctx: IntentsContext, intentId: string, ifMatch: number, reason: string | null, caller: Caller): Promise<Intent> {
  const now = ctx.clock.now();
  const intent = await ctx.db.transaction(async (tx) => {
    const current = await lockForSuspension(tx, intentId, ifMatch);
    const { state, cancelled: active } = cancelledByAbandon(intentId, current.status, current.state);
    const version = current.version + 1;
    // Its blocked tasks are cancelled with it.
    return commitSuspensionChange(
      tx,
      intentId,
      { state: state as JsonObject, status: "abandoned", at: now, tasksAt: "end" },
      [
        newEvent(intentEvents.statusChanged, caller.actor, { from: SUSPENDED, to: "abandoned", reason: reason ?? null, version, ...(active ? { suspension_id: active.id, resolution: "cancelled" } : {}) }),
      ],
      caller.actor,
    );
  });
  ctx.published();
  return intent;
}
