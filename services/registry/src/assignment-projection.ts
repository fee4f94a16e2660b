import { agentEvents, intentEvents, type Clock } from "@intentmesh/contracts";
import { eventOn, subscribe, type Bus } from "@intentmesh/bus";
import type { Database } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import { inbox } from "./db/schema";
import { lockAgentId } from "./db/agent-sql";
import { commitAgentChange } from "./agent-log";

/**
 * Projects the intents service's assignment events onto the assigned agents' own logs
 * (agent.assigned / agent.unassigned), so an agent's SSE stream tells it about new work. One
 * durable consumer per event type (NATS 2.9 has no multi-filter consumers), idempotent through
 * the registry's inbox. Assignments of agent ids the registry does not know are not projected.
 * The durables end in "-v2" since their filters follow the event names of issue 10 (a durable
 * keeps the filter it was created with).
 */
export async function startAssignmentProjection(bus: Bus, db: Database, clock: Clock, logger: Logger, onCommitted: () => void) {
  const kinds = [
    { source: intentEvents.agentAssigned, projected: agentEvents.assigned, durable: "registry-agent-assigned-v2" },
    { source: intentEvents.agentUnassigned, projected: agentEvents.unassigned, durable: "registry-agent-unassigned-v2" },
  ];
  const consumers = await Promise.all(
    kinds.map((kind) =>
      subscribe(bus, eventOn(kind.source, "intent"), {
        durable: kind.durable,
        db,
        inbox,
        logger,
        handle: async (tx, event) => {
          const agentId = event.payload.agent_id;
          if (!(await lockAgentId(tx, agentId))) return;
          await commitAgentChange(
            tx,
            agentId,
            {},
            [
              {
                eventType: kind.projected.name,
                actor: event.actor,
                payload: { agent_id: agentId, intent_id: event.intent_id, role: event.payload.role ?? null, intent_event_id: event.id },
              },
            ],
            clock.now(),
          );
        },
        afterCommit: onCommitted,
      }),
    ),
  );
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}
