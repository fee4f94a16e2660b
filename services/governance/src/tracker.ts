import { SuspensionRecord, intentEvents } from "@intentmesh/contracts";
import { eventFamilyOn, eventOn, subscribe, type Bus, type TypedEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { GovernanceContext } from "./context";
import { inbox } from "./db/schema";
import { endTracking, trackSuspension, type SettledSuspensions } from "./tracking";

/**
 * Follows suspensions through the intents' own events (stream IM_INTENTS), whichever way they
 * began: POST /intents/{id}/suspend, or the official clients' status + `_suspension` patch
 * sequence (both end in one intent.suspended from the intents service). intent.suspended starts
 * tracking; intent.resumed, intent.suspension_expired and a status_changed that cancelled a
 * suspension stop it. Each effect commits with its inbox row: a redelivery applies nothing twice.
 */
export const TRACKER_DURABLE = "governance-suspensions";
export const CANCEL_TRACKER_DURABLE = "governance-suspension-cancels";

/** The suspension events of an intent's log (the family intent.* on subjects `…<id>.intent.<name>`). */
const suspensionLifecycle = [intentEvents.suspended, intentEvents.resumed, intentEvents.suspensionExpired];
type SuspensionEvent = TypedEvent<"intent", (typeof suspensionLifecycle)[number] | typeof intentEvents.statusChanged>;

export async function applySuspensionEvent(tx: Tx, event: SuspensionEvent, now: Date): Promise<void> {
  switch (event.event_type) {
    case intentEvents.suspended.name: {
      const record = SuspensionRecord.safeParse(event.payload.suspension);
      if (record.success) await trackSuspension(tx, event.intent_id, record.data, now);
      return;
    }
    case intentEvents.resumed.name:
      await endTracking(tx, event.payload.suspension_id, event.payload.resolution === "cancelled" ? "cancelled" : "responded", now);
      return;
    case intentEvents.suspensionExpired.name:
      await endTracking(tx, event.payload.suspension_id, "expired", now);
      return;
    case intentEvents.statusChanged.name: {
      const { resolution, suspension_id: suspensionId } = event.payload;
      if (resolution === "cancelled" && typeof suspensionId === "string") await endTracking(tx, suspensionId, "cancelled", now);
      return;
    }
  }
}

/**
 * Whether an event has nothing to apply, known without the database: a status_changed that
 * cancelled no suspension (most of them), a suspension start whose record does not parse, or a
 * start or end this process's own write already recorded (SettledSuspensions). Such events are
 * acknowledged without a transaction or an inbox row; applying them would change nothing.
 */
export function hasNothingToApply(event: SuspensionEvent, settled: SettledSuspensions): boolean {
  switch (event.event_type) {
    case intentEvents.suspended.name: {
      const record = SuspensionRecord.safeParse(event.payload.suspension);
      return !record.success || settled.isTracked(record.data.id);
    }
    case intentEvents.resumed.name:
    case intentEvents.suspensionExpired.name:
      return settled.isEnded(event.payload.suspension_id);
    case intentEvents.statusChanged.name: {
      const { resolution, suspension_id: suspensionId } = event.payload;
      return resolution !== "cancelled" || typeof suspensionId !== "string" || settled.isEnded(suspensionId);
    }
  }
  return false;
}

export async function startSuspensionTracker(ctx: GovernanceContext, bus: Bus): Promise<{ stop(): Promise<void> }> {
  const common = {
    db: ctx.db,
    inbox,
    skip: (event: SuspensionEvent) => hasNothingToApply(event, ctx.settled),
    handle: (tx: Tx, event: SuspensionEvent) => applySuspensionEvent(tx, event, ctx.clock.now()),
    logger: ctx.logger,
  };
  // The durable's filter has always been the whole intent.* family; its other members
  // (intent.ready, intent.budget_updated, ...) are acknowledged unapplied.
  const lifecycle = await subscribe(bus, eventFamilyOn(suspensionLifecycle, "intent", "intent."), { ...common, durable: TRACKER_DURABLE });
  const cancels = await subscribe(bus, eventOn(intentEvents.statusChanged, "intent"), { ...common, durable: CANCEL_TRACKER_DURABLE });
  return {
    stop: async () => {
      await lifecycle.stop();
      await cancels.stop();
    },
  };
}
