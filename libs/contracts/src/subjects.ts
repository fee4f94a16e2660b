import { z } from "./zod";
import { AgentId, Caller, Uuid } from "./common";
import { command, IfMatch, IntentRef } from "./command";
import {
  Assignment,
  AssignmentList,
  EventPage,
  Intent,
  IntentEvent,
  IntentPage,
  Lease,
  LeaseList,
  LeasesHeld,
  AcquireLeaseBody,
  AppendEventBody,
  AssignAgentBody,
  CreateIntentBody,
  ListEventsQuery,
  ListIntentsQuery,
  RenewLeaseBody,
  StatePatchBody,
  StatusTransitionBody,
  ListLeasesQuery,
} from "./intents";

/**
 * The subject catalogue: the public contract of the bus (documented in docs/subjects.md).
 *
 * Commands are request/reply on `im.<service>.<verb>`, served by a queue group per service so
 * replicas share the load. Every request carries {caller, input}; every reply is
 * {ok: true, data} or {ok: false, error: {code, status, message, details, extra}}.
 *
 * Events are published to JetStream on `im.evt.<aggregate>.<id>.<event_type>`, one stream per
 * service, with Nats-Msg-Id `<aggregate>:<id>:e<sequence>` so a republished event is dropped.
 */
export const intentsCommands = {
  /**
   * `intent_id` is for services that must create idempotently (federation's receive after a
   * crash): the id to create under; when it exists, created by the same creator, that intent is
   * the answer. The gateway never passes it (a client cannot choose an id).
   */
  create: command("intents", "create", z.object({ body: CreateIntentBody, intent_id: Uuid.optional() }), Intent, [
    // Creating under a chosen id, when another creator holds it: only services ask that.
    "INTENT_EXISTS",
    // RFC-0002: parent_intent_id and depends_on name intents that must exist (docs/graphs.md).
    "DEPENDENCY_NOT_FOUND",
    "INTENT_ACCESS_DENIED",
    "INTENT_NOT_FOUND",
    "PARENT_CLOSED",
  ]),
  get: command("intents", "get", IntentRef, Intent, ["INTENT_NOT_FOUND"]),
  list: command("intents", "list", z.object({ query: ListIntentsQuery }), IntentPage),
  patchState: command("intents", "state.patch", IntentRef.merge(IfMatch).extend({ patches: StatePatchBody }), Intent, ["BUDGET_EXCEEDED", "GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "LEASE_EXPIRED", "LEASE_HELD", "PATCH_FAILED", "PRECONDITION_REQUIRED", "STATE_TOO_LARGE", "SUSPENSION_ACTIVE", "VERSION_MISMATCH"]),
  transition: command("intents", "status.transition", IntentRef.merge(IfMatch).extend({ body: StatusTransitionBody }), Intent, ["BUDGET_EXCEEDED", "GOVERNANCE_VIOLATION", "GRAPH_INCOMPLETE", "INTENT_NOT_FOUND", "INVALID_TRANSITION", "PRECONDITION_REQUIRED", "VERSION_MISMATCH"]),
  appendEvent: command("intents", "events.append", IntentRef.merge(IfMatch).extend({ body: AppendEventBody }), IntentEvent, ["GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "PROOF_INVALID", "RESERVED_EVENT_TYPE", "VERSION_MISMATCH"]),
  listEvents: command("intents", "events.list", IntentRef.extend({ query: ListEventsQuery }), EventPage, ["INTENT_NOT_FOUND"]),
  assignAgent: command("intents", "agents.assign", IntentRef.merge(IfMatch).extend({ body: AssignAgentBody }), Assignment, ["GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "VERSION_MISMATCH"]),
  listAgents: command("intents", "agents.list", IntentRef, AssignmentList, ["INTENT_NOT_FOUND"]),
  unassignAgent: command("intents", "agents.unassign", IntentRef.merge(IfMatch).extend({ agent_id: AgentId }), Assignment, ["AGENT_NOT_FOUND", "ASSIGNMENT_NOT_FOUND", "GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND"]),
  acquireLease: command("intents", "leases.acquire", IntentRef.merge(IfMatch).extend({ body: AcquireLeaseBody }), Lease, ["AGENT_DRAINING", "AGENT_NOT_ACTIVE", "BUDGET_EXCEEDED", "GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "LEASE_HELD"]),
  renewLease: command("intents", "leases.renew", IntentRef.merge(IfMatch).extend({ lease_id: Uuid, body: RenewLeaseBody }), Lease, ["GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "LEASE_EXPIRED", "LEASE_NOT_FOUND", "LEASE_RELEASED", "NOT_LEASE_HOLDER"]),
  releaseLease: command("intents", "leases.release", IntentRef.merge(IfMatch).extend({ lease_id: Uuid }), Lease, ["GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "LEASE_NOT_FOUND"]),
  getLease: command("intents", "leases.get", IntentRef.extend({ lease_id: Uuid }), Lease, ["INTENT_NOT_FOUND", "LEASE_NOT_FOUND"]),
  listLeases: command("intents", "leases.list", IntentRef.extend({ query: ListLeasesQuery }), LeaseList, ["INTENT_NOT_FOUND"]),
  /** Asked by the registry while agents drain: how many live leases each still holds ({held: {agent_id: n}}). */
  leasesHeld: command("intents", "leases.held", z.object({ agent_ids: z.array(z.string()).min(1).max(1000) }), LeasesHeld),
} as const;

/** Every service answers `im.<service>.health` with {service, database: "ok"}; the gateway's /readyz asks each. */
export const HealthReport = z.object({ service: z.string(), database: z.literal("ok"), outbox_backlog: z.number().int().nonnegative() }).passthrough();
export const healthCommand = (service: string) => command(service, "health", z.object({}), HealthReport);

/**
 * The back-end services a complete cluster runs, in start order; /readyz asks each of them. Each
 * name is the `<service>` of its subjects and the folder services/<service> whose src/manifest.ts
 * defines it (services/cluster.ts lists those definitions, keyed by these names).
 */
export const CLUSTER_SERVICES = ["intents", "registry", "memory", "federation", "governance", "channels", "vault", "triggers"] as const;
export type ServiceName = (typeof CLUSTER_SERVICES)[number];

export const BusRequest = z.object({ caller: Caller, input: z.unknown() });
export type BusRequest = z.infer<typeof BusRequest>;

export const streams = {
  intents: { name: "IM_INTENTS", subjects: ["im.evt.intent.>"] },
  registry: { name: "IM_REGISTRY", subjects: ["im.evt.agent.>"] },
  portfolios: { name: "IM_PORTFOLIOS", subjects: ["im.evt.portfolio.>"] },
} as const;

export const intentEventSubject = (intentId: string, eventType: string) => `im.evt.intent.${intentId}.${eventType}`;
export const intentEventFilter = (intentId: string) => `im.evt.intent.${intentId}.>`;
export const intentEventMsgId = (intentId: string, sequence: number) => `intent:${intentId}:e${sequence}`;

/** Header naming the schema and version of an event payload, e.g. `im.intent-event/2`. */
export const SCHEMA_HEADER = "Im-Schema";
export const INTENT_EVENT_SCHEMA = "im.intent-event/2";

