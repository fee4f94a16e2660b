import { describe, expect, it } from "vitest";
import { eventCatalogue, findEvent, isSystemIntentEventType, systemEventPayloadSchema, systemIntentEventTypes } from "./event-catalogue";
import { agentEventTypes, intentEventTypes, isReservedEventType, portfolioEventTypes } from "./event-types";
import { federationEventTypes, federationEvents, governanceEvents, memoryEventTypes, memoryEvents, systemEvents } from "./event-catalogue";
import { agentEvents, intentEvents, portfolioEvents } from "./event-types";
import { taskEvents } from "./tasks";
import { planEvents } from "./plans";
import { vaultEventTypes, vaultEvents } from "./vault";
import { triggerEventAliases } from "./triggers";

const memoryData = { entry_id: "e1", namespace: "ns", key: "k", memory_type: "working", version: 2, previous_version: 1, tags: ["a"] };
const memoryEvent = { agent_id: "agent-1", intent_id: "i1", task_id: null, data: memoryData };

describe("event catalogue", () => {
  it("holds every definition of every group, and the name maps are the groups' names", () => {
    for (const group of [intentEvents, portfolioEvents, agentEvents, taskEvents, planEvents, systemEvents, memoryEvents, federationEvents, governanceEvents, vaultEvents]) {
      for (const definition of Object.values(group)) expect(eventCatalogue, definition.name).toContain(definition);
    }
    expect(intentEventTypes.statusChanged).toBe(intentEvents.statusChanged.name);
    expect(agentEventTypes.assigned).toBe(intentEvents.agentAssigned.name);
    expect(memoryEventTypes.archived).toBe("memory.archived");
    expect(Object.keys(intentEventTypes)).toEqual(Object.keys(intentEvents));
    expect(findEvent("intent", "task.completed")).toBe(taskEvents.completed);
    expect(findEvent("intent", "plan.paused")).toBe(planEvents.paused);
    expect(findEvent("agent", "task.completed")).toBeUndefined();
  });

  it("lists every name of event-types and federation exactly once per log", () => {
    for (const name of Object.values(intentEventTypes)) expect(findEvent("intent", name)?.name).toBe(name);
    for (const name of Object.values(portfolioEventTypes)) expect(findEvent("portfolio", name)?.name).toBe(name);
    for (const name of Object.values(agentEventTypes)) expect(findEvent("agent", name)?.name).toBe(name);
    for (const name of Object.values(federationEventTypes)) expect(findEvent("intent", name)?.system).toBe(true);
    for (const name of Object.values(vaultEventTypes)) expect(findEvent("vault", name)?.name).toBe(name);
    const keys = eventCatalogue.flatMap((event) => event.logs.map((log) => `${log}:${event.name}`));
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("knows the system event types other services put into an intent's log, and only those", () => {
    for (const name of [
      "channel_message",
      "memory.created",
      "memory.updated",
      "memory.deleted",
      "memory.archived",
      "memory.evicted",
      "memory.expired",
      "governance.approval_granted",
      "governance.approval_denied",
      "governance.policy_set",
      "governance.policy_removed",
      "engagement.decision",
      "intent.suspension_renotified",
      "intent.suspension_escalated",
      "federation.dispatched",
      "federation.received",
      "federation.callback",
      "federation.budget_warning",
      "federation.completed",
      "federation.failed",
      "tool.invoked",
      "trigger.fired",
    ]) {
      expect(isSystemIntentEventType(name), name).toBe(true);
      expect(systemEventPayloadSchema(name), name).toBeDefined();
    }
    expect(Object.values(systemIntentEventTypes)).toHaveLength(22);
    for (const name of ["status_changed", "intent.suspended", "agent.lifecycle", "comment", "memory.stolen"]) {
      expect(isSystemIntentEventType(name), name).toBe(false);
      expect(systemEventPayloadSchema(name), name).toBeUndefined();
    }
  });

  it("keeps every system event name reserved from clients", () => {
    for (const name of Object.values(systemIntentEventTypes)) {
      if (name === "engagement.decision") continue; // the clients' SDK appends it itself (event-types.ts)
      expect(isReservedEventType(name), name).toBe(true);
    }
  });

  it("checks channel_message against the spec's shape", () => {
    const schema = systemEventPayloadSchema("channel_message")!;
    const ok = { channel_id: "c1", channel_name: "ops", message_id: "m1", message_type: "request", to: null, payload: { a: 1 } };
    expect(schema.safeParse(ok).success).toBe(true);
    expect(schema.safeParse({ ...ok, to: "agent-2" }).success).toBe(true);
    const { channel_name: _dropped, ...missing } = ok;
    expect(schema.safeParse(missing).success).toBe(false);
  });

  it("memory events carry the entry's coordinates and never its value", () => {
    const schema = systemEventPayloadSchema("memory.updated")!;
    expect(schema.safeParse(memoryEvent).success).toBe(true);
    expect(schema.safeParse({ ...memoryEvent, data: { ...memoryData, value: "secret" } }).success).toBe(false);
    const { version: _v, ...noVersion } = memoryData;
    expect(schema.safeParse({ ...memoryEvent, data: noVersion }).success).toBe(false);
  });

  it("memory.archived carries the snapshot with values", () => {
    const schema = systemEventPayloadSchema("memory.archived")!;
    const data = { entries_archived: 1, snapshot: [{ namespace: "ns", key: "k", value: { x: 1 }, tags: [] }] };
    expect(schema.safeParse({ ...memoryEvent, data }).success).toBe(true);
    // A snapshot too large for one message is written in parts (services/memory task-consumer.ts).
    expect(schema.safeParse({ ...memoryEvent, data: { ...data, part: 2, parts: 3 } }).success).toBe(true);
    expect(schema.safeParse({ ...memoryEvent, data: { ...data, part: 0, parts: 3 } }).success).toBe(false);
    expect(schema.safeParse({ ...memoryEvent, data: { ...data, entries_archived: 1.5 } }).success).toBe(false);
    expect(schema.safeParse({ ...memoryEvent, data: memoryData }).success).toBe(false);
  });

  it("federation payloads match what the federation service writes", () => {
    const callback = { dispatch_id: "d1", callback_type: "completed", target_server: "https://b", remote_intent_id: "r1", remote_event: {}, signer: "did:web:b#k" };
    for (const name of ["federation.callback", "federation.completed", "federation.failed", "federation.budget_warning"]) {
      expect(systemEventPayloadSchema(name)!.safeParse(callback).success, name).toBe(true);
    }
    const dispatchFailed = { dispatch_id: "d1", stage: "dispatch", target_server: "https://b", agent_id: null, code: "PEER_UNREACHABLE", message: "no", attempt: 3 };
    expect(systemEventPayloadSchema("federation.failed")!.safeParse(dispatchFailed).success).toBe(true);
    expect(systemEventPayloadSchema("federation.dispatched")!.safeParse({ dispatch_id: "d1" }).success).toBe(false);
  });

  it("pins the payloads the spec does not show to what the services write, letting later fields through", () => {
    const schema = systemEventPayloadSchema("governance.policy_set")!;
    expect(schema.safeParse({ governance_policy: { completion_mode: "auto" }, version: 3, later_field: 1 }).success).toBe(true);
    expect(schema.safeParse({ anything: 1 }).success).toBe(false);
    expect(schema.safeParse("text").success).toBe(false);
    const granted = systemEventPayloadSchema("governance.approval_granted")!;
    expect(granted.safeParse({ approval_id: "a", action: "deploy", decision: "approved", requested_by: "w", decided_by: "op" }).success).toBe(true);
    expect(granted.safeParse({ approval_id: "a", action: "deploy", decision: "maybe", requested_by: "w", decided_by: "op" }).success).toBe(false);
  });

  it("defines the vault's own events, with tool.invoked one definition on the vault's log and the intent's", () => {
    expect(Object.keys(vaultEventTypes)).toEqual(Object.keys(vaultEvents));
    expect(vaultEventTypes.grantDormant).toBe("grant.dormant");
    expect(findEvent("intent", "tool.invoked")).toBe(vaultEvents.toolInvoked);
    expect(findEvent("vault", "tool.invoked")).toBe(vaultEvents.toolInvoked);
    expect(systemEvents.toolInvoked).toBe(vaultEvents.toolInvoked);
    for (const definition of Object.values(vaultEvents)) {
      expect(isReservedEventType(definition.name), definition.name).toBe(true);
      if (definition !== vaultEvents.toolInvoked) expect(findEvent("intent", definition.name), definition.name).toBeUndefined();
    }
    const revoked = vaultEvents.grantRevoked.payload;
    expect(revoked.safeParse({ grant_id: "g", reason: "cascade", cascade_count: 0 }).success).toBe(true);
    expect(revoked.safeParse({ grant_id: "g", reason: "bored", cascade_count: 0 }).success).toBe(false);
    const rotated = vaultEvents.identityRotated.payload;
    expect(rotated.safeParse({ agent_id: "a", public_key: "k", did: "did:key:z", previous_public_key: "o", overlap_until: "2026-01-01T00:00:00Z" }).success).toBe(true);
    expect(rotated.safeParse({ agent_id: "a", public_key: "k", did: "did:key:z" }).success).toBe(false);
  });

  it("keeps the triggers' RFC aliases apart from every name the server writes, and reserved from clients", () => {
    for (const alias of Object.values(triggerEventAliases)) {
      expect(eventCatalogue.some((definition) => definition.name === alias), alias).toBe(false);
      expect(isReservedEventType(alias), alias).toBe(true);
    }
  });

  it("pins every event type the server writes itself: none is left as an open object", () => {
    for (const definition of eventCatalogue) {
      expect(definition.payload.safeParse({}).success, `${definition.name} accepts an empty payload`).toBe(false);
    }
  });
});
