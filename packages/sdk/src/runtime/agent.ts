import type { HeartbeatResponse, PendingCommand } from "@intentmesh/contracts";
import type { Intentmesh } from "../client";
import { isApiError } from "../errors";
import type { BodyOf, ResponseOf } from "../types";

export type AgentRecord = ResponseOf<"agentsRegister">;

export interface AgentSessionOptions {
  /** The agent id; else the client's agentId; else the server generates one. */
  agentId?: string;
  /** The rest of the registration (role_id, capabilities, capacity, heartbeat_config, metadata...). */
  registration?: Omit<NonNullable<BodyOf<"agentsRegister">>, "agent_id">;
  /** Time between heartbeats; default the registered heartbeat_config.interval_seconds. */
  heartbeatIntervalMs?: number;
  /** What each heartbeat reports: the agent's load and the tasks it works on. */
  load?: () => { current_load?: number; tasks_in_progress?: string[] };
  /** The server asked the agent to drain (a pending `drain` command, or a drain it announced): finish, take nothing new. */
  onDrain?: (command: PendingCommand | undefined) => void;
  /** Every pending command, drain included, as heartbeats hand them out. */
  onCommand?: (command: PendingCommand) => void;
  /** A heartbeat failed (the session goes on; a 410 ends it instead). */
  onError?: (error: unknown) => void;
}

export type SessionEnd = "deregistered" | "stopped";

export interface AgentSession {
  readonly agentId: string;
  /** The record as registered. */
  readonly agent: AgentRecord;
  /** The client acting as this agent (X-Agent-ID). */
  readonly client: Intentmesh;
  /** Aborts when the agent must drain: a drain command came, or drain() was called. Stop taking work. */
  readonly draining: AbortSignal;
  /** Aborts when the session ends: the server deregistered the agent (410 on a heartbeat), or stop(). */
  readonly signal: AbortSignal;
  /** Resolves when the session ends, with why. */
  readonly ended: Promise<SessionEnd>;
  /** The last heartbeat's answer. */
  readonly lastHeartbeat: HeartbeatResponse | undefined;
  /** Sends a heartbeat now (the timer goes on). */
  heartbeat(): Promise<HeartbeatResponse | undefined>;
  /** Announces a drain of the agent's own (heartbeat status `draining`): the server deregisters it once it holds no lease. */
  drain(): Promise<void>;
  /** Stops heartbeating; `deregister: true` also deregisters at once (DELETE /agents/{id}). */
  stop(options?: { deregister?: boolean }): Promise<void>;
}

/**
 * Registers an agent and keeps its heartbeats going (spec 4.9): every interval a heartbeat with
 * its status (`draining` once draining), load and tasks; pending commands are handed to
 * onCommand, and a `drain` command aborts `draining`. When the server deregisters the agent (the
 * drain finished, or an operator deleted it) the next heartbeat answers 410 and the session ends.
 */
export async function startAgent(client: Intentmesh, options: AgentSessionOptions = {}): Promise<AgentSession> {
  const requestedId = options.agentId ?? client.options.agentId;
  const body = { ...options.registration, ...(requestedId ? { agent_id: requestedId } : {}) };
  // Registration names the agent it registers; X-Agent-ID may already name it (the gateway allows that).
  const agent = await client.ops.agentsRegister({ body }, { agentId: requestedId });
  const agentId = agent.agent_id;
  const acting = client.as(agentId);
  const intervalMs = options.heartbeatIntervalMs ?? agent.heartbeat_config.interval_seconds * 1000;

  const drainController = new AbortController();
  const endController = new AbortController();
  let resolveEnded!: (end: SessionEnd) => void;
  const ended = new Promise<SessionEnd>((resolve) => (resolveEnded = resolve));
  let lastHeartbeat: HeartbeatResponse | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<HeartbeatResponse | undefined> | undefined;

  const end = (why: SessionEnd) => {
    if (endController.signal.aborted) return;
    if (timer) clearTimeout(timer);
    if (!drainController.signal.aborted) drainController.abort(why);
    endController.abort(why);
    resolveEnded(why);
  };
  const startDraining = (command: PendingCommand | undefined) => {
    if (drainController.signal.aborted) return;
    drainController.abort(command ?? "drain");
    options.onDrain?.(command);
  };

  const beat = async (): Promise<HeartbeatResponse | undefined> => {
    if (endController.signal.aborted) return undefined;
    try {
      const response = await acting.ops.agentsHeartbeat({
        agent_id: agentId,
        body: { status: drainController.signal.aborted ? "draining" : "active", client_timestamp: new Date().toISOString(), ...options.load?.() },
      });
      lastHeartbeat = response;
      for (const command of response.pending_commands) {
        options.onCommand?.(command);
        if (command.command === "drain") startDraining(command);
      }
      if (response.agent_status === "draining") startDraining(undefined);
      if (response.agent_status === "deregistered" || response.agent_status === "dead") end("deregistered");
      return response;
    } catch (error) {
      if (isApiError(error, "AGENT_GONE", "AGENT_NOT_FOUND")) end("deregistered");
      else options.onError?.(error);
      return undefined;
    }
  };
  const beatOnce = () => (inFlight ??= beat().finally(() => (inFlight = undefined)));
  const schedule = () => {
    if (endController.signal.aborted) return;
    timer = setTimeout(() => void beatOnce().finally(schedule), intervalMs);
  };
  schedule();

  return {
    agentId,
    agent,
    client: acting,
    draining: drainController.signal,
    signal: endController.signal,
    ended,
    get lastHeartbeat() {
      return lastHeartbeat;
    },
    heartbeat: beatOnce,
    drain: async () => {
      startDraining(undefined);
      await beatOnce();
    },
    stop: async ({ deregister = false } = {}) => {
      if (timer) clearTimeout(timer);
      await inFlight;
      if (deregister && !endController.signal.aborted) await acting.ops.agentsDeregister({ agent_id: agentId });
      end(deregister ? "deregistered" : "stopped");
    },
  };
}
