import { eq } from "drizzle-orm";
import { DeliverPolicy } from "@nats-io/jetstream";
import { intentEventTypes, type Clock, isoTimestamp } from "@intentmesh/contracts";
import { eventsOfLog, subscribe, type Bus } from "@intentmesh/bus";
import type { Database } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import { inbox, outgoingCallbacks, receivedDispatches } from "./db/schema";
import type { CallbackBody } from "./envelope";

/** The callback an intent event of a received intent becomes, or null when the origin is not told of it. */
export function callbackTypeOf(event: { event_type: string; payload: Record<string, unknown> }): CallbackBody["event_type"] | null {
  if (event.event_type === intentEventTypes.statePatched) return "state_delta";
  if (event.event_type === intentEventTypes.budgetAlert) return "budget_warning";
  if (event.event_type === intentEventTypes.statusChanged) {
    if (event.payload.to === "completed") return "completed";
    if (event.payload.to === "abandoned") return "failed";
    return "status_changed";
  }
  return null;
}

/**
 * Consumes the intents' event stream durably (one durable shared by the replicas, idempotent
 * through the inbox) and, for intents this server created from a received dispatch, queues a
 * callback to the origin in the same transaction as the inbox row. Created with DeliverPolicy.New:
 * events from before federation existed concern no received intent.
 */
export async function startCallbackProjection(bus: Bus, db: Database, clock: Clock, logger: Logger, onQueued: () => void) {
  return subscribe(bus, eventsOfLog("intent"), {
    durable: "federation-callbacks",
    deliverPolicy: DeliverPolicy.New,
    db,
    inbox,
    logger,
    // Most of the log (task events, appended events) is never a callback: acknowledged without a transaction.
    skip: (event) => callbackTypeOf(event) === null,
    handle: async (tx, event) => {
      const type = callbackTypeOf(event);
      if (!type) return;
      const [received] = await tx.select().from(receivedDispatches).where(eq(receivedDispatches.localIntentId, event.intent_id));
      if (!received) return;
      const idempotencyKey = `callback:${received.dispatchId}:${event.id}`;
      const body: CallbackBody = {
        dispatch_id: received.dispatchId,
        event_type: type,
        remote_intent_id: event.intent_id,
        event: { id: event.id, event_type: event.event_type, payload: event.payload, created_at: event.created_at },
        idempotency_key: idempotencyKey,
        timestamp: isoTimestamp(clock.now()),
      };
      const now = clock.now();
      await tx
        .insert(outgoingCallbacks)
        .values({ idempotencyKey, receivedId: received.id, url: received.callbackUrl, body: JSON.stringify(body), nextAttemptAt: now, createdAt: now })
        .onConflictDoNothing();
    },
    afterCommit: onQueued,
  });
}
