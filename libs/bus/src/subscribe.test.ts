import { describe, expect, it } from "vitest";
import { agentEvents, intentEvents, taskEvents, vaultEventSubject, vaultEvents } from "@intentmesh/contracts";
import { eventFamilyOn, eventOn, eventsOfLog } from "./subscribe";

/**
 * A durable keeps the filter it was created with: the filters the sources build must stay the
 * strings the consumers were created with before subscribe() existed, or a running deployment's
 * durables would no longer match their service's code.
 */
describe("subscribe's subject filters", () => {
  it("equal the filters of the existing durables", () => {
    expect(eventOn(intentEvents.statusChanged, "intent").filterSubject).toBe("im.evt.intent.*.status_changed"); // channels-intent-status
    expect(eventFamilyOn(taskEvents, "intent", "task.").filterSubject).toBe("im.evt.intent.*.task.>"); // channels-task-ends, memory-task-events
    expect(eventOn(agentEvents.lifecycle, "agent").filterSubject).toBe("im.evt.agent.*.agent.lifecycle"); // channels/intents/vault/triggers lifecycle
    expect(eventOn(intentEvents.agentAssigned, "intent").filterSubject).toBe("im.evt.intent.*.agent_assigned"); // registry-agent-assigned-v2
    expect(eventOn(intentEvents.agentUnassigned, "intent").filterSubject).toBe("im.evt.intent.*.agent_unassigned"); // registry-agent-unassigned-v2
    expect(eventsOfLog("intent").filterSubject).toBe("im.evt.intent.>"); // triggers-intent-events, federation-callbacks
    expect(eventFamilyOn([intentEvents.suspended, intentEvents.resumed, intentEvents.suspensionExpired], "intent", "intent.").filterSubject).toBe("im.evt.intent.*.intent.>"); // governance-suspensions
    // intents-graph-readiness, intents-portfolio-projection-v2, governance-suspension-cancels: status_changed, above.
  });

  it("refuses a definition on a log it does not go to, and a family member outside the prefix", () => {
    expect(() => eventOn(intentEvents.statusChanged, "agent" as "intent")).toThrow(/does not go to the agent log/);
    expect(() => eventFamilyOn([taskEvents.completed, intentEvents.statusChanged], "intent", "task.")).toThrow(/not in the family/);
  });

  it("match the vault's subjects, which carry a kind and an id (im.evt.vault.<kind>.<id>.<name>)", () => {
    const matches = (filter: string, subject: string) => {
      const f = filter.split("."), s = subject.split(".");
      return f.every((token, i) => token === ">" ? s.length > i : token === "*" ? s[i] !== undefined : token === s[i]) && (f.at(-1) === ">" || f.length === s.length);
    };
    const dormant = eventOn(vaultEvents.grantDormant, "vault").filterSubject;
    expect(dormant).toBe("im.evt.vault.*.*.grant.dormant");
    expect(matches(dormant, vaultEventSubject(vaultEvents.grantDormant, "g-1"))).toBe(true);
    expect(matches(dormant, vaultEventSubject(vaultEvents.grantAwake, "g-1"))).toBe(false);
    const grants = eventFamilyOn([vaultEvents.grantCreated, vaultEvents.grantRevoked], "vault", "grant.").filterSubject;
    expect(matches(grants, vaultEventSubject(vaultEvents.grantRevoked, "g-1"))).toBe(true);
    expect(matches(grants, vaultEventSubject(vaultEvents.credentialRevoked, "c-1"))).toBe(false);
    expect(matches(eventOn(vaultEvents.identityRotated, "vault").filterSubject, vaultEventSubject(vaultEvents.identityRotated, "agent.one"))).toBe(true);
    expect(eventsOfLog("vault").filterSubject).toBe("im.evt.vault.>");
  });
});

const envelope = {
  id: "7b0b4c52-2d7e-4b8e-9a57-0c1f6f1c1c11",
  intent_id: "0f6a3d9e-3b6b-4bb5-9a9f-6a1c2f6f2a22",
  sequence: 3,
  actor: "agent-1",
  created_at: "2026-01-01T00:00:00.000Z",
  previous_event_hash: null,
  event_hash: `sha256:${"A".repeat(43)}`,
};

describe("subscribe's parsing", () => {
  it("hands over the payload parsed by the definition's schema, and refuses one that does not match it", () => {
    const source = eventOn(intentEvents.statusChanged, "intent");
    const event = source.parse({ ...envelope, event_type: "status_changed", payload: { from: "active", to: "completed", reason: null, version: 4 } });
    expect(event?.payload.to).toBe("completed");
    expect(() => source.parse({ ...envelope, event_type: "status_changed", payload: { from: "active" } })).toThrow();
  });

  it("answers null for a name of the filter no definition has, and every event for a whole log", () => {
    const family = eventFamilyOn([taskEvents.completed], "intent", "task.");
    expect(family.parse({ ...envelope, event_type: "task.claimed", payload: {} })).toBeNull();
    // Before any schema runs: what a consumer ignores costs it no parsing (channels-task-ends sees every task event).
    expect(family.parse({ event_type: "task.claimed" })).toBeNull();
    expect(() => family.parse({ event_type: "task.completed" })).toThrow();
    expect(eventsOfLog("intent").parse({ ...envelope, event_type: "comment", payload: { text: "hi" } })?.payload).toEqual({ text: "hi" });
  });
});
