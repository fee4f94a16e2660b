import { describe, expect, it } from "vitest";
import { agentEvents, intentEvents, systemEvents, taskEvents, type IntentStatus } from "@intentmesh/contracts";
import type { Database, InboxTable } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import { newEvent } from "./event-log";
import type { Bus } from "./connection";
import { eventFamilyOn, eventOn, subscribe, type TypedEvent } from "./subscribe";
import { newSystemEvent } from "./system-events";

/**
 * Type-level tests, compiled by `pnpm typecheck`: each `@ts-expect-error` line is a misuse that
 * must not compile (an unused directive is itself an error, so a rule that stops holding fails
 * the typecheck). The run-time expectations only keep vitest from seeing an empty test.
 */
describe("typed events", () => {
  it("writers take the name from the definition and the payload of its shape", () => {
    const ok = newEvent(intentEvents.statusChanged, "agent-1", { from: "active", to: "completed", reason: null, version: 2 });
    expect(ok.eventType).toBe("status_changed");
    // @ts-expect-error a payload without the schema's required fields
    newEvent(intentEvents.statusChanged, "agent-1", { from: "active" });
    // @ts-expect-error a field of the wrong type
    newEvent(intentEvents.leaseReleased, "agent-1", { lease_id: "l", agent_id: "a", scope: "s", reason: "stolen" });
    // @ts-expect-error a misspelled event has no definition
    expect(() => newEvent(intentEvents.statusChange, "agent-1", {})).toThrow(TypeError);
    // @ts-expect-error a task event's payload is the task schema's, not another event's
    newEvent(taskEvents.completed, "agent-1", { task_id: "t" });
  });

  it("system events are built from system definitions only", () => {
    const at = new Date(0);
    const built = newSystemEvent(systemEvents.channelMessage, {
      source: "channels",
      intentId: "i",
      actor: "a",
      at,
      payload: { channel_id: "c", channel_name: "n", message_id: "m", message_type: "notify", to: null, payload: {} },
    });
    expect(built.event_type).toBe("channel_message");
    // @ts-expect-error an intents-service event is not a system event
    newSystemEvent(intentEvents.statusChanged, { source: "channels", intentId: "i", actor: "a", at, payload: { from: "a", to: "b", reason: null, version: 1 } });
    // @ts-expect-error the payload of a system event is its schema's
    newSystemEvent(systemEvents.memoryCreated, { source: "memory", intentId: "i", actor: "a", at, payload: { data: {} } });
  });

  it("subscribers get a typed name and payload, and only on the definition's logs", () => {
    const lifecycle = (event: TypedEvent<"agent", typeof agentEvents.lifecycle>): string => {
      const name: "agent.lifecycle" = event.event_type;
      // @ts-expect-error the payload's fields are typed (new_status is a string)
      const wrong: number = event.payload.new_status;
      return `${name}${wrong}${event.agent_id}`;
    };
    expect(typeof lifecycle).toBe("function");
    // @ts-expect-error status_changed goes to the intent log only
    expect(() => eventOn(intentEvents.statusChanged, "agent")).toThrow();
    const family = eventFamilyOn(taskEvents, "intent", "task.");
    const memoryPolicyOf = (event: NonNullable<ReturnType<typeof family.parse>>) =>
      // @ts-expect-error only task.completed / failed / cancelled carry memory_policy: narrow by name first
      event.payload.memory_policy;
    expect(typeof memoryPolicyOf).toBe("function");
  });

  it("subscribe hands the handler the source's typed event (a bare definition means its first log)", () => {
    // Compiled, not run: it would need a bus.
    const follow = (bus: Bus, db: Database, inbox: InboxTable, logger: Logger) => {
      void subscribe(bus, intentEvents.statusChanged, {
        durable: "d",
        db,
        inbox,
        logger,
        handle: async (_tx, event) => {
          const to: IntentStatus = event.payload.to;
          // @ts-expect-error an intent event's envelope has intent_id, not agent_id
          void event.agent_id;
          void to;
        },
      });
      void subscribe(bus, eventFamilyOn(taskEvents, "intent", "task."), {
        durable: "d",
        db,
        inbox,
        logger,
        handle: async (_tx, event) => {
          if (event.event_type === taskEvents.completed.name) void event.payload.memory_policy.archive_on_completion;
        },
      });
    };
    expect(typeof follow).toBe("function");
  });
});
