import { intentEventSubject, intentEventTypes, IntentEvent, SuspensionRecord, streams, z } from "@intentmesh/contracts";
import { startDurableConsumer, type Bus } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { GovernanceContext } from "./context";
import { inbox } from "./db/schema";
import { endTracking, trackSuspension } from "./tracking";

/**
 * Follows suspensions through the intents' own events (stream IM_INTENTS), whichever way they
 * began: POST /intents/{id}/suspend, or the official clients' status + `_suspension` patch
 * sequence (both end in one intent.suspended from the intents service). intent.suspended starts
 * tracking; intent.resumed, intent.suspension_expired and a status_changed that cancelled a
 * suspension stop it. Each effect commits with its inbox row: a redelivery applies nothing twice.
 */
export const TRACKER_DURABLE = "governance-suspensions";
export const CANCEL_TRACKER_DURABLE = "governance-suspension-cancels";

const SuspensionEvent = IntentEvent.extend({ payload: z.record(z.string(), z.unknown()) });
type SuspensionEvent = z.infer<typeof SuspensionEvent>;

export async function applySuspensionEvent(tx: Tx, event: SuspensionEvent, now: Date): Promise<void> {
  const payload = event.payload;
  switch (event.event_type) {
    case intentEventTypes.suspended: {
      const record = SuspensionRecord.safeParse(payload.suspension);
      if (record.success) await trackSuspension(tx, event.intent_id, record.data, now);
      return;
    }
    case intentEventTypes.resumed:
      if (typeof payload.suspension_id === "string") await endTracking(tx, payload.suspension_id, payload.resolution === "cancelled" ? "cancelled" : "responded", now);
      return;
    case intentEventTypes.suspensionExpired:
      if (typeof payload.suspension_id === "string") await endTracking(tx, payload.suspension_id, "expired", now);
      return;
    case intentEventTypes.statusChanged:
      if (payload.resolution === "cancelled" && typeof payload.suspension_id === "string") await endTracking(tx, payload.suspension_id, "cancelled", now);
      return;
  }
}

export async function startSuspensionTracker(ctx: GovernanceContext, bus: Bus): Promise<{ stop(): Promise<void> }> {
  const common = {
    stream: streams.intents.name,
    db: ctx.db,
    inbox,
    parse: (data: unknown) => SuspensionEvent.parse(data),
    handle: (tx: Tx, event: SuspensionEvent) => applySuspensionEvent(tx, event, ctx.clock.now()),
    logger: ctx.logger,
  };
  // intent.suspended, intent.resumed, intent.suspension_expired are subjects `…<id>.intent.<name>`.
  const lifecycle = await startDurableConsumer(bus, { ...common, durable: TRACKER_DURABLE, filterSubject: intentEventSubject("*", "intent.>") });
  const cancels = await startDurableConsumer(bus, { ...common, durable: CANCEL_TRACKER_DURABLE, filterSubject: intentEventSubject("*", intentEventTypes.statusChanged) });
  return {
    stop: async () => {
      await lifecycle.stop();
      await cancels.stop();
    },
  };
}
