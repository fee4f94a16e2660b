import { SuspensionRecord, intentEvents } from "@intentmesh/contracts";
import { eventFamilyOn, eventOn, subscribe, type Bus, type TypedEvent } from "@intentmesh/bus";
import type { Queryable, Tx } from "@intentmesh/db";
import type { GovernanceContext } from "./context";
import { inbox } from "./db/schema";
import { endTracking, trackSuspension, type SettledSuspensions } from "./tracking";

/**
 * Follows suspensions through the intents' own events (stream IM_INTENTS), whichever way they
 * began: POST /intents/{id}/suspend, or the official clients' status + `_suspension` patch
 * sequence (both end in one intent.suspended from the intents service). intent.suspended starts
 * tracking; intent.resumed, intent.suspension_expired and a status_changed that cancelled a
 * suspension stop it.
 *
 * Each effect is one statement that is idempotent on its own (the insert leaves a row already
 * there, an end changes only a waiting row, and rows never go back to waiting), so it is applied
 * alone, with no transaction or inbox row (DurableConsumerOptions.applyAlone): a redelivery runs
 * it again and changes nothing. An effect that cannot be applied so goes the usual way, in a
 * transaction with its inbox row. Events with nothing to apply are acknowledged at once
 * (hasNothingToApply).
 */
export const TRACKER_DURABLE = "governance-suspensions";
export const CANCEL_TRACKER_DURABLE = "governance-suspension-cancels";

/** The suspension events of an intent's log (the family intent.* on subjects `…<id>.intent.<name>`). */
const suspensionLifecycle = [intentEvents.suspended, intentEvents.resumed, intentEvents.suspensionExpired];
type SuspensionEvent = TypedEvent<"intent", (typeof suspensionLifecycle)[number] | typeof intentEvents.statusChanged>;

/**
 * Applies an event's effect on `db` (a transaction, or the database for one statement alone).
 * `settled`: the facts to remember once the statement has committed, only where it runs alone.
 */
export async function applySuspensionEvent(db: Queryable, event: SuspensionEvent, now: Date, settled?: SettledSuspensions): Promise<void> {
  const end = async (suspensionId: string, status: "responded" | "expired" | "cancelled") => {
    if ((await endTracking(db, suspensionId, status, now)) && settled) settled.ended(suspensionId);
  };
  switch (event.event_type) {
    case intentEvents.suspended.name: {
      const record = SuspensionRecord.safeParse(event.payload.suspension);
      if (!record.success) return;
      await trackSuspension(db, event.intent_id, record.data, now);
      settled?.tracked(record.data.id);
      return;
    }
    case intentEvents.resumed.name:
      return end(event.payload.suspension_id, event.payload.resolution === "cancelled" ? "cancelled" : "responded");
    case intentEvents.suspensionExpired.name:
      return end(event.payload.suspension_id, "expired");
    case intentEvents.statusChanged.name: {
      const { resolution, suspension_id: suspensionId } = event.payload;
      if (resolution === "cancelled" && typeof suspensionId === "string") await end(suspensionId, "cancelled");
      return;
    }
  }
}

/**
 * Whether an event has nothing to apply, known without the database: a status_changed that
 * cancelled no suspension (most of them), a suspension start whose record does not parse, or a
 * start or end this process already recorded (SettledSuspensions: by POST /suspend or respond, or
 * by this tracker). Such events are acknowledged at once; applying them would change nothing.
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
    applyAlone: async (event: SuspensionEvent) => {
      await applySuspensionEvent(ctx.db, event, ctx.clock.now(), ctx.settled);
      return true;
    },
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
