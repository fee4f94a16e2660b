import { describe, expect, it } from "vitest";
import { intentEventFilter, intentEventMsgId, intentEventSubject } from "./subjects";
import { agentEventTypes, intentEventTypes, isReservedEventType, portfolioEventTypes } from "./event-types";
import { federationEventTypes } from "./event-catalogue";
import { PLAN_EVENT_TYPES } from "./plans";

describe("isReservedEventType", () => {
  it.each(["intent_created", "intent.suspended", "intent.resumed", "lease_acquired", "lease.expired", "budget_alert", "state_patched", "added_to_portfolio", "agent_assigned", "channel_message", "task.created"])(
    "reserves %j",
    (type) => {
      expect(isReservedEventType(type)).toBe(true);
    },
  );

  it.each(["engagement.decision", "note", "intentional", "leases", "budget_alerts", "my.intent.created", "comment", "failure_recorded"])("does not reserve %j", (type) => {
    expect(isReservedEventType(type)).toBe(false);
  });

  it("reserves the federation. namespace: every federation event, and any name a client could invent in it", () => {
    for (const type of [...Object.values(federationEventTypes), "federation.forged", "federation.dispatched.x"]) expect(isReservedEventType(type)).toBe(true);
    expect(isReservedEventType("federationist")).toBe(false);
  });

  it("reserves plan.*: the plan events (checkpoint decisions among them) are the server's", () => {
    for (const type of [...PLAN_EVENT_TYPES, "plan.checkpoint_forged"]) expect(isReservedEventType(type)).toBe(true);
    expect(isReservedEventType("planning")).toBe(false);
  });

  it("reserves every event type the server emits on intents, portfolios and agents", () => {
    for (const type of [...Object.values(intentEventTypes), ...Object.values(portfolioEventTypes), ...Object.values(agentEventTypes)]) {
      expect(isReservedEventType(type)).toBe(true);
    }
  });
});

describe("intent event subjects", () => {
  it("puts the event type after the intent id, under im.evt.intent", () => {
    expect(intentEventSubject("i1", "intent_created")).toBe("im.evt.intent.i1.intent_created");
    expect(intentEventFilter("i1")).toBe("im.evt.intent.i1.>");
    expect(intentEventSubject("i1", "note").startsWith(intentEventFilter("i1").slice(0, -1))).toBe(true);
  });

  it("derives a message id per intent and sequence", () => {
    expect(intentEventMsgId("i1", 3)).toBe("intent:i1:e3");
    expect(intentEventMsgId("i1", 3)).not.toBe(intentEventMsgId("i1", 4));
  });
});
