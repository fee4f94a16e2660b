import { randomUUID } from "node:crypto";
import {
  AgentMemoryEvent,
  MEMORY_EVENT_SCHEMA,
  SCHEMA_HEADER,
  isoTimestamp,
  memoryEventMsgId,
  memoryEventSubject,
  memoryEvents,
  type EventPayload,
} from "@intentmesh/contracts";
import { enqueue, newSystemEvent, systemEventMessage, type OutboxMessage } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { outbox } from "./db/schema";
import type { EntryRow } from "./mapping";

/** One of the memory events' definitions (libs/contracts event-catalogue.ts memoryEvents). */
export type MemoryEventDefinition = (typeof memoryEvents)[keyof typeof memoryEvents];
/** The definitions whose data is an entry's coordinates: memory.created / updated / deleted / evicted / expired. */
export type EntryEventDefinition = Exclude<MemoryEventDefinition, typeof memoryEvents.archived>;
/** What a definition's payload carries under `data`. */
export type MemoryEventData<D extends MemoryEventDefinition> = EventPayload<D>["data"];

/** A memory event about to be written (part 6): never the value, except the archived snapshot. Built by memoryEvent. */
export interface NewMemoryEvent {
  definition: MemoryEventDefinition;
  agentId: string;
  intentId: string | null;
  taskId: string | null;
  data: MemoryEventData<MemoryEventDefinition>;
  actor: string;
}

/**
 * One memory event, typed by its definition: the name comes from the definition and `data` must
 * have its schema's shape (an entry's coordinates, or the archived snapshot), so a writer cannot
 * misspell the one or put the value into the other (it does not compile).
 */
export function memoryEvent<D extends MemoryEventDefinition>(
  definition: D,
  event: { agentId: string; intentId: string | null; taskId: string | null; actor: string; data: MemoryEventData<D> },
): NewMemoryEvent {
  return { definition, ...event };
}

/** data of memory.created / updated / deleted / evicted / expired: the entry's coordinates, never its value. */
export function entryEventData(row: EntryRow, previousVersion: number | null): MemoryEventData<EntryEventDefinition> {
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

export function entryEvent(definition: EntryEventDefinition, row: EntryRow, previousVersion: number | null, actor: string): NewMemoryEvent {
  return memoryEvent(definition, { agentId: row.agentId, intentId: row.intentId, taskId: row.taskId, data: entryEventData(row, previousVersion), actor });
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
    const name = event.definition.name;
    // The memory events' common envelope (part 6) around the data the definition typed.
    const payload = { type: name, agent_id: event.agentId, intent_id: event.intentId, task_id: event.taskId, data: event.data, timestamp };
    if (event.intentId) {
      return systemEventMessage(newSystemEvent(event.definition, { id, source: "memory", intentId: event.intentId, actor: event.actor, payload: payload as EventPayload<MemoryEventDefinition>, at }));
    }
    const message: AgentMemoryEvent = { id, event_type: name, actor: event.actor, payload };
    return { subject: memoryEventSubject(event.agentId, event.definition), msgId: memoryEventMsgId(id), payload: message, headers: { [SCHEMA_HEADER]: MEMORY_EVENT_SCHEMA } };
  });
}
