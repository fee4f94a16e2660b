import { z } from "./zod";
import type { ZodType } from "zod";
import { agentEventTypes, intentEventTypes, portfolioEventTypes } from "./event-types";
import { federationEventTypes } from "./federation";

/**
 * The event catalogue: every event type the server writes, with its payload schema and the logs
 * (and their streams) it goes to. Names come from ./event-types (and ./federation for
 * federation.*); this module adds what a reader of a log may rely on about each payload.
 *
 * Strictness: schemas are `passthrough` objects. Where the spec gives a shape (part 6:
 * channel_message, memory.*) the named fields are required; where the spec is silent the schema
 * is the shape the writing code produces today (federation.*), or a permissive object
 * (`openPayload`) documented as "not yet pinned" until the typed writers (issue 11, step 2) fix it.
 */

export type EventLog = "intent" | "portfolio" | "agent";

export interface EventDefinition {
  name: string;
  /** Which logs (and so which SSE streams / im.evt.<aggregate> subjects) carry it. */
  logs: readonly EventLog[];
  payload: ZodType;
  /** Written by another service and appended to an intent's log through the system-event path (system-events.ts). */
  system: boolean;
  description: string;
}

/** A payload whose shape is not pinned yet: any JSON object. */
const openPayload = () => z.object({}).passthrough();

const Id = z.string().min(1);
const Tags = z.array(z.string());

export const ChannelMessagePayload = z
  .object({
    channel_id: Id,
    channel_name: z.string(),
    message_id: Id,
    message_type: z.string(),
    /** The recipient agent, or null for a broadcast. */
    to: z.string().nullable(),
    payload: z.unknown(),
  })
  .passthrough();

/** memory.created|updated|deleted|evicted|expired: the entry's coordinates, never its value (spec part 6). */
export const MemoryEntryEventPayload = z
  .object({
    agent_id: z.string().nullable(),
    intent_id: z.string().nullable(),
    task_id: z.string().nullable(),
    data: z
      .object({
        entry_id: Id,
        namespace: z.string(),
        key: z.string(),
        memory_type: z.string(),
        version: z.number().int(),
        previous_version: z.number().int().nullable(),
        tags: Tags,
      })
      .strict(),
  })
  .passthrough();

export const MemoryArchivedPayload = z
  .object({
    agent_id: z.string().nullable(),
    intent_id: z.string().nullable(),
    task_id: z.string().nullable(),
    data: z
      .object({
        entries_archived: z.number().int().nonnegative(),
        snapshot: z.array(z.object({ namespace: z.string(), key: z.string(), value: z.unknown(), tags: Tags }).strict()),
      })
      .strict(),
  })
  .passthrough();

// Federation payloads: the shapes services/federation/src/handlers/*.ts write today.
const FederationDispatchedPayload = z
  .object({
    dispatch_id: Id,
    target_server: z.string(),
    target_did: z.string(),
    agent_id: z.string().nullable().optional(),
    remote_intent_id: z.string().nullable(),
    delegation_scope: z.unknown(),
    governance: z.unknown(),
  })
  .passthrough();
const FederationReceivedPayload = z
  .object({
    dispatch_id: Id,
    source_server: z.string(),
    source_did: z.string(),
    origin_intent_id: z.string(),
    agent_id: z.string().nullable().optional(),
    delegation_scope: z.unknown(),
    governance: z.unknown(),
    trust_policy: z.string(),
  })
  .passthrough();
/** federation.callback and its follow-ups (completed / failed / budget_warning) carry the same payload. */
const FederationCallbackPayload = z
  .object({
    dispatch_id: Id,
    callback_type: z.string(),
    target_server: z.string(),
    remote_intent_id: z.string().nullable(),
    remote_event: z.unknown(),
    signer: z.string(),
  })
  .passthrough();
/** federation.failed written by the dispatcher when the dispatch itself failed. */
const FederationDispatchFailedPayload = z
  .object({
    dispatch_id: Id,
    stage: z.literal("dispatch"),
    target_server: z.string(),
    agent_id: z.string().nullable().optional(),
    code: z.string(),
    message: z.string(),
    attempt: z.number().int(),
  })
  .passthrough();

const define = (name: string, logs: readonly EventLog[], payload: ZodType, description: string, system = false): EventDefinition => ({
  name,
  logs,
  payload,
  system,
  description,
});

// Pinned payloads of the intents service's own events: what every writer of the type (handlers,
// the SQL hot paths, sweepers, projections) puts there. Extra fields a writer adds for a case
// (suspension_id, budget, renewal) pass through; the named ones are always there. The test
// cluster checks every event of every test against these when it stops (test/support/cluster.ts).
const Version = z.number().int().positive();
const StatusChangedPayload = z
  .object({ from: z.string(), to: z.string(), reason: z.string().nullable(), version: Version })
  .passthrough();
const StatePatchedPayload = z.object({ patches: z.array(z.object({ op: z.string(), path: z.string() }).passthrough()), version: Version }).passthrough();
const LeaseAcquiredPayload = z.object({ lease_id: Id, agent_id: Id, scope: z.string(), expires_at: z.string() }).passthrough();
const LeaseReleasedPayload = z
  .object({ lease_id: Id, agent_id: Id, scope: z.string(), reason: z.enum(["released", "expired", "agent_dead", "agent_deregistered", "fallback"]) })
  .passthrough();
const AgentAssignmentPayload = z.object({ agent_id: Id }).passthrough();
const SuspendedPayload = z.object({ suspension: z.object({ id: Id }).passthrough(), version: Version }).passthrough();

const pinnedIntentPayloads: ReadonlyMap<string, ZodType> = new Map<string, ZodType>([
  [intentEventTypes.statusChanged, StatusChangedPayload],
  [intentEventTypes.statePatched, StatePatchedPayload],
  [intentEventTypes.leaseAcquired, LeaseAcquiredPayload],
  [intentEventTypes.leaseReleased, LeaseReleasedPayload],
  [intentEventTypes.agentAssigned, AgentAssignmentPayload],
  [intentEventTypes.agentUnassigned, AgentAssignmentPayload],
  [intentEventTypes.suspended, SuspendedPayload],
]);

/** Intent events the registry projects onto the agent's own log under the same name. */
const projectedToAgents: ReadonlySet<string> = new Set([agentEventTypes.assigned, agentEventTypes.unassigned]);

/** Events the owning service (intents, registry) writes itself. Payloads not pinned yet (step 2). */
const ownEvents: EventDefinition[] = [
  ...Object.values(intentEventTypes).map((name) =>
    define(
      name,
      projectedToAgents.has(name) ? ["intent", "agent"] : ["intent"],
      pinnedIntentPayloads.get(name) ?? openPayload(),
      pinnedIntentPayloads.has(name) ? "written by the intents service; payload pinned" : "written by the intents service; payload not yet pinned",
    ),
  ),
  ...Object.values(portfolioEventTypes).map((name) => define(name, ["portfolio"], openPayload(), "written by the intents service; payload not yet pinned")),
  ...[agentEventTypes.lifecycle, agentEventTypes.warning, agentEventTypes.command].map((name) =>
    define(name, ["agent"], openPayload(), "written by the registry; payload not yet pinned"),
  ),
];

/** Events other services put into an intent's log (system-events.ts). */
export const systemIntentEventTypes = {
  channelMessage: "channel_message",
  memoryCreated: "memory.created",
  memoryUpdated: "memory.updated",
  memoryDeleted: "memory.deleted",
  memoryArchived: "memory.archived",
  memoryEvicted: "memory.evicted",
  memoryExpired: "memory.expired",
  approvalGranted: "governance.approval_granted",
  approvalDenied: "governance.approval_denied",
  policySet: "governance.policy_set",
  policyRemoved: "governance.policy_removed",
  engagementDecision: "engagement.decision",
  suspensionRenotified: "intent.suspension_renotified",
  suspensionEscalated: "intent.suspension_escalated",
  ...federationEventTypes,
} as const;
export type SystemIntentEventType = (typeof systemIntentEventTypes)[keyof typeof systemIntentEventTypes];

const s = systemIntentEventTypes;
const systemEvents: EventDefinition[] = [
  define(s.channelMessage, ["intent"], ChannelMessagePayload, "a message on an audited channel (spec part 6)", true),
  // Memory events go to the intent log when a task or intent context exists, otherwise to the agent's stream (spec part 6).
  ...[s.memoryCreated, s.memoryUpdated, s.memoryDeleted, s.memoryEvicted, s.memoryExpired].map((name) =>
    define(name, ["intent", "agent"], MemoryEntryEventPayload, "a memory operation; the value is never included (spec part 6)", true),
  ),
  define(s.memoryArchived, ["intent", "agent"], MemoryArchivedPayload, "working memory snapshotted at task end (spec part 6)", true),
  ...[s.approvalGranted, s.approvalDenied, s.policySet, s.policyRemoved].map((name) =>
    define(name, ["intent"], openPayload(), "a governance operation; spec shows no payload, so any object", true),
  ),
  define(s.engagementDecision, ["intent"], openPayload(), "an engagement decision; spec shows no payload, so any object", true),
  define(s.suspensionRenotified, ["intent"], openPayload(), "a suspension re-notification attempt; spec shows no payload, so any object", true),
  define(s.suspensionEscalated, ["intent"], openPayload(), "a suspension escalation step; spec shows no payload, so any object", true),
  define(s.dispatched, ["intent"], FederationDispatchedPayload, "an intent was dispatched to a peer server", true),
  define(s.received, ["intent"], FederationReceivedPayload, "an intent was created from a peer's dispatch", true),
  define(s.callback, ["intent"], FederationCallbackPayload, "a peer reported a change of the dispatched intent", true),
  define(s.budgetWarning, ["intent"], FederationCallbackPayload, "a peer's callback said budget_warning", true),
  define(s.completed, ["intent"], FederationCallbackPayload, "a peer's callback said completed", true),
  define(s.failed, ["intent"], z.union([FederationDispatchFailedPayload, FederationCallbackPayload]), "the dispatch failed, or a peer's callback said failed", true),
];

/**
 * Every event, keyed by log and name. agent_assigned / agent_unassigned are written on both an
 * intent's and an agent's log, so one name may appear under two logs.
 */
export const eventCatalogue: readonly EventDefinition[] = [...ownEvents, ...systemEvents];

const systemByName: ReadonlyMap<string, EventDefinition> = new Map(systemEvents.map((definition) => [definition.name, definition]));

/** True when another service may put an event of this name into an intent's log. */
export const isSystemIntentEventType = (name: string): boolean => systemByName.has(name);

/** The payload schema of a system event, or undefined when the name is not a system event. */
export const systemEventPayloadSchema = (name: string): ZodType | undefined => systemByName.get(name)?.payload;

/** The catalogue entry for a name on a log. */
export const findEvent = (log: EventLog, name: string): EventDefinition | undefined =>
  eventCatalogue.find((definition) => definition.name === name && definition.logs.includes(log));
