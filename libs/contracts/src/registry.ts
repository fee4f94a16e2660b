import { z } from "./zod";
import { ActorId, AgentId, INT32_MAX, JsonObject, Timestamp, Uuid, boundedJsonObject, pageLimit } from "./common";
import { command, IfMatch } from "./command";
import { agentEventTypes } from "./event-types";

/** Part 3.4. `registering` is transient: a record is never stored in it. */
export const AGENT_STATUSES = ["registering", "active", "draining", "unhealthy", "dead", "deregistered"] as const;
export const AgentStatus = z.enum(AGENT_STATUSES);
export type AgentStatus = z.infer<typeof AgentStatus>;

/** Statuses in which an agent id is taken: registering it again is 409 (4.9 rule 3). */
export const LIVE_AGENT_STATUSES: readonly AgentStatus[] = ["active", "draining", "unhealthy"];

export const HEARTBEAT_DEFAULTS = { interval_seconds: 30, unhealthy_after_seconds: 90, dead_after_seconds: 300 } as const;
/** Drain timeout when a drain request names none (spec 8 gives 120 as its example value). */
export const DEFAULT_DRAIN_TIMEOUT_SECONDS = 120;
export const MAX_DRAIN_TIMEOUT_SECONDS = 86_400;

const seconds = z.number().int().min(1).max(86_400 * 7);

/**
 * heartbeat_config of 2.15. Omitted fields take their defaults first, then the two rules of 2.15
 * are checked on the whole, so `{interval_seconds: 60}` alone (unhealthy 90 < 120) is refused.
 */
export const HeartbeatConfig = z
  .object({
    interval_seconds: seconds.default(HEARTBEAT_DEFAULTS.interval_seconds),
    unhealthy_after_seconds: seconds.default(HEARTBEAT_DEFAULTS.unhealthy_after_seconds),
    dead_after_seconds: seconds.default(HEARTBEAT_DEFAULTS.dead_after_seconds),
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.unhealthy_after_seconds < 2 * config.interval_seconds) {
      ctx.addIssue({
        code: "custom",
        path: ["unhealthy_after_seconds"],
        message: `unhealthy_after_seconds must be at least 2 x interval_seconds (${2 * config.interval_seconds}), not ${config.unhealthy_after_seconds}`,
      });
    }
    if (config.dead_after_seconds < 2 * config.unhealthy_after_seconds) {
      ctx.addIssue({
        code: "custom",
        path: ["dead_after_seconds"],
        message: `dead_after_seconds must be at least 2 x unhealthy_after_seconds (${2 * config.unhealthy_after_seconds}), not ${config.dead_after_seconds}`,
      });
    }
  })
  .openapi("HeartbeatConfig");
export type HeartbeatConfig = z.infer<typeof HeartbeatConfig>;

export const Capacity = z.object({
  max_concurrent_tasks: z.number().int().nullable(),
  current_load: z.number().int(),
});

export const PendingCommand = z
  .object({
    command: z.string(),
    reason: z.string(),
    drain_timeout_seconds: z.number().int().optional(),
    issued_by: z.string().optional(),
    issued_at: Timestamp.optional(),
  })
  .openapi("PendingCommand");
export type PendingCommand = z.infer<typeof PendingCommand>;

/** The full agent record of 2.15. */
export const Agent = z
  .object({
    agent_id: z.string(),
    role_id: z.string().nullable(),
    name: z.string().nullable(),
    capabilities: z.array(z.string()),
    capacity: Capacity,
    status: AgentStatus,
    endpoint: z.string().nullable(),
    heartbeat_config: z.object({ interval_seconds: z.number().int(), unhealthy_after_seconds: z.number().int(), dead_after_seconds: z.number().int() }),
    metadata: JsonObject,
    registered_at: Timestamp,
    last_heartbeat_at: Timestamp,
    version: z.number().int(),
    origin_server_url: z.string().nullable(),
    drain_deadline: Timestamp.nullable().openapi({ description: "while draining: when the drain times out" }),
    tasks_in_progress: z.array(z.string()),
  })
  .openapi("Agent");
export type Agent = z.infer<typeof Agent>;

/** The summary record GET /agents lists (4.9). */
export const AgentSummary = Agent.pick({
  agent_id: true,
  role_id: true,
  name: true,
  capabilities: true,
  capacity: true,
  status: true,
  last_heartbeat_at: true,
}).openapi("AgentSummary");
export type AgentSummary = z.infer<typeof AgentSummary>;

const shortText = z.string().max(200);

/** An address the server may one day call (push endpoint, federated origin): http or https only (4.11 blocks other schemes). */
const HttpUrl = z
  .string()
  .url()
  .max(2000)
  .refine((value) => /^https?:\/\//i.test(value), { message: "must be an http:// or https:// URL" });

export const RegisterAgentBody = z
  .object({
    agent_id: AgentId.optional(),
    role_id: ActorId.nullable().optional(),
    name: shortText.nullable().optional(),
    capabilities: z.array(z.string().min(1).max(100)).max(100).default([]),
    capacity: z.object({ max_concurrent_tasks: z.number().int().min(0).max(INT32_MAX).nullable().optional() }).strict().optional(),
    /** Flat form accepted too: some clients send max_concurrent_tasks at the top level. */
    max_concurrent_tasks: z.number().int().min(0).max(INT32_MAX).nullable().optional(),
    endpoint: HttpUrl.nullable().optional(),
    heartbeat_config: HeartbeatConfig.optional(),
    metadata: boundedJsonObject().default({}),
    origin_server_url: HttpUrl.nullable().optional(),
  })
  .strict()
  .openapi("RegisterAgent");
export type RegisterAgentBody = z.infer<typeof RegisterAgentBody>;

/** Comma-separated query values, split and trimmed. */
const csv = z
  .string()
  .optional()
  .transform((value) => (value ? value.split(",").map((s) => s.trim()).filter(Boolean) : undefined));

export const ListAgentsQuery = z.object({
  capabilities: csv.openapi({ description: "agents having ANY of these capabilities" }),
  status: csv.pipe(z.array(AgentStatus).optional()).openapi({ description: "comma-separated; default active" }),
  role_id: z.string().optional(),
  min_available_capacity: z.coerce.number().int().min(0).max(INT32_MAX).optional(),
  limit: pageLimit(100, 1000),
  offset: z.coerce.number().int().min(0).max(INT32_MAX).default(0),
});
export type ListAgentsQuery = z.infer<typeof ListAgentsQuery>;

export const HeartbeatBody = z
  .object({
    status: z.enum(["active", "draining"]),
    current_load: z.number().int().min(0).max(INT32_MAX).optional(),
    tasks_in_progress: z.array(z.string().max(200)).max(1000).optional(),
    client_timestamp: z.string().datetime({ offset: true }),
  })
  .strict()
  .openapi("Heartbeat");
export type HeartbeatBody = z.infer<typeof HeartbeatBody>;

export const HeartbeatResponse = z
  .object({
    acknowledged: z.boolean(),
    server_timestamp: Timestamp,
    agent_status: AgentStatus,
    pending_commands: z.array(PendingCommand),
    unknown_tasks: z
      .array(z.string())
      .optional()
      .openapi({ description: "ids in tasks_in_progress that are not tasks this agent holds; present when tasks_in_progress was sent and checked" }),
  })
  .openapi("HeartbeatResponse");
export type HeartbeatResponse = z.infer<typeof HeartbeatResponse>;

/** PATCH /agents/{id}/status. Only draining is a status one may ask for; deregistration is DELETE. */
export const AgentStatusBody = z
  .object({
    status: AgentStatus.openapi({ description: "draining (or deregistered, like DELETE); other targets are 409" }),
    drain_timeout_seconds: z.number().int().min(1).max(MAX_DRAIN_TIMEOUT_SECONDS).optional(),
    reason: z.string().max(2000).optional(),
  })
  .strict()
  .openapi("AgentStatusChange");
export type AgentStatusBody = z.infer<typeof AgentStatusBody>;

/** One entry of an agent's own event log (lifecycle, assignments, commands). */
export const AgentEvent = z
  .object({
    id: Uuid,
    agent_id: z.string(),
    sequence: z.number().int(),
    event_type: z.string(),
    actor: z.string(),
    payload: JsonObject,
    created_at: Timestamp,
  })
  .openapi("AgentEvent");
export type AgentEvent = z.infer<typeof AgentEvent>;

export const AgentEventPage = z.object({ events: z.array(AgentEvent), next_cursor: z.string().nullable(), has_more: z.boolean() });
export type AgentEventPage = z.infer<typeof AgentEventPage>;

export const ListAgentEventsQuery = z.object({
  after: z.string().optional().openapi({ description: "event id or sequence number; events after it" }),
  limit: pageLimit(100, 1000),
  tail: z.enum(["true", "false"]).optional(),
});

/** Payload of `agent.lifecycle` (part 6): type, agent_id, previous_status, new_status, reason, timestamp. */
export const AgentLifecyclePayload = z.object({
  type: z.literal(agentEventTypes.lifecycle),
  agent_id: z.string(),
  previous_status: AgentStatus,
  new_status: AgentStatus,
  reason: z.string(),
  timestamp: Timestamp,
  version: z.number().int(),
});
export type AgentLifecyclePayload = z.infer<typeof AgentLifecyclePayload>;


/** Reasons carried by agent.lifecycle (the spec's three plus the ones its other transitions need). */
export const lifecycleReasons = {
  registered: "registered",
  reRegistered: "re_registered",
  heartbeatTimeout: "heartbeat_timeout",
  heartbeatResumed: "heartbeat_resumed",
  drainInitiated: "drain_initiated",
  drainCancelled: "drain_cancelled",
  drainCompleted: "drain_completed",
  drainTimeout: "drain_timeout",
  deregistered: "deregistered",
} as const;

const AgentRef = z.object({ agent_id: AgentId });

// What the commands answer (each command carries its output schema).
export const AgentList = z.object({ agents: z.array(AgentSummary.passthrough()), total: z.number().int() }).passthrough().openapi("AgentList");

/**
 * GET /agents/{id}/health (the official MCP server's `get_health`): the agent's health as of the
 * server clock now, from its record and heartbeat timers (services/registry/src/domain/lifecycle.ts
 * `healthOf`), so it is current even before the sweeper records a silence.
 */
export const AgentHealth = z
  .object({
    agent_id: z.string(),
    status: AgentStatus.openapi({ description: "the lifecycle status now: the recorded one, with the silence transitions already due applied" }),
    recorded_status: AgentStatus.openapi({ description: "the status the registry has recorded (the sweeper records due transitions shortly)" }),
    healthy: z.boolean().openapi({ description: "active, and heard from within unhealthy_after_seconds" }),
    last_heartbeat_at: Timestamp,
    seconds_since_heartbeat: z.number().int(),
    heartbeat_config: z.object({ interval_seconds: z.number().int(), unhealthy_after_seconds: z.number().int(), dead_after_seconds: z.number().int() }),
    unhealthy_at: Timestamp.nullable().openapi({ description: "when silence makes an active agent unhealthy; null once it is not active" }),
    dead_at: Timestamp.nullable().openapi({ description: "when silence makes an active or unhealthy agent dead; null otherwise" }),
    capacity: Capacity.extend({ available: z.number().int().nullable().openapi({ description: "max_concurrent_tasks - current_load; null without a declared maximum" }) }),
    tasks_in_progress: z.number().int(),
    drain_deadline: Timestamp.nullable(),
    checked_at: Timestamp,
  })
  .openapi("AgentHealth");
export type AgentHealth = z.infer<typeof AgentHealth>;

export const AgentBinding = z.object({ agent_id: z.string(), principal: z.string() });
export type AgentBinding = z.infer<typeof AgentBinding>;

export const PoolCapacity = z
  .object({
    role_id: z.string(),
    members: z.number().int(),
    max_concurrent_tasks: z.number().int(),
    current_load: z.number().int(),
    available_capacity: z.number().int(),
  })
  .openapi("PoolCapacity");

export const registryCommands = {
  register: command("registry", "agents.register", z.object({ body: RegisterAgentBody }), Agent, ["AGENT_ALREADY_REGISTERED", "AGENT_KEY_MISMATCH", "SSRF_BLOCKED", "UPSTREAM_TIMEOUT"]),
  get: command("registry", "agents.get", AgentRef, Agent, ["AGENT_NOT_FOUND"]),
  health: command("registry", "agents.health", AgentRef, AgentHealth, ["AGENT_NOT_FOUND"]),
  list: command("registry", "agents.list", z.object({ query: ListAgentsQuery }), AgentList),
  heartbeat: command("registry", "agents.heartbeat", AgentRef.extend({ body: HeartbeatBody }), HeartbeatResponse, ["AGENT_GONE", "AGENT_KEY_MISMATCH", "AGENT_NOT_FOUND"]),
  changeStatus: command("registry", "agents.status", AgentRef.merge(IfMatch).extend({ body: AgentStatusBody }), Agent, ["AGENT_NOT_FOUND", "INVALID_AGENT_TRANSITION", "PRECONDITION_REQUIRED", "UPSTREAM_TIMEOUT", "VERSION_MISMATCH"]),
  deregister: command("registry", "agents.deregister", AgentRef.merge(IfMatch), Agent, ["AGENT_NOT_FOUND", "VERSION_MISMATCH"]),
  listEvents: command("registry", "agents.events", AgentRef.extend({ query: ListAgentEventsQuery }), AgentEventPage, ["AGENT_NOT_FOUND"]),
  pool: command("registry", "pools.get", z.object({ role_id: ActorId }), PoolCapacity),
  /** Which principal an agent id is bound to; the gateway asks before letting a key act as that agent. */
  binding: command("registry", "agents.binding", AgentRef, AgentBinding, ["AGENT_NOT_FOUND"]),
} as const;



/**
 * Agent ids become one NATS subject token. Letters, digits, `_`, `-`, `:` and `@` pass as they
 * are; every other byte (`.`, `*`, `>`, `~`, non-ASCII) is written `~XX` in hex, so the mapping is
 * one-to-one and readable for ordinary ids.
 */
export function agentSubjectToken(agentId: string): string {
  let out = "";
  for (const byte of Buffer.from(agentId, "utf8")) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9_\-:@]/.test(ch) ? ch : `~${byte.toString(16).padStart(2, "0")}`;
  }
  return out;
}

export const agentEventSubject = (agentId: string, eventType: string) => `im.evt.agent.${agentSubjectToken(agentId)}.${eventType}`;
export const agentEventMsgId = (agentId: string, sequence: number) => `agent:${agentSubjectToken(agentId)}:e${sequence}`;
export const AGENT_EVENT_SCHEMA = "im.agent-event/2";
