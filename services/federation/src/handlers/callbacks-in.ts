import { eq } from "drizzle-orm";
import { errors, federationEvents, parseJsonStrict, type SignedRequest } from "@intentmesh/contracts";
import { enqueueSystemEvents, validationError } from "@intentmesh/bus";
import type { FederationContext } from "../context";
import { dispatches, incomingCallbacks, outbox } from "../db/schema";
import { CallbackBody } from "../envelope";
import { federationEvent } from "../events";
import { federationErrors } from "../errors";
import { verifySignedRequest } from "../verify";
import { assertEnabled } from "./guards";

/** Which further event a callback adds to the origin intent's log, beside federation.callback. */
const FOLLOW_UP = {
  completed: federationEvents.completed,
  failed: federationEvents.failed,
  budget_warning: federationEvents.budgetWarning,
} as const;

/**
 * POST /api/v1/federation/callbacks/{dispatch_id}: the server we dispatched to reports a change
 * of the intent it created. Signed by that server (its did:web, checked like a receive), applied
 * once per idempotency key: federation.callback, and federation.completed / failed /
 * budget_warning when it says so, go into the origin intent's log.
 */
export async function receiveCallback(ctx: FederationContext, dispatchId: string, request: SignedRequest) {
  assertEnabled(ctx);
  const [row] = await ctx.db.select().from(dispatches).where(eq(dispatches.dispatchId, dispatchId));
  if (!row || row.status !== "accepted") throw errors.notFound("dispatch", dispatchId);
  const signature = await verifySignedRequest(ctx, request, `${ctx.identity.serverUrl}/api/v1/federation/callbacks/${dispatchId}`, row.targetServer);
  const parsed = CallbackBody.safeParse(parseJsonStrict(request.body, "the callback"));
  if (!parsed.success) throw validationError(parsed.error);
  const callback = parsed.data;
  if (callback.dispatch_id !== dispatchId || callback.remote_intent_id !== row.remoteIntentId) {
    throw federationErrors.signatureInvalid("the callback names another dispatch or intent than the one it was sent for");
  }
  if (request.headers["idempotency-key"] !== callback.idempotency_key) throw federationErrors.signatureInvalid("the signed Idempotency-Key differs from the callback's");
  const now = ctx.clock.now();
  const applied = await ctx.db.transaction(async (tx) => {
    const [fresh] = await tx
      .insert(incomingCallbacks)
      .values({ idempotencyKey: `${row.targetDid}|${callback.idempotency_key}`, dispatchId, eventType: callback.event_type, receivedAt: now })
      .onConflictDoNothing()
      .returning();
    if (!fresh) return false;
    const payload = {
      dispatch_id: dispatchId,
      callback_type: callback.event_type,
      target_server: row.targetServer,
      remote_intent_id: callback.remote_intent_id,
      remote_event: callback.event,
      signer: signature.keyid,
    };
    const events = [federationEvent(row.intentId, federationEvents.callback, row.targetDid, payload, now)];
    const followUp = FOLLOW_UP[callback.event_type as keyof typeof FOLLOW_UP];
    if (followUp) events.push(federationEvent(row.intentId, followUp, row.targetDid, payload, now));
    await enqueueSystemEvents(tx, outbox, events);
    return true;
  });
  if (applied) ctx.published();
  return { accepted: true as const, duplicate: !applied };
}
