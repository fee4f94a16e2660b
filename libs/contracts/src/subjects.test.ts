import { describe, expect, it } from "vitest";
import { intentEventFilter, intentEventMsgId, intentEventSubject, intentEventTypes, isReservedEventType } from "./subjects";

describe("isReservedEventType", () => {
  it.each(["intent.created", "intent.suspended", "intent.resumed", "lease.acquired", "lease.expired", "budget_alert"])(
    "reserves %j",
    (type) => {
      expect(isReservedEventType(type)).toBe(true);
    },
  );

  it.each(["engagement.decision", "note", "intentional", "leases", "budget_alerts", "my.intent.created"])("does not reserve %j", (type) => {
    expect(isReservedEventType(type)).toBe(false);
  });

  it("reserves every event type the server emits on intents", () => {
    for (const type of Object.values(intentEventTypes)) expect(isReservedEventType(type)).toBe(true);
  });
});

describe("intent event subjects", () => {
  it("puts the event type after the intent id, under im.evt.intent", () => {
    expect(intentEventSubject("i1", "intent.created")).toBe("im.evt.intent.i1.intent.created");
    expect(intentEventFilter("i1")).toBe("im.evt.intent.i1.>");
    expect(intentEventSubject("i1", "note").startsWith(intentEventFilter("i1").slice(0, -1))).toBe(true);
  });

  it("derives a message id per intent and sequence", () => {
    expect(intentEventMsgId("i1", 3)).toBe("intent:i1:e3");
    expect(intentEventMsgId("i1", 3)).not.toBe(intentEventMsgId("i1", 4));
  });
});
