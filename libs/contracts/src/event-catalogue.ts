import { z } from "./zod";
import type { ZodType } from "zod";
import { defineEvent, eventNames, type EventDefinition, type EventLog } from "./event-definition";
import { agentEvents, intentEvents, portfolioEvents } from "./event-types";
import { taskEvents } from "./tasks";
import { planEvents } from "./plans";
import { vaultEvents } from "./vault";
import { TriggerFiredPayload } from "./triggers";

/**
 * The event catalogue: every event type the server writes, with its payload schema and the logs
 * (and their streams) it goes to. Names come from ./event-types (and ./federation for
 * federation.*, ./vault for the vault's own log); this module adds what a reader of a log may
 * rely on about each payload.
 *
 * Strictness: schemas are `passthrough` objects: the named fields are always there, a later
 * field is not a break. Where the spec gives a shape (part 6: channel_message, memory.*,
 * agent.lifecycle) it is the spec's; where the spec is silent it is what every writer of the type
 * produces (handlers, SQL hot paths, sweepers, projections). Every event type has one: system
 * events are refused by the intents service unless they match, and every test cluster checks
 * every event it wrote against these when it stops (test/support/event-check.ts).
 */

export { defineEvent, eventNames, type EventData, type EventDefinition, type EventLog, type EventName, type EventPayload } from "./event-definition";

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
        /** A snapshot larger than one message is written as several events: this one's place (from 1) among `parts`. */
        part: z.number().int().positive().optional(),
        parts: z.number().int().positive().optional(),
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

/** A system event: written by another service, appended to an intent's log (system-events.ts). */
const systemEvent = <const Name extends string, Schema extends ZodType, const Log extends EventLog>(name: Name, logs: readonly Log[], payload: Schema, description: string) =>
  defineEvent({ name, logs, payload, description, system: true });

const MEMORY_ENTRY = "a memory operation; the value is never included (spec part 6)";
/**
 * Memory events (spec part 6) go to the intent log when a task or intent context exists,
 * otherwise to the agent's stream.
 */
export const memoryEvents = {
  created: systemEvent("memory.created", ["intent", "agent"], MemoryEntryEventPayload, MEMORY_ENTRY),
  updated: systemEvent("memory.updated", ["intent", "agent"], MemoryEntryEventPayload, MEMORY_ENTRY),
  deleted: systemEvent("memory.deleted", ["intent", "agent"], MemoryEntryEventPayload, MEMORY_ENTRY),
  archived: systemEvent("memory.archived", ["intent", "agent"], MemoryArchivedPayload, "working memory snapshotted at task end (spec part 6)"),
  evicted: systemEvent("memory.evicted", ["intent", "agent"], MemoryEntryEventPayload, MEMORY_ENTRY),
  expired: systemEvent("memory.expired", ["intent", "agent"], MemoryEntryEventPayload, MEMORY_ENTRY),
} as const;
export const memoryEventTypes = eventNames(memoryEvents);
export type MemoryEventType = (typeof memoryEventTypes)[keyof typeof memoryEventTypes];

// The spec shows no payload for these: the shapes below are what the governance and intents services write.
const ApprovalDecidedPayload = z
  .object({ approval_id: Id, action: z.string(), decision: z.enum(["approved", "denied"]), requested_by: z.string(), decided_by: z.string() })
  .passthrough();
export const governanceEvents = {
  approvalGranted: systemEvent("governance.approval_granted", ["intent"], ApprovalDecidedPayload, "an approval decided"),
  approvalDenied: systemEvent("governance.approval_denied", ["intent"], ApprovalDecidedPayload, "an approval decided"),
  policySet: systemEvent(
    "governance.policy_set",
    ["intent"],
    z.object({ governance_policy: z.object({}).passthrough(), version: z.number().int().positive() }).passthrough(),
    "the governance policy set",
  ),
  policyRemoved: systemEvent("governance.policy_removed", ["intent"], z.object({ version: z.number().int().positive() }).passthrough(), "the governance policy removed"),
  engagementDecision: systemEvent(
    "engagement.decision",
    ["intent"],
    // The official clients' SDK appends engagement.decision itself with fields of its own; `mode` is what both write.
    z.object({ mode: z.string() }).passthrough(),
    "an engagement decision (the governance service's, with should_ask, rationale and signals, or a client's own)",
  ),
  suspensionRenotified: systemEvent(
    "intent.suspension_renotified",
    ["intent"],
    z.object({ suspension_id: Id, attempt: z.number().int().positive(), max_attempts: z.number().int().positive(), strategy: z.string() }).passthrough(),
    "a suspension re-notification attempt",
  ),
  suspensionEscalated: systemEvent(
    "intent.suspension_escalated",
    ["intent"],
    z.object({ suspension_id: Id, after_attempt: z.number().int(), attempt: z.number().int(), channel: z.string() }).passthrough(),
    "a suspension escalation step",
  ),
} as const;

/** Event types the federation service writes into intent logs (through the system-event path). */
export const federationEvents = {
  dispatched: systemEvent("federation.dispatched", ["intent"], FederationDispatchedPayload, "an intent was dispatched to a peer server"),
  received: systemEvent("federation.received", ["intent"], FederationReceivedPayload, "an intent was created from a peer's dispatch"),
  callback: systemEvent("federation.callback", ["intent"], FederationCallbackPayload, "a peer reported a change of the dispatched intent"),
  budgetWarning: systemEvent("federation.budget_warning", ["intent"], FederationCallbackPayload, "a peer's callback said budget_warning"),
  completed: systemEvent("federation.completed", ["intent"], FederationCallbackPayload, "a peer's callback said completed"),
  failed: systemEvent("federation.failed", ["intent"], z.union([FederationDispatchFailedPayload, FederationCallbackPayload]), "the dispatch failed, or a peer's callback said failed"),
} as const;
export const federationEventTypes = eventNames(federationEvents);
export type FederationEventType = (typeof federationEventTypes)[keyof typeof federationEventTypes];

/** Every event other services put into an intent's log (system-events.ts), by the keys of systemIntentEventTypes. */
export const systemEvents = {
  channelMessage: systemEvent("channel_message", ["intent"], ChannelMessagePayload, "a message on an audited channel (spec part 6)"),
  memoryCreated: memoryEvents.created,
  memoryUpdated: memoryEvents.updated,
  memoryDeleted: memoryEvents.deleted,
  memoryArchived: memoryEvents.archived,
  memoryEvicted: memoryEvents.evicted,
  memoryExpired: memoryEvents.expired,
  ...governanceEvents,
  // The vault's definition (vault.ts vaultEvents): it goes to the vault's own log and to the intent's.
  toolInvoked: vaultEvents.toolInvoked,
  triggerFired: systemEvent("trigger.fired", ["intent"], TriggerFiredPayload, "the intent was created by a trigger firing (RFC-0017 §3.2, §5.2 lineage)"),
  ...federationEvents,
} as const satisfies Record<string, EventDefinition>;
export const systemIntentEventTypes = eventNames(systemEvents);
export type SystemIntentEventType = (typeof systemIntentEventTypes)[keyof typeof systemIntentEventTypes];
export const triggerEventTypes = { fired: systemEvents.triggerFired.name } as const;

/** Every definition of some groups, each once (a definition may be listed in two groups). */
const distinct = (...groups: Record<string, EventDefinition>[]): EventDefinition[] => [...new Set(groups.flatMap((group) => Object.values(group)))];

/**
 * Every event, keyed by log and name. agent_assigned / agent_unassigned are written on both an
 * intent's and an agent's log, so one name may appear under two logs.
 */
export const eventCatalogue: readonly EventDefinition[] = distinct(intentEvents, portfolioEvents, agentEvents, taskEvents, planEvents, systemEvents, vaultEvents);

const systemByName: ReadonlyMap<string, EventDefinition> = new Map(Object.values(systemEvents).map((definition) => [definition.name, definition]));

/** True when another service may put an event of this name into an intent's log. */
export const isSystemIntentEventType = (name: string): boolean => systemByName.has(name);

/** The payload schema of a system event, or undefined when the name is not a system event. */
export const systemEventPayloadSchema = (name: string): ZodType | undefined => systemByName.get(name)?.payload;

/** The catalogue entry for a name on a log. */
export const findEvent = (log: EventLog, name: string): EventDefinition | undefined =>
  eventCatalogue.find((definition) => definition.name === name && definition.logs.includes(log));
