import { AgentMemoryEvent, memoryStream, type Clock } from "@intentmesh/contracts";
import { startDurableConsumer, type Bus } from "@intentmesh/bus";
import type { Database } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import { inbox } from "./db/schema";
import { knownAgentIds, lockAgentId } from "./db/agent-sql";
import { commitAgentChange } from "./agent-log";

/**
 * Appends the memory service's agent-scoped events (memory.* without a task or intent context,
 * spec part 6: "otherwise to an agent event stream") to the owner's own log, so
 * /subscribe/agents/{id} streams them with the agent's other events, at the next sequence number.
 * Durable and idempotent through the registry's inbox; events of agent ids the registry does not
 * know stay on IM_MEMORY only, acknowledged without a transaction (`skipMany`).
 */
export async function startMemoryProjection(bus: Bus, db: Database, clock: Clock, logger: Logger, onCommitted: () => void) {
  return startDurableConsumer(bus, {
    stream: memoryStream.name,
    durable: "registry-memory-events",
    filterSubject: memoryStream.subjects[0],
    db,
    inbox,
    logger,
    parse: (data) => AgentMemoryEvent.parse(data),
    // Most memory events are of agents the registry does not know (nothing to project): one
    // unlocked read per batch and an ack instead of a transaction with an inbox row and a row
    // lock each. An agent registered after this read is no different from one registered after
    // the event was applied; a known one goes on to the locked check below, which still decides.
    skipMany: async (events) => {
      const known = await knownAgentIds(db, events.map((event) => event.payload.agent_id));
      return events.map((event) => !known.has(event.payload.agent_id));
    },
    handle: async (tx, event) => {
      const agentId = event.payload.agent_id;
      if (!(await lockAgentId(tx, agentId))) return;
      await commitAgentChange(tx, agentId, {}, [{ eventType: event.event_type, actor: event.actor, payload: { ...event.payload, memory_event_id: event.id } }], clock.now());
    },
    afterCommit: onCommitted,
  });
}
