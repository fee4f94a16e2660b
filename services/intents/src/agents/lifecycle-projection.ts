import { and, eq, lte, sql } from "drizzle-orm";
import { agentEvents, type Clock } from "@intentmesh/contracts";
import { eventOn, subscribe, type Bus } from "@intentmesh/bus";
import { rowsOf, withParams, type Database, type Tx } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import { inbox, leases } from "../db/schema";
import { agentStatus } from "../db/schema-agents";
import { appendToLog, lockIntent } from "../kernel/event-log";
import { expiryEvent } from "../leases/handlers";
import { releaseTasksOf } from "../tasks/effects";
import { failOverCoordinatorsOf } from "../coordinators/handlers";


/**
 * Follows the registry's agent.lifecycle events (stream IM_REGISTRY) into intents.agent_status,
 * and carries out what an agent's end means here (spec 3.4): when an agent becomes dead, every
 * lease it still holds expires with reason agent_dead and a lease expiry event (lease_released) goes to each
 * intent; a deregistered agent's leases expire the same way with reason agent_deregistered.
 * Its claimed and running tasks become ready again for reassignment (tasks/effects.ts releaseTasksOf).
 * Effects and the inbox row commit together, so a redelivered event changes nothing twice.
 */
export async function startAgentLifecycleProjection(bus: Bus, db: Database, clock: Clock, logger: Logger, onCommitted: () => void) {
  return subscribe(bus, eventOn(agentEvents.lifecycle, "agent"), {
    durable: "intents-agent-lifecycle",
    db,
    inbox,
    logger,
    handle: async (tx, event) => {
      const lifecycle = event.payload;
      const applied = await recordStatus(tx, event.agent_id, lifecycle.new_status, event.sequence, clock.now());
      // In order, an end expires every lease the agent holds. It is carried out too when a newer
      // event has already moved the status on (a death redelivered after the re-registration that
      // followed it, or handled by another replica after it): then the leases acquired up to the
      // end expire, and those of the next incarnation are left alone. Leases already ended are not
      // touched, so a second delivery changes nothing.
      const acquiredBy = applied ? undefined : new Date(lifecycle.timestamp);
      if (lifecycle.new_status === "dead") await expireLeasesOf(tx, event.agent_id, "agent_dead", clock.now(), acquiredBy);
      // Coordinator failover (spec 3.4, RFC-0013 5.2): its coordinator leases go to their next candidates.
      if (lifecycle.new_status === "dead" || lifecycle.new_status === "deregistered") await failOverCoordinatorsOf(tx, event.agent_id, clock.now(), acquiredBy);
      if (lifecycle.new_status === "deregistered") await expireLeasesOf(tx, event.agent_id, "agent_deregistered", clock.now(), acquiredBy);
      // Its claimed and running tasks become ready for another agent (4.9), the same way exactly once.
      if (lifecycle.new_status === "dead" || lifecycle.new_status === "deregistered") {
        await releaseTasksOf(tx, event.agent_id, lifecycle.new_status === "dead" ? "agent_dead" : "agent_deregistered", clock.now(), acquiredBy);
      }
    },
    afterCommit: onCommitted,
  });
}

/**
 * The upsert of recordStatus as SQL text made once: every agent.lifecycle event runs it (each
 * registration among them), and the query builder's upsert cost more CPU to build than to run.
 */
const RECORD_STATUS = `insert into intents.agent_status as s (agent_id, status, event_sequence, updated_at) values ($1, $2, $3, $4)
  on conflict (agent_id) do update set status = excluded.status, event_sequence = excluded.event_sequence, updated_at = excluded.updated_at
  where s.event_sequence < excluded.event_sequence
  returning s.agent_id`;

/** Upserts the agent's status unless a newer event already did; false when this event is older. */
export async function recordStatus(tx: Tx, agentId: string, status: string, sequence: number, now: Date): Promise<boolean> {
  const rows = rowsOf(await tx.execute(withParams(RECORD_STATUS, [agentId, status, sequence, agentStatus.updatedAt.mapToDriverValue(now)])));
  return rows.length > 0;
}

/**
 * Ends every lease the agent holds (acquired up to `acquiredBy`, when given) and appends
 * a lease expiry event to each intent. Each intent is locked before its leases, in id order, the order
 * requests and the lease sweeper take too, so none of them can deadlock with another. A lease
 * whose TTL had already run out ends as `expired` at its own time; the others end with the
 * agent's reason, their expires_at brought to now so the derived status (2.4) reads EXPIRED.
 */
export async function expireLeasesOf(
  tx: Tx,
  agentId: string,
  reason: "agent_dead" | "agent_deregistered",
  now: Date,
  acquiredBy?: Date,
): Promise<number> {
  const held = and(eq(leases.agentId, agentId), eq(leases.holdsScope, true), acquiredBy ? lte(leases.acquiredAt, acquiredBy) : undefined);
  const intentIds = [...new Set((await tx.select({ intentId: leases.intentId }).from(leases).where(held)).map((row) => row.intentId))].sort();
  let total = 0;
  for (const intentId of intentIds) {
    await lockIntent(tx, intentId, null);
    const ended = await tx
      .update(leases)
      .set({
        holdsScope: false,
        endReason: sql`case when ${leases.expiresAt} <= ${now} then 'expired' else ${reason} end`,
        endedAt: now,
        expiresAt: sql`least(${leases.expiresAt}, ${now})`,
      })
      .where(and(eq(leases.intentId, intentId), held))
      .returning();
    if (!ended.length) continue;
    total += ended.length;
    await appendToLog(tx, intentId, ended.map((lease) => expiryEvent(lease, lease.endReason as typeof reason | "expired", "system")), now);
  }
  return total;
}
