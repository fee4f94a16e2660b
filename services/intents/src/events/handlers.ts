import { appError } from "@intentmesh/contracts";
import { and, asc, desc, eq, gt, type SQL } from "drizzle-orm";
import { enforceGovernance } from "../governance/handlers";
import { Uuid, errors, intentEventTypes, intentsCommands, vaultCommands, fitPage, isReservedEventType, sequenceCursor, type AppendEventBody, type Caller, type EventPage, type IntentEvent, type ListEventsQuery } from "@intentmesh/contracts";
import type { IntentsContext } from "../kernel/context";
import { events } from "../db/schema";
import { assertIntentExists, missingOrStale } from "../kernel/event-log";
import { appendEventReply, selectEventPageJson } from "../kernel/statements";
import { RawJson } from "@intentmesh/bus";
import { toEvent } from "../kernel/mapping";
import { actingAgent } from "@intentmesh/contracts";
import { acknowledgeSuspended } from "../suspension/handlers";

/**
 * POST /intents/{id}/events: appends one immutable event; event types the server emits are
 * refused. Answers with the event's JSON as the statement stored it, not serialised again.
 */
export async function appendEvent(ctx: IntentsContext, intentId: string, ifMatch: number | null, body: AppendEventBody, caller: Caller): Promise<IntentEvent | RawJson<IntentEvent>> {
  if (body.event_type === intentEventTypes.suspended) {
    // The clients' own announcement of a suspension the server already announced (suspension.ts).
    const announced = await acknowledgeSuspended(ctx, intentId, body.payload ?? {});
    if (announced) return announced;
  }
  if (isReservedEventType(body.event_type)) {
    throw appError("RESERVED_EVENT_TYPE", `event type ${body.event_type} is emitted only by the server`, { event_type: body.event_type });
  }
  const actor = actingAgent(caller, body.actor, "actor");
  if (body.proof) await verifyProof(ctx, intentId, actor, body);
  const now = ctx.clock.now();
  const newEvent = { eventType: body.event_type, actor, payload: body.payload, traceId: body.trace_id, parentEventId: body.parent_event_id?.toLowerCase() };
  // The hot path writes only to an intent without a governance policy or an ACL, in one
  // statement; an intent with one (or absent, or past the If-Match) is checked first and then written.
  let written = await appendEventReply(ctx.query, intentId, ifMatch, newEvent, now, true);
  if (!written) {
    await ctx.access.check(intentsCommands.appendEvent, intentId, caller);
    await enforceGovernance(ctx, intentId, undefined, { kind: "event" }, caller);
    written = await appendEventReply(ctx.query, intentId, ifMatch, newEvent, now);
  }
  if (!written) throw await missingOrStale(ctx.db, intentId, ifMatch ?? -1);
  ctx.published();
  return new RawJson<IntentEvent>(written.json);
}

/**
 * RFC-0018 §3.2-3.4: a signed event is accepted only when its proof verifies for the acting
 * agent, against a key the vault service holds for it now (a bus request: the keys are the
 * vault's). The signed bytes are the canonical JSON of the body without `proof`, with the
 * intent's id added (so a signed event cannot be replayed onto another intent). An unsigned event
 * stays valid (§3.4 backward compatibility). docs/identity.md.
 */
async function verifyProof(ctx: IntentsContext, intentId: string, actor: string, body: AppendEventBody): Promise<void> {
  if (!ctx.client) throw appError("SERVICE_UNAVAILABLE", "signed events cannot be verified: the intents service runs without a bus client");
  const { proof, ...signed } = body;
  const check = await ctx.client.request(vaultCommands.checkSignature, SERVICE_CALLER, {
    agent_id: actor,
    payload: { ...signed, intent_id: intentId },
    signature: proof!.signature,
    verification_method: proof!.verification_method ?? null,
  });
  if (!check.valid) throw appError("PROOF_INVALID", `the event's proof does not verify for agent ${actor}: ${check.reason}`, { agent_id: actor, has_identity: check.has_identity });
}

const SERVICE_CALLER = { principal: "service:intents", roles: ["admin" as const], actor: "system:intents", agent_id: null };

/** GET /intents/{id}/events: oldest first, after a sequence number or an event id. */
export async function listEvents(ctx: IntentsContext, intentId: string, query: ListEventsQuery): Promise<EventPage | RawJson<EventPage>> {
  const after = await resolveCursor(ctx, intentId, query.after);
  const filters: SQL[] = [eq(events.intentId, intentId), gt(events.sequence, after)];
  if (query.event_type) filters.push(eq(events.eventType, query.event_type));
  const tail = query.tail === "true";
  if (!tail && !query.event_type) {
    const page = await selectEventPageJson(ctx.query, intentId, after, query.limit);
    if (!page.fetched) await assertIntentExists(ctx.db, intentId);
    const cursor = String(page.last ?? after);
    return new RawJson<EventPage>(`{"events":${page.eventsJson},"next_cursor":"${cursor}","has_more":${page.hasMore}}`);
  }
  const rows = await ctx.db
    .select()
    .from(events)
    .where(and(...filters))
    .orderBy(tail ? desc(events.sequence) : asc(events.sequence))
    .limit(query.limit + 1);
  if (!rows.length) await assertIntentExists(ctx.db, intentId);
  // A tail page keeps its newest events when it must be cut to fit.
  const { items: page, cut } = fitPage(rows.slice(0, query.limit), (row) => Buffer.byteLength(row.wire));
  if (tail) page.reverse();
  const last = page[page.length - 1];
  return {
    events: page.map(toEvent),
    // Always a sequence number, so a client can resume after an empty page too.
    next_cursor: String(last ? last.sequence : after),
    has_more: !tail && (cut || rows.length > query.limit),
  };
}

async function resolveCursor(ctx: IntentsContext, intentId: string, after: string | undefined): Promise<number> {
  if (after === undefined || after === "") return 0;
  const sequence = sequenceCursor(after);
  if (sequence !== undefined) return sequence;
  if (!Uuid.safeParse(after).success) throw errors.validation("after must be a sequence number or an event id");
  const [row] = await ctx.db
    .select({ sequence: events.sequence })
    .from(events)
    .where(and(eq(events.intentId, intentId), eq(events.id, after)));
  if (row) return row.sequence;
  await assertIntentExists(ctx.db, intentId);
  throw errors.validation(`after names no event of intent ${intentId}: give a sequence number or an event id of this intent`);
}
