import { randomUUID } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import {
  AGENT_EVENT_SCHEMA,
  agentEventMsgId,
  agentEventSubject,
  agentEventTypes,
  isoTimestamp,
  SCHEMA_HEADER,
  type AgentEvent,
  type JsonObject,
} from "@intentmesh/contracts";
import { enqueue } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { agentEvents, agents, outbox } from "./db/schema";
import type { Transition } from "./domain/lifecycle";
import type { AgentRow } from "./mapping";

export interface NewAgentEvent {
  eventType: string;
  actor: string;
  payload: JsonObject;
}

/** The agent.lifecycle event of part 6: type, agent_id, previous_status, new_status, reason, timestamp (and the new version). */
export function lifecycleEvent(agentId: string, transition: Transition, version: number, at: Date, actor: string): NewAgentEvent {
  return {
    eventType: agentEventTypes.lifecycle,
    actor,
    payload: {
      type: agentEventTypes.lifecycle,
      agent_id: agentId,
      previous_status: transition.from,
      new_status: transition.to,
      reason: transition.reason,
      timestamp: isoTimestamp(at),
      version,
    },
  };
}

/** The events of a run of transitions starting at `fromVersion`: each one increments the version. */
export function lifecycleEvents(agentId: string, transitions: Transition[], fromVersion: number, at: Date, actor: string): NewAgentEvent[] {
  return transitions.map((t, i) => lifecycleEvent(agentId, t, fromVersion + i + 1, at, actor));
}

/**
 * Writes events at the sequence numbers reserved for them (the caller has bumped event_seq on
 * the agent row in this transaction), and their outbox rows. Message id `agent:<token>:e<seq>`.
 */
export async function writeAgentEvents(tx: Tx, agentId: string, firstSequence: number, newEvents: NewAgentEvent[], at: Date): Promise<AgentEvent[]> {
  if (!newEvents.length) return [];
  const written: AgentEvent[] = newEvents.map((event, i) => ({
    id: randomUUID(),
    agent_id: agentId,
    sequence: firstSequence + i,
    event_type: event.eventType,
    actor: event.actor,
    payload: event.payload,
    created_at: isoTimestamp(at),
  }));
  await tx.insert(agentEvents).values(
    written.map((event) => ({
      agentId,
      sequence: event.sequence,
      id: event.id,
      eventType: event.event_type,
      actor: event.actor,
      createdAt: at,
      wire: JSON.stringify(event),
    })),
  );
  await enqueue(
    tx,
    outbox,
    written.map((event) => ({
      subject: agentEventSubject(agentId, event.event_type),
      msgId: agentEventMsgId(agentId, event.sequence),
      payload: event,
      headers: { [SCHEMA_HEADER]: AGENT_EVENT_SCHEMA },
    })),
  );
  return written;
}

/**
 * Applies a change to an agent row and appends its events, in the caller's transaction: the row
 * update takes the next sequence numbers of the agent's log (and the row lock, so the log has no
 * gaps), bumps the version by the number of lifecycle transitions, then the events are written.
 */
export async function commitAgentChange(
  tx: Tx,
  agentId: string,
  changes: Partial<AgentRow>,
  newEvents: NewAgentEvent[],
  at: Date,
): Promise<{ row: AgentRow; events: AgentEvent[] }> {
  const transitions = newEvents.filter((e) => e.eventType === agentEventTypes.lifecycle).length;
  const [row] = await tx
    .update(agents)
    .set({
      ...changes,
      ...(changes.version === undefined ? { version: sql`${agents.version} + ${transitions}` } : {}),
      eventSeq: sql`${agents.eventSeq} + ${newEvents.length}`,
      updatedAt: at,
    } as never)
    .where(eq(agents.agentId, agentId))
    .returning();
  if (!row) throw new Error(`agent ${agentId} vanished inside its own transaction`);
  const events = await writeAgentEvents(tx, agentId, row.eventSeq - newEvents.length + 1, newEvents, at);
  return { row, events };
}
