import { eq, sql } from "drizzle-orm";
import { AGENT_EVENT_SCHEMA, agentEventMsgId, agentEventSubject, agentEvents as agentEventDefinitions, isoTimestamp, type AgentEvent } from "@intentmesh/contracts";

const lifecycle = agentEventDefinitions.lifecycle;
import { writeEventLog, type EventLogSpec, type NewEvent, newEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { agents, outbox } from "./db/schema";
import { insertAgentEvents } from "./db/agent-sql";
import type { Transition } from "./domain/lifecycle";
import type { AgentRow } from "./mapping";

/** An event about to be appended to an agent's log. */
export type NewAgentEvent = NewEvent;

/** The agent.lifecycle event of part 6: type, agent_id, previous_status, new_status, reason, timestamp (and the new version). */
export function lifecycleEvent(agentId: string, transition: Transition, version: number, at: Date, actor: string): NewAgentEvent {
  return newEvent(lifecycle, actor, {
    type: lifecycle.name,
    agent_id: agentId,
    previous_status: transition.from,
    new_status: transition.to,
    reason: transition.reason,
    timestamp: isoTimestamp(at),
    version,
  });
}

/** The events of a run of transitions starting at `fromVersion`: each one increments the version. */
export function lifecycleEvents(agentId: string, transitions: Transition[], fromVersion: number, at: Date, actor: string): NewAgentEvent[] {
  return transitions.map((t, i) => lifecycleEvent(agentId, t, fromVersion + i + 1, at, actor));
}

/** How agents log their events: `agent:<token>:e<sequence>` on im.evt.agent.<token>.<event_type>. */
export const agentLog: EventLogSpec<AgentEvent> = {
  idField: "agent_id",
  outbox,
  schema: AGENT_EVENT_SCHEMA,
  subject: agentEventSubject,
  msgId: agentEventMsgId,
  insert: async (tx, rows) => {
    await insertAgentEvents(
      tx,
      rows.map(({ event, wire, at }) => ({
        agentId: event.agent_id,
        sequence: event.sequence,
        id: event.id,
        eventType: event.event_type,
        actor: event.actor,
        createdAt: at,
        wire,
      })),
    );
  },
};

/**
 * Writes events at the sequence numbers reserved for them (the caller has bumped event_seq on
 * the agent row in this transaction), and their outbox rows. Message id `agent:<token>:e<seq>`.
 */
export function writeAgentEvents(tx: Tx, agentId: string, firstSequence: number, newEvents: NewEvent[], at: Date): Promise<AgentEvent[]> {
  return writeEventLog(tx, agentLog, agentId, firstSequence, newEvents, at);
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
  const transitions = newEvents.filter((e) => e.eventType === lifecycle.name).length;
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
