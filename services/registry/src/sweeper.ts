import { sql } from "drizzle-orm";
import { AGENT_EVENT_SCHEMA, intentsCommands, SCHEMA_HEADER, type AgentEvent, type AgentStatus, type Caller, isoTimestamp, agentEvents } from "@intentmesh/contracts";
import { buildEvents, sqlEventInserts, newEvent } from "@intentmesh/bus";
import { rowsOf, type Tx } from "@intentmesh/db";
import { Sweeper } from "@intentmesh/service";
import type { RegistryContext } from "./context";
import { agentLog, lifecycleEvents, type NewAgentEvent } from "./agent-log";
import { drainOutcome, nextCheckAt, silenceTransitions, type Transition } from "./domain/lifecycle";

const SYSTEM: Caller = { principal: "registry", roles: ["admin"], actor: "system", agent_id: null };

interface AgentUpdate {
  agent_id: string;
  status: string;
  next_check_at: string | null;
  transitions: number;
  events: number;
}

/**
 * The health lifecycle on the server clock (spec 3.4): silence makes agents unhealthy then dead;
 * draining agents end deregistered when their leases are gone, or at their drain timeout.
 *
 * Cost follows the agents due, not the agents registered: each agent row carries the earliest
 * time its next transition or check can be due (next_check_at), and a tick reads only rows past
 * it through a partial index. Heartbeats do not move it (they stay index-free); a due agent that
 * heard from its agent meanwhile is simply rescheduled from its last heartbeat, so each agent
 * costs the sweeper one cheap reschedule per unhealthy_after_seconds at most. Replicas sweep side by side: due rows are claimed with
 * FOR UPDATE SKIP LOCKED, so each transition happens once, and a heartbeat racing a sweep waits
 * for the row and then sees the new status.
 */
export class AgentSweeper extends Sweeper {
  constructor(
    private readonly ctx: RegistryContext,
    intervalMs = 1000,
    private readonly batchSize = 500,
    private readonly parallelBatches = 2,
  ) {
    super(intervalMs, ctx.logger, "agent sweep");
  }

  /** One pass over everything due; returns the number of lifecycle transitions made. Tests call it with a manual clock. */
  async sweep(): Promise<number> {
    // Batches run side by side on their own connections: SKIP LOCKED gives each different rows,
    // and most of a batch's time is PostgreSQL writing rows and index entries, which then uses
    // more than one core.
    const lanes = await Promise.all(Array.from({ length: this.parallelBatches }, () => this.sweepLane()));
    return lanes.reduce((a, b) => a + b, 0);
  }

  private async sweepLane(): Promise<number> {
    let total = 0;
    for (;;) {
      const { claimed, transitions } = await this.sweepBatch();
      total += transitions;
      if (claimed < this.batchSize) return total;
    }
  }

  private async sweepBatch(): Promise<{ claimed: number; transitions: number }> {
    const now = this.ctx.clock.now();
    // The leases of the draining agents about to be claimed are counted before any row is locked:
    // the intents service may be slow or away, and a heartbeat must never wait on it. A count can
    // only have fallen since (a draining agent takes no new lease), and an agent that started
    // draining in between has no count and is looked at again at its next drain check.
    const held = await this.leasesHeld(await this.dueDraining(now));
    const result = await this.ctx.db.transaction(async (tx) => {
      const due = rowsOf<Record<string, unknown>>(
        await tx.execute(sql`
          select agent_id, status, last_heartbeat_at, unhealthy_after_seconds, dead_after_seconds, drain_deadline, version, event_seq
          from registry.agents
          where next_check_at is not null and next_check_at <= ${now}
          order by next_check_at
          limit ${this.batchSize}
          for update skip locked`),
      ).map(dueAgentFromRaw);
      if (!due.length) return { claimed: 0, transitions: 0 };
      const updates: AgentUpdate[] = [];
      const events: { agent: DueAgent; list: NewAgentEvent[] }[] = [];
      let transitions = 0;
      for (const agent of due) {
        const plan = this.plan(agent, now, held);
        if (!plan) continue;
        transitions += plan.transitions;
        updates.push({
          agent_id: agent.agentId,
          status: plan.status,
          next_check_at: plan.nextCheckAt ? isoTimestamp(plan.nextCheckAt) : null,
          transitions: plan.transitions,
          events: plan.events.length,
        });
        if (plan.events.length) events.push({ agent, list: plan.events });
      }
      await writeBatch(tx, updates, events, now);
      return { claimed: due.length, transitions };
    });
    if (result.transitions) this.ctx.published();
    return result;
  }

  /** What to do with one due agent: its new status, events and next check; null to leave it be this tick. */
  private plan(agent: DueAgent, now: Date, held: Map<string, number> | null) {
    const status = agent.status as AgentStatus;
    let steps: Transition[] = [];
    const extra: NewAgentEvent[] = [];
    if (status === "draining") {
      const count = held?.get(agent.agentId);
      if (count === undefined) {
        // The drain began after the count: the next batch (or tick) counts it.
        if (held) return null;
        // The intents service did not answer: look again at the next drain check. Rescheduled
        // rather than left due, so a sweep never claims the same undecidable rows over and over
        // while the agents behind them wait.
        return { status, transitions: 0, events: [], nextCheckAt: new Date(now.getTime() + this.ctx.drainCheckSeconds * 1000) };
      }
      const outcome = drainOutcome({ ...agent, status }, now, count);
      if (outcome.warning) {
        extra.push(newEvent(agentEvents.warning, SYSTEM.actor, { agent_id: agent.agentId, warning: "drain_timeout", message: `drain timed out with ${count} lease(s) still held; they expire now`, leases_held: count }));
      }
      if (outcome.transition) steps = [outcome.transition];
    } else {
      steps = silenceTransitions({ ...agent, status }, now);
    }
    const finalStatus = steps.length ? steps[steps.length - 1]!.to : status;
    const timers = { ...agent, status: finalStatus };
    return {
      status: finalStatus,
      transitions: steps.length,
      events: [...extra, ...lifecycleEvents(agent.agentId, steps, agent.version, now, SYSTEM.actor)],
      nextCheckAt: nextCheckAt(timers, now, this.ctx.drainCheckSeconds),
    };
  }

  /**
   * The draining agents due now, read without locking (only their leases are counted), through a
   * partial index of draining agents: usually none, and then this costs nothing.
   */
  private async dueDraining(now: Date): Promise<string[]> {
    const rows = rowsOf<{ agent_id: string }>(
      await this.ctx.db.execute(sql`
        select agent_id from registry.agents
        where status = 'draining' and next_check_at <= ${now}
        order by next_check_at
        limit ${this.batchSize}`),
    );
    return rows.map((r) => r.agent_id);
  }

  /** Live leases per draining agent, from the intents service; null when it cannot answer now. */
  private async leasesHeld(agentIds: string[]): Promise<Map<string, number> | null> {
    if (!agentIds.length) return new Map();
    try {
      const reply = await this.ctx.client.request(intentsCommands.leasesHeld, SYSTEM, { agent_ids: agentIds });
      return new Map(agentIds.map((id) => [id, reply.held[id] ?? 0]));
    } catch (err) {
      this.ctx.logger.warn({ err }, "could not count the leases of draining agents; their drains are checked next tick");
      return null;
    }
  }
}

/** The columns a tick reads of a due agent. */
interface DueAgent {
  agentId: string;
  status: string;
  lastHeartbeatAt: Date;
  unhealthyAfterSeconds: number;
  deadAfterSeconds: number;
  drainDeadline: Date | null;
  version: number;
  eventSeq: number;
}

function dueAgentFromRaw(raw: Record<string, unknown>): DueAgent {
  const date = (v: unknown) => (v instanceof Date ? v : new Date(String(v)));
  return {
    agentId: String(raw.agent_id),
    status: String(raw.status),
    lastHeartbeatAt: date(raw.last_heartbeat_at),
    unhealthyAfterSeconds: Number(raw.unhealthy_after_seconds),
    deadAfterSeconds: Number(raw.dead_after_seconds),
    drainDeadline: raw.drain_deadline === null || raw.drain_deadline === undefined ? null : date(raw.drain_deadline),
    version: Number(raw.version),
    eventSeq: Number(raw.event_seq),
  };
}

/**
 * One statement for a whole batch: every due agent's new status, next check, version and log
 * position, and every event of the batch with its outbox row (sequences continue each agent's
 * log; the event JSON is written once and stored as the log entry and the message alike).
 */
/**
 * The batch's log and outbox rows, from the CTE e (built by the agent log writer's buildEvents;
 * the message id is agentLog.msgId, computed with the token in JS). The headers are a constant.
 */
const SWEPT_EVENTS = sqlEventInserts({
  eventsTable: "registry.agent_events",
  outboxTable: "registry.outbox",
  from: "e",
  eventColumns: { agent_id: "agent_id", sequence: "sequence", id: "id::uuid", event_type: "event_type", actor: "actor", created_at: "at", wire: "wire" },
  subject: "subject",
  msgId: "msg_id",
  wire: "wire",
  headers: `'${JSON.stringify({ [SCHEMA_HEADER]: AGENT_EVENT_SCHEMA })}'::jsonb`,
  outboxOrder: "ord",
});

async function writeBatch(tx: Tx, updates: AgentUpdate[], batches: { agent: DueAgent; list: NewAgentEvent[] }[], at: Date): Promise<void> {
  if (!updates.length) return;
  // The same events the agent log writer would build, written in bulk with their outbox rows.
  const rows = batches.flatMap(({ agent, list }) =>
    buildEvents<AgentEvent>(agentLog, agent.agentId, agent.eventSeq + 1, list, at).map((event) => [
      event.id,
      event.agent_id,
      event.sequence,
      event.event_type,
      event.actor,
      JSON.stringify(event),
      agentLog.subject(event.agent_id, event.event_type),
      agentLog.msgId(event.agent_id, event.sequence),
    ]),
  );
  await tx.execute(sql`
    with moved as (
      update registry.agents a set
        status = u.status,
        next_check_at = u.next_check_at,
        version = a.version + u.transitions,
        event_seq = a.event_seq + u.events,
        updated_at = case when u.transitions > 0 then ${at} else a.updated_at end
      from jsonb_to_recordset(${JSON.stringify(updates)}::jsonb)
        as u(agent_id text, status text, next_check_at timestamptz, transitions int, events int)
      where a.agent_id = u.agent_id
    ),
    e as (
      select r->>0 as id, r->>1 as agent_id, (r->>2)::bigint as sequence, r->>3 as event_type, r->>4 as actor, r->>5 as wire, r->>6 as subject, r->>7 as msg_id, ord, ${at}::timestamptz as at
      from jsonb_array_elements(${JSON.stringify(rows)}::jsonb) with ordinality as t(r, ord)
    ),
    logged as (${sql.raw(SWEPT_EVENTS.events)})
    ${sql.raw(SWEPT_EVENTS.outbox)}`);
}
