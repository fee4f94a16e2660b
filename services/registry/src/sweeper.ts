import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import {
  AGENT_EVENT_SCHEMA,
  agentEventMsgId,
  agentEventSubject,
  agentEventTypes,
  intentsCommands,
  isoTimestamp,
  SCHEMA_HEADER,
  type AgentStatus,
  type Caller,
} from "@intentmesh/contracts";
import { rowsOf, type Tx } from "@intentmesh/db";
import type { RegistryContext } from "./context";
import { lifecycleEvents, type NewAgentEvent } from "./agent-log";
import { drainOutcome, nextCheckAt, silenceTransitions, type Transition } from "./domain/lifecycle";
import { agentFromRaw, type AgentRow } from "./mapping";

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
export class AgentSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly ctx: RegistryContext,
    private readonly intervalMs = 1000,
    private readonly batchSize = 1000,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweep()
        .catch((err) => this.ctx.logger.warn({ err }, "agent sweep failed; next tick retries"))
        .finally(() => (this.running = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** One pass over everything due; returns the number of lifecycle transitions made. Tests call it with a manual clock. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const { claimed, transitions } = await this.sweepBatch();
      total += transitions;
      if (claimed < this.batchSize) return total;
    }
  }

  private async sweepBatch(): Promise<{ claimed: number; transitions: number }> {
    const now = this.ctx.clock.now();
    const result = await this.ctx.db.transaction(async (tx) => {
      const due = rowsOf<Record<string, unknown>>(
        await tx.execute(sql`
          select * from registry.agents
          where next_check_at is not null and next_check_at <= ${now}
          order by next_check_at
          limit ${this.batchSize}
          for update skip locked`),
      ).map(agentFromRaw);
      if (!due.length) return { claimed: 0, transitions: 0 };
      const held = await this.leasesHeld(due.filter((a) => a.status === "draining").map((a) => a.agentId));
      const updates: AgentUpdate[] = [];
      const events: { agent: AgentRow; list: NewAgentEvent[] }[] = [];
      let transitions = 0;
      for (const agent of due) {
        const plan = this.plan(agent, now, held);
        if (!plan) continue;
        transitions += plan.transitions;
        updates.push({
          agent_id: agent.agentId,
          status: plan.status,
          next_check_at: plan.nextCheckAt ? plan.nextCheckAt.toISOString() : null,
          transitions: plan.transitions,
          events: plan.events.length,
        });
        if (plan.events.length) events.push({ agent, list: plan.events });
      }
      await applyUpdates(tx, updates, now);
      await writeEventsInBulk(tx, events, now);
      return { claimed: due.length, transitions };
    });
    if (result.transitions) this.ctx.published();
    return result;
  }

  /** What to do with one due agent: its new status, events and next check; null to leave it be this tick. */
  private plan(agent: AgentRow, now: Date, held: Map<string, number> | null) {
    const status = agent.status as AgentStatus;
    let steps: Transition[] = [];
    const extra: NewAgentEvent[] = [];
    if (status === "draining") {
      const count = held?.get(agent.agentId);
      if (count === undefined) return null; // the intents service did not answer: look again next tick
      const outcome = drainOutcome({ ...agent, status }, now, count);
      if (outcome.warning) {
        extra.push({
          eventType: agentEventTypes.warning,
          actor: SYSTEM.actor,
          payload: { agent_id: agent.agentId, warning: "drain_timeout", message: `drain timed out with ${count} lease(s) still held; they expire now`, leases_held: count },
        });
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

  /** Live leases per draining agent, from the intents service; null when it cannot answer now. */
  private async leasesHeld(agentIds: string[]): Promise<Map<string, number> | null> {
    if (!agentIds.length) return new Map();
    try {
      const reply = await this.ctx.client.request<{ held: Record<string, number> }>(intentsCommands.leasesHeld, SYSTEM, { agent_ids: agentIds });
      return new Map(agentIds.map((id) => [id, reply.held[id] ?? 0]));
    } catch (err) {
      this.ctx.logger.warn({ err }, "could not count the leases of draining agents; their drains are checked next tick");
      return null;
    }
  }
}

/** One statement for every due agent: new status, next check, version and log position. */
async function applyUpdates(tx: Tx, updates: AgentUpdate[], now: Date): Promise<void> {
  if (!updates.length) return;
  await tx.execute(sql`
    update registry.agents a set
      status = u.status,
      next_check_at = u.next_check_at,
      version = a.version + u.transitions,
      event_seq = a.event_seq + u.events,
      updated_at = case when u.transitions > 0 then ${now} else a.updated_at end
    from jsonb_to_recordset(${JSON.stringify(updates)}::jsonb)
      as u(agent_id text, status text, next_check_at timestamptz, transitions int, events int)
    where a.agent_id = u.agent_id`);
}

/** One statement for all the events of a tick and their outbox rows; sequences continue each agent's log. */
async function writeEventsInBulk(tx: Tx, batches: { agent: AgentRow; list: NewAgentEvent[] }[], at: Date): Promise<void> {
  if (!batches.length) return;
  const created = isoTimestamp(at);
  const rows = batches.flatMap(({ agent, list }) =>
    list.map((event, i) => {
      const wire = {
        id: randomUUID(),
        agent_id: agent.agentId,
        sequence: agent.eventSeq + i + 1,
        event_type: event.eventType,
        actor: event.actor,
        payload: event.payload,
        created_at: created,
      };
      const json = JSON.stringify(wire);
      return {
        ...wire,
        wire: json,
        subject: agentEventSubject(agent.agentId, event.eventType),
        msg_id: agentEventMsgId(agent.agentId, wire.sequence),
      };
    }),
  );
  await tx.execute(sql`
    with e as (select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      as e(id uuid, agent_id text, sequence bigint, event_type text, actor text, payload jsonb, wire text, subject text, msg_id text)),
    logged as (
      insert into registry.agent_events (agent_id, sequence, id, event_type, actor, payload, created_at, wire)
      select agent_id, sequence, id, event_type, actor, payload, ${at}, wire from e
    )
    insert into registry.outbox (subject, msg_id, payload, headers)
    select subject, msg_id, wire, ${JSON.stringify({ [SCHEMA_HEADER]: AGENT_EVENT_SCHEMA })}::jsonb from e`);
}
