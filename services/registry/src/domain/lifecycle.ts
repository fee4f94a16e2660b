import { appError } from "@intentmesh/contracts";
import { lifecycleReasons, type AgentStatus } from "@intentmesh/contracts";

/**
 * The agent health lifecycle of spec 3.4, as pure functions of an agent's timers and the server
 * clock. Handlers and the sweeper decide nothing themselves: they ask these functions.
 */

export interface Transition {
  from: AgentStatus;
  to: AgentStatus;
  reason: string;
}

/** What the lifecycle needs to know of an agent. */
export interface AgentTimers {
  status: AgentStatus;
  lastHeartbeatAt: Date;
  unhealthyAfterSeconds: number;
  deadAfterSeconds: number;
  drainDeadline: Date | null;
}

const after = (from: Date, seconds: number) => new Date(from.getTime() + seconds * 1000);

export const unhealthyAt = (agent: AgentTimers) => after(agent.lastHeartbeatAt, agent.unhealthyAfterSeconds);
export const deadAt = (agent: AgentTimers) => after(agent.lastHeartbeatAt, agent.deadAfterSeconds);

/**
 * Silence: active -> unhealthy after unhealthy_after_seconds without a heartbeat, unhealthy -> dead
 * after dead_after_seconds. A sweeper that was away past both deadlines records both steps, so
 * the log never shows an agent dying without first going unhealthy.
 */
export function silenceTransitions(agent: AgentTimers, now: Date): Transition[] {
  const out: Transition[] = [];
  let status = agent.status;
  if (status === "active" && now >= unhealthyAt(agent)) {
    out.push({ from: "active", to: "unhealthy", reason: lifecycleReasons.heartbeatTimeout });
    status = "unhealthy";
  }
  if (status === "unhealthy" && now >= deadAt(agent)) {
    out.push({ from: "unhealthy", to: "dead", reason: lifecycleReasons.heartbeatTimeout });
  }
  return out;
}

/**
 * A draining agent, looked at with the number of live leases it still holds:
 * - none left: draining -> deregistered (the drain completed);
 * - drain timeout passed with work in progress: a warning, then draining -> dead when its
 *   heartbeats have stopped too (its leases expire as agent_dead), or draining -> deregistered
 *   when it is still heartbeating (its leases expire with it);
 * - otherwise nothing yet.
 */
export function drainOutcome(agent: AgentTimers, now: Date, leasesHeld: number): { transition: Transition | null; warning: boolean } {
  if (agent.status !== "draining") return { transition: null, warning: false };
  if (leasesHeld === 0) return { transition: { from: "draining", to: "deregistered", reason: lifecycleReasons.drainCompleted }, warning: false };
  if (agent.drainDeadline && now >= agent.drainDeadline) {
    const silent = now >= unhealthyAt(agent);
    return { transition: { from: "draining", to: silent ? "dead" : "deregistered", reason: lifecycleReasons.drainTimeout }, warning: true };
  }
  return { transition: null, warning: false };
}

/**
 * When the sweeper must next look at the agent: its next silence deadline, or for a draining
 * agent the earlier of its drain deadline and the next check of its leases; null when no timer
 * runs (dead, deregistered).
 */
export function nextCheckAt(agent: AgentTimers, now: Date, drainCheckSeconds: number): Date | null {
  switch (agent.status) {
    case "active":
      return unhealthyAt(agent);
    case "unhealthy":
      return deadAt(agent);
    case "draining": {
      const poll = after(now, drainCheckSeconds);
      return agent.drainDeadline && agent.drainDeadline < poll ? agent.drainDeadline : poll;
    }
    default:
      return null;
  }
}

/** An agent's health at `now` (GET /agents/{id}/health), before any sweeper has looked. */
export interface Health {
  /** The recorded status with the silence transitions due at `now` applied. */
  status: AgentStatus;
  healthy: boolean;
  secondsSinceHeartbeat: number;
  /** The silence deadlines still ahead of the status (null once passed by the status). */
  unhealthyAt: Date | null;
  deadAt: Date | null;
}

export function healthOf(agent: AgentTimers, now: Date): Health {
  const due = silenceTransitions(agent, now);
  const status = due.length ? due[due.length - 1]!.to : agent.status;
  return {
    status,
    healthy: status === "active",
    secondsSinceHeartbeat: Math.max(0, Math.floor((now.getTime() - agent.lastHeartbeatAt.getTime()) / 1000)),
    unhealthyAt: status === "active" ? unhealthyAt(agent) : null,
    deadAt: status === "active" || status === "unhealthy" ? deadAt(agent) : null,
  };
}

/** Statuses a drain may be requested from (table 3.4: active -> draining, unhealthy -> draining). */
const DRAINABLE: readonly AgentStatus[] = ["active", "unhealthy"];

/** PATCH /agents/{id}/status: throws 409 INVALID_AGENT_TRANSITION unless table 3.4 allows the request. */
export function assertRequestedTransition(agentId: string, from: AgentStatus, to: AgentStatus): void {
  if (to === "draining" && DRAINABLE.includes(from)) return;
  const allowed = DRAINABLE.includes(from) ? ["draining"] : [];
  throw appError("INVALID_AGENT_TRANSITION", `agent ${agentId} is ${from} and cannot be moved to ${to} by request; ${
      allowed.length ? "it may be moved to draining (DELETE deregisters it at once)" : "only DELETE (deregistration) applies to it"
    }`,
    { from, to, allowed },
  );
}
