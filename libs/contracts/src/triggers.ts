import { z } from "./zod";
import { ActorId, JsonObject, Timestamp, Uuid, boundedJsonObject, pageLimit } from "./common";
import { command, IfMatch } from "./command";
import { Intent } from "./intents";

/**
 * Triggers and reactive scheduling (RFC-0017), served by the triggers service on `im.triggers.*`.
 * A trigger is a standing declaration: when its condition is met (a schedule comes due, an intent
 * event matches, or someone fires it by hand) the service creates an intent from its template.
 * Decisions where the RFC, the official clients and the other implementation disagree:
 * docs/triggers.md and docs/compatibility.md.
 */

/** RFC-0017 §1.1 types. `webhook` is part of the RFC but not served here (docs/triggers.md). */
export const TRIGGER_TYPES = ["schedule", "event"] as const;
export const DEDUPLICATION_MODES = ["allow", "skip", "queue"] as const;
/** What became of one firing (the trigger's history). */
export const FIRING_STATUSES = ["pending", "created", "skipped", "queued", "suppressed", "failed"] as const;
export const FIRING_SOURCES = ["schedule", "event", "manual", "queue"] as const;
/** §3.3: the longest chain of event triggers firing one another. */
export const MAX_TRIGGER_DEPTH = 10;

/** Server-assigned, prefixed `trg_` (§1.1). */
export const TriggerId = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_-]+$/, "is not a trigger id (letters, digits, _ and -)")
  .openapi({ description: "server-assigned, prefixed trg_ (any other id is simply not found)", example: "trg_0f8e3d2c1b0a49f8a7e6d5c4b3a29180" });

const Name = z
  .string()
  .max(200)
  .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");
const Namespace = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s\p{Cc}]+$/u, "must not contain whitespace or control characters");
/** Python's isoformat() may omit the offset: such a time is read as UTC. */
const DateTime = z.string().datetime({ offset: true, local: true });

/** An IANA time zone name the runtime knows. */
export const TimeZone = z
  .string()
  .min(1)
  .max(64)
  .refine((tz) => isTimeZone(tz), { message: "is not an IANA time zone name (such as UTC or Europe/Paris)" });

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * §2.1 schedule condition, with §2.3's one-time `at`, and `interval_seconds` (an extension: a
 * fixed period from `starts_at`, else from the trigger's creation). Exactly one of cron, at and
 * interval_seconds; `at` wins over `cron` as §2.3 says. The cron expression is checked by the
 * service (it owns the parser): 5 fields, standard syntax.
 */
export const ScheduleCondition = z
  .object({
    cron: z.string().min(1).max(200).nullable().optional(),
    timezone: TimeZone.default("UTC"),
    starts_at: DateTime.nullable().optional(),
    ends_at: DateTime.nullable().optional(),
    at: DateTime.nullable().optional(),
    interval_seconds: z.number().int().min(1).max(366 * 86_400).nullable().optional().openapi({ description: "extension: fire every that many seconds" }),
  })
  .strict()
  .refine((c) => Boolean(c.cron || c.at || c.interval_seconds), { message: "a schedule condition needs cron, at or interval_seconds" })
  .refine((c) => !(c.cron && c.interval_seconds) && !(c.at && c.interval_seconds), { message: "give one of cron, at and interval_seconds" })
  .refine((c) => !c.starts_at || !c.ends_at || Date.parse(c.starts_at) <= Date.parse(c.ends_at), { message: "starts_at must not be after ends_at" });
export type ScheduleCondition = z.infer<typeof ScheduleCondition>;

/** A filter value: exact match, or a glob with `*` when a string (§3.1). */
const FilterValue = z.union([z.string().max(500), z.number(), z.boolean(), z.null()]);

/** §3.1 event condition. */
export const EventCondition = z
  .object({
    event: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9_.*-]+$/, "must be an event type (letters, digits, _ . - and * as a wildcard)"),
    filter: z.record(z.string().min(1).max(100), FilterValue).refine((f) => Object.keys(f).length <= 32, "at most 32 filter keys").nullable().optional(),
  })
  .strict();
export type EventCondition = z.infer<typeof EventCondition>;

/**
 * The MCP server's `state_change` condition: which status change of the scoped intent fires it
 * (the RFC's from_state / to_state keys, exact or glob).
 */
export const StateChangeCondition = z
  .object({ from_state: z.string().max(100).optional(), to_state: z.string().max(100).optional() })
  .strict();

/** §5 intent template; `context` may carry `{{ trigger.* }}` and `{{ event.* }}` expressions. */
export const IntentTemplate = z
  .object({
    title: z.string().trim().min(1).max(500),
    description: z.string().max(20_000).nullable().optional(),
    type: z.string().max(200).nullable().optional(),
    priority: z.string().max(50).nullable().optional(),
    assignee: z.string().max(200).nullable().optional(),
    context: boundedJsonObject(32 * 1024).optional(),
    graph_id: z.string().max(200).nullable().optional(),
    tags: z.array(z.string().max(100)).max(50).optional(),
    status: z.enum(["draft", "active"]).optional().openapi({ description: "the created intent's status; default active" }),
  })
  .strict()
  .openapi("TriggerIntentTemplate");
export type IntentTemplate = z.infer<typeof IntentTemplate>;

export const Trigger = z
  .object({
    trigger_id: z.string(),
    name: z.string(),
    type: z.enum(TRIGGER_TYPES),
    enabled: z.boolean(),
    condition: JsonObject,
    intent_template: JsonObject.nullable(),
    deduplication: z.enum(DEDUPLICATION_MODES),
    max_concurrent: z.number().int().nullable().openapi({ description: "extension: the most intents of this trigger open at once (skip and queue; default 1)" }),
    namespace: z.string().nullable(),
    intent_id: z.string().nullable().openapi({ description: "the intent the trigger is scoped to (MCP server's /intents/{id}/triggers); null for a global trigger" }),
    action: JsonObject.nullable().openapi({ description: "MCP server's action, kept as given and carried in the created intent's lineage" }),
    created_by: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
    last_fired_at: Timestamp.nullable(),
    next_fire_at: Timestamp.nullable().openapi({ description: "when a schedule trigger fires next; null when it will not" }),
    fire_count: z.number().int(),
    version: z.number().int(),
  })
  .openapi("Trigger");
export type Trigger = z.infer<typeof Trigger>;

/** The Python client's body: `name`, `type`, and its kwargs. */
export const CreateTriggerBody = z
  .object({
    name: Name.default(""),
    type: z.enum(TRIGGER_TYPES, { error: "type must be schedule or event (webhook triggers are not served: docs/triggers.md)" }),
    enabled: z.boolean().default(true),
    condition: z.union([ScheduleCondition, EventCondition]).openapi({ description: "§2.1 schedule condition (cron, at or interval_seconds) or §3.1 event condition, as the type says" }),
    intent_template: IntentTemplate,
    deduplication: z.enum(DEDUPLICATION_MODES).default("allow"),
    max_concurrent: z.number().int().min(1).max(10_000).nullable().optional(),
    namespace: Namespace.nullable().optional(),
  })
  .strict()
  .openapi("CreateTriggerBody");
export type CreateTriggerBody = z.infer<typeof CreateTriggerBody>;

/** PATCH: the fields that may change (§9.2 enabled, and the rest of the definition). */
export const UpdateTriggerBody = z
  .object({
    name: Name.optional(),
    enabled: z.boolean().optional(),
    condition: z.union([ScheduleCondition, EventCondition]).optional(),
    intent_template: IntentTemplate.optional(),
    deduplication: z.enum(DEDUPLICATION_MODES).optional(),
    max_concurrent: z.number().int().min(1).max(10_000).nullable().optional(),
    namespace: Namespace.nullable().optional(),
  })
  .strict()
  .openapi("UpdateTriggerBody");
export type UpdateTriggerBody = z.infer<typeof UpdateTriggerBody>;

/** The MCP server's body (mcp-server/src/client.ts createTrigger), under /intents/{id}/triggers. */
export const CreateScopedTriggerBody = z
  .object({
    name: Name.default(""),
    trigger_type: z.enum([...TRIGGER_TYPES, "state_change"], { error: "trigger_type must be schedule, event or state_change" }),
    condition: z.union([ScheduleCondition, EventCondition, StateChangeCondition]),
    action: boundedJsonObject(32 * 1024),
    created_by: ActorId.optional(),
  })
  .strict()
  .openapi("CreateScopedTriggerBody");
export type CreateScopedTriggerBody = z.infer<typeof CreateScopedTriggerBody>;

export const ListTriggersQuery = z.object({
  namespace: z.string().max(200).optional(),
  type: z.enum(TRIGGER_TYPES).optional(),
  enabled: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === "true")),
  limit: pageLimit(100, 1000),
});
export type ListTriggersQuery = z.infer<typeof ListTriggersQuery>;

export const TriggerArray = z.array(Trigger).openapi("TriggerArray");

export const Firing = z
  .object({
    firing_id: Uuid,
    trigger_id: z.string(),
    source: z.enum(FIRING_SOURCES),
    status: z.enum(FIRING_STATUSES),
    scheduled_for: Timestamp.nullable().openapi({ description: "the due time a schedule firing is for" }),
    fired_at: Timestamp,
    intent_id: z.string().nullable().openapi({ description: "the intent created (or to be created, while pending)" }),
    cause_event_id: z.string().nullable(),
    trigger_depth: z.number().int(),
    reason: z.string().nullable(),
  })
  .openapi("TriggerFiring");
export type Firing = z.infer<typeof Firing>;

export const HistoryQuery = z.object({ limit: pageLimit(100, 1000) });
export const FiringArray = z.array(Firing).openapi("TriggerFiringArray");

/** What manual fire answers: the created intent (§8.3), with the firing that made it. */
export const FiredIntent = Intent.extend({ trigger_id: z.string(), firing_id: Uuid }).openapi("FiredIntent");

export const TriggerDeleted = z.object({ status: z.literal("deleted"), trigger_id: z.string() }).openapi("TriggerDeleted");

const TriggerRef = z.object({ trigger_id: TriggerId });
const ScopedRef = z.object({ intent_id: Uuid });

export const triggersCommands = {
  create: command("triggers", "create", z.object({ body: CreateTriggerBody }), Trigger),
  list: command("triggers", "list", z.object({ query: ListTriggersQuery }), TriggerArray),
  get: command("triggers", "get", TriggerRef, Trigger, ["TRIGGER_NOT_FOUND"]),
  update: command("triggers", "update", TriggerRef.merge(IfMatch).extend({ body: UpdateTriggerBody }), Trigger, ["TRIGGER_NOT_FOUND", "VERSION_MISMATCH"]),
  delete: command("triggers", "delete", TriggerRef, TriggerDeleted, ["TRIGGER_NOT_FOUND"]),
  fire: command("triggers", "fire", TriggerRef, FiredIntent, ["TRIGGER_NOT_FOUND", "TRIGGER_DEDUPLICATED", "TRIGGER_FIRE_FAILED"]),
  history: command("triggers", "history", TriggerRef.extend({ query: HistoryQuery }), FiringArray, ["TRIGGER_NOT_FOUND"]),
  createScoped: command("triggers", "scoped.create", ScopedRef.extend({ body: CreateScopedTriggerBody }), Trigger, ["INTENT_NOT_FOUND"]),
  listScoped: command("triggers", "scoped.list", ScopedRef, TriggerArray, ["INTENT_NOT_FOUND"]),
  deleteScoped: command("triggers", "scoped.delete", ScopedRef.merge(TriggerRef), TriggerDeleted, ["INTENT_NOT_FOUND", "TRIGGER_NOT_FOUND"]),
} as const;

/**
 * RFC-0017 §3.2's names for events the server writes under names of its own (event-types.ts): a
 * trigger's event condition may name either. Aliases a trigger matches, never written to a log;
 * spelled here so the triggers service spells no event name (services/triggers domain/rules.ts).
 */
export const triggerEventAliases = {
  /** intent_created */
  intentCreated: "intent.created",
  /** status_changed, any move */
  intentStateChanged: "intent.state_changed",
  /** status_changed to completed */
  intentResolved: "intent.resolved",
  /** status_changed to abandoned */
  intentFailed: "intent.failed",
  /** lease_acquired */
  leaseClaimed: "lease.claimed",
  /** lease_released with reason expired */
  leaseExpired: "lease.expired",
  /** agent.lifecycle, any move */
  agentStatusChanged: "agent.status_changed",
  /** agent.lifecycle with reason registered or re_registered */
  agentRegistered: "agent.registered",
  /** agent.lifecycle to dead */
  agentDead: "agent.dead",
} as const;

/** The event a firing appends to the log of the intent it created (§5.2 lineage, §3.2 trigger.fired). */
export const TriggerFiredPayload = z
  .object({
    trigger_id: z.string(),
    trigger_name: z.string(),
    trigger_type: z.string(),
    firing_id: z.string(),
    created_intent_id: z.string(),
    source: z.string(),
    trigger_depth: z.number().int(),
    trigger_chain: z.array(z.string()),
    scheduled_for: z.string().nullable(),
  })
  .passthrough();
export type TriggerFiredPayload = z.infer<typeof TriggerFiredPayload>;

