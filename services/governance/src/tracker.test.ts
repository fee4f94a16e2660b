import { describe, expect, it } from "vitest";
import { intentEvents } from "@intentmesh/contracts";
import { hasNothingToApply } from "./tracker";
import { SettledSuspensions } from "./tracking";

const ID = "6f1c2a44-3d1e-4b8a-9f0e-1a2b3c4d5e6f";
const OTHER = "7a2d3b55-4e2f-4c9b-8a1f-2b3c4d5e6f70";
const record = { id: ID, question: "Ship?", response_type: "confirm", fallback_policy: "fail", suspended_at: "2026-11-26T07:00:00.000Z", expires_at: "2026-11-26T08:00:00.000Z" };
const envelope = { id: OTHER, intent_id: OTHER, sequence: 2, actor: "agent", created_at: "2026-11-26T07:00:00.000Z" };
// Only the fields hasNothingToApply reads: the event type and the payload.
const event = (event_type: string, payload: Record<string, unknown>) => ({ ...envelope, event_type, payload }) as never;

describe("the suspension tracker acknowledges without a transaction what it has nothing to apply", () => {
  it("a status_changed that cancelled no suspension, and not one that did", () => {
    const settled = new SettledSuspensions();
    expect(hasNothingToApply(event(intentEvents.statusChanged.name, { from: "active", to: "suspended_awaiting_input", reason: null, version: 2, suspension_id: ID }), settled)).toBe(true);
    expect(hasNothingToApply(event(intentEvents.statusChanged.name, { from: "suspended_awaiting_input", to: "active", reason: "responded", version: 3, suspension_id: ID }), settled)).toBe(true);
    expect(hasNothingToApply(event(intentEvents.statusChanged.name, { from: "suspended_awaiting_input", to: "abandoned", reason: null, version: 3, suspension_id: ID, resolution: "cancelled" }), settled)).toBe(false);
  });

  it("a start or an end only when this process's own write already recorded it", () => {
    const settled = new SettledSuspensions();
    const suspended = event(intentEvents.suspended.name, { suspension: record, version: 2 });
    const resumed = event(intentEvents.resumed.name, { suspension_id: ID, resolution: "responded", version: 3 });
    const expired = event(intentEvents.suspensionExpired.name, { suspension_id: ID, resolution: "expired", version: 3 });
    expect([hasNothingToApply(suspended, settled), hasNothingToApply(resumed, settled), hasNothingToApply(expired, settled)]).toEqual([false, false, false]);
    settled.tracked(ID);
    expect([hasNothingToApply(suspended, settled), hasNothingToApply(resumed, settled)]).toEqual([true, false]);
    settled.ended(ID);
    expect([hasNothingToApply(suspended, settled), hasNothingToApply(resumed, settled), hasNothingToApply(expired, settled)]).toEqual([true, true, true]);
    expect(hasNothingToApply(event(intentEvents.suspended.name, { suspension: { ...record, id: OTHER }, version: 2 }), settled)).toBe(false);
  });

  it("forgets the oldest ids past its limit: a forgotten id is applied the usual way", () => {
    const settled = new SettledSuspensions(2);
    settled.ended(ID);
    settled.ended(OTHER);
    settled.ended("8b3e4c66-5f30-4dac-9b20-3c4d5e6f7081");
    expect([settled.isEnded(ID), settled.isEnded(OTHER)]).toEqual([false, true]);
  });
});
