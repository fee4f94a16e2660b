import { describe, expect, it } from "vitest";
import { AgentMemoryEvent, SystemEvent, memoryEvents, systemEventPayloadSchema } from "@intentmesh/contracts";
import { entryEvent, memoryEvent, memoryEventMessages } from "./events";
import type { EntryRow } from "./mapping";

const at = new Date("2026-01-01T00:00:00Z");
const intentId = "0f6a3d9e-3b6b-4bb5-9a9f-6a1c2f6f2a22";
const row = {
  id: "7b0b4c52-2d7e-4b8e-9a57-0c1f6f1c1c11",
  agentId: "agent-1",
  namespace: "notes",
  key: "k",
  value: { secret: "never in an event" },
  valueBytes: 30,
  memoryType: "episodic",
  taskId: null,
  intentId: null,
  tags: ["a"],
  ttl: null,
  version: 2,
  createdAt: at,
  updatedAt: at,
  lastUsedAt: at,
  expiresAt: null,
  pinned: null,
  priority: null,
  curatedBy: null,
  sensitivity: null,
} satisfies EntryRow;
const snapshot = [{ namespace: "notes", key: "k", value: { x: 1 }, tags: [] }];

/**
 * The memory service's writer is typed by the memory events' definitions (libs/contracts
 * event-catalogue.ts memoryEvents). The `@ts-expect-error` lines are misuses that must not compile
 * (`pnpm typecheck` fails on an unused directive).
 */
describe("memory events", () => {
  it("take the name from the definition and data of its schema's shape", () => {
    const context = { agentId: "agent-1", intentId, taskId: null, actor: "agent-1" };
    expect(memoryEvent(memoryEvents.archived, { ...context, data: { entries_archived: 1, snapshot } }).definition.name).toBe("memory.archived");
    // @ts-expect-error an entry event's data never carries the value
    memoryEvent(memoryEvents.updated, { ...context, data: { entry_id: "e", namespace: "n", key: "k", memory_type: "working", version: 1, previous_version: null, tags: [], value: 1 } });
    // @ts-expect-error memory.archived carries a snapshot, not an entry's coordinates
    memoryEvent(memoryEvents.archived, { ...context, data: { entry_id: "e", namespace: "n", key: "k", memory_type: "working", version: 1, previous_version: null, tags: [] } });
    // @ts-expect-error entryEvent builds entry events only
    entryEvent(memoryEvents.archived, row, null, "agent-1");
  });

  it("go to the intent's log as system events with an intent, to im.evt.memory.<agent>.<name> without, each matching its catalogued schema", () => {
    const [onAgent, onIntent, archivedPart] = memoryEventMessages(
      [
        entryEvent(memoryEvents.evicted, row, 2, "system:memory"),
        entryEvent(memoryEvents.created, { ...row, intentId }, null, "agent-1"),
        memoryEvent(memoryEvents.archived, { agentId: "agent-1", intentId, taskId: intentId, actor: "agent-1", data: { entries_archived: 1, snapshot, part: 2, parts: 3 } }),
      ],
      at,
    );
    expect(onAgent!.subject).toBe("im.evt.memory.agent-1.memory.evicted");
    const agentEvent = AgentMemoryEvent.parse(onAgent!.payload);
    expect(agentEvent.event_type).toBe("memory.evicted");
    expect(memoryEvents.evicted.payload.safeParse(agentEvent.payload).success).toBe(true);
    expect(JSON.stringify(agentEvent)).not.toContain("never in an event");
    for (const message of [onIntent!, archivedPart!]) {
      const event = SystemEvent.parse(message.payload);
      expect(event).toMatchObject({ source: "memory", intent_id: intentId });
      expect(systemEventPayloadSchema(event.event_type)!.safeParse(event.payload).success, event.event_type).toBe(true);
    }
    expect(SystemEvent.parse(archivedPart!.payload).event_type).toBe("memory.archived");
  });
});
