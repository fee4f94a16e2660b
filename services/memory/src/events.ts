import { randomUUID } from "node:crypto";
import {
  AgentMemoryEvent,
  MEMORY_EVENT_SCHEMA,
  SCHEMA_HEADER,
  isoTimestamp,
  memoryEventMsgId,
  memoryEventSubject,
  type MemoryEventType,
} from "@intentmesh/contracts";
import { enqueue, systemEventMessage, type OutboxMessage } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { outbox } from "./db/schema";
import type { EntryRow } from "./mapping";

/** A memory event about to be written (part 6): never the value, except the archived snapshot. */
export interface NewMemoryEvent {
  type: MemoryEventType;
  agentId: string;
  intentId: string | null;
  taskId: string | null;
  data: Record<string, unknown>;
  actor: string;
}

/** data of memory.created / updated / deleted / evicted / expired. */
export function entryEventData(row: EntryRow, previousVersion: number | null): Record<string, unknown> {
  return {
    entry_id: row.id,
    namespace: row.namespace,
    key: row.key,
    memory_type: row.memoryType,
    version: row.version,
    previous_version: previousVersion,
    tags: row.tags,
  };
}

export function entryEvent(type: MemoryEventType, row: EntryRow, previousVersion: number | null, actor: string): NewMemoryEvent {
  return { type, agentId: row.agentId, intentId: row.intentId, taskId: row.taskId, data: entryEventData(row, previousVersion), actor };
}

/**
 * Writes memory events into the outbox of the caller's transaction (memoryEventMessages).
 */
export async function writeMemoryEvents(tx: Tx, events: NewMemoryEvent[], at: Date): Promise<void> {
  await enqueue(tx, outbox, memoryEventMessages(events, at));
}

/**
 * The outbox messages of memory events. With an intent context (the entry's task or
 * scope.intent_id) an event is a SystemEvent for the intent's log (shared contract point 1);
 * without, it goes on im.evt.memory.<agent>.<type> (stream IM_MEMORY), which the registry appends
 * to the agent's own log (/subscribe/agents/{id}).
 */
export function memoryEventMessages(events: NewMemoryEvent[], at: Date): OutboxMessage[] {
  const timestamp = isoTimestamp(at);
  return events.map((event) => {
    const id = randomUUID();
    const payload = { type: event.type, agent_id: event.agentId, intent_id: event.intentId, task_id: event.taskId, data: event.data, timestamp };
    if (event.intentId) {
      return systemEventMessage({ id, source: "memory", intent_id: event.intentId, event_type: event.type, actor: event.actor, payload, occurred_at: timestamp });
    }
    const message: AgentMemoryEvent = { id, event_type: event.type, actor: event.actor, payload };
    return { subject: memoryEventSubject(event.agentId, event.type), msgId: memoryEventMsgId(id), payload: message, headers: { [SCHEMA_HEADER]: MEMORY_EVENT_SCHEMA } };
  });
}
