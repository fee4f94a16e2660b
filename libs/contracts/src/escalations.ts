import { z } from "./zod";
import { ActorId, boundedJsonObject, JsonObject, pageLimit, Timestamp, Uuid } from "./common";
import { command, IntentRef } from "./command";

/**
 * Escalations to a human and arbitration requests (RFC-0013 with RFC-0004's arbitration;
 * docs/coordinators.md "Escalations"), at the paths the official Python client calls. Both are
 * approval requests of the governance service (spec 4.6) with the action `escalation` or
 * `arbitration`: they wait for a human the same way, appear in the intent's approvals, and are
 * decided once (resolving is approving; denying an escalation dismisses it).
 */

export const ESCALATION_LEVELS = ["low", "medium", "high", "critical"] as const;
export const ESCALATION_STATUSES = ["pending", "resolved", "dismissed"] as const;

export const EscalateBody = z
  .object({
    reason: z.string().trim().min(1).max(2000),
    priority: z.enum(ESCALATION_LEVELS).default("medium"),
    urgency: z.enum(ESCALATION_LEVELS).default("medium"),
    context: boundedJsonObject().nullable().optional(),
    escalated_by: ActorId.optional().openapi({ description: "must be the acting agent when sent (the client sends its agent id)" }),
  })
  .strict()
  .openapi("Escalate");
export type EscalateBody = z.infer<typeof EscalateBody>;

export const ResolveEscalationBody = z
  .object({
    resolution: z.string().trim().min(1).max(2000),
    notes: z.string().max(2000).nullable().optional(),
    resolved_by: ActorId.nullable().optional().openapi({ description: "read and ignored: the resolver is the caller" }),
  })
  .strict()
  .openapi("ResolveEscalation");
export type ResolveEscalationBody = z.infer<typeof ResolveEscalationBody>;

export const ArbitrateBody = z
  .object({
    reason: z.string().trim().min(1).max(2000),
    context: boundedJsonObject().nullable().optional(),
    requested_by: ActorId.optional(),
  })
  .strict()
  .openapi("Arbitrate");
export type ArbitrateBody = z.infer<typeof ArbitrateBody>;

export const Escalation = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    escalated_by: z.string(),
    reason: z.string(),
    priority: z.enum(ESCALATION_LEVELS),
    urgency: z.enum(ESCALATION_LEVELS),
    context: JsonObject,
    status: z.enum(ESCALATION_STATUSES),
    created_at: Timestamp,
    resolved_at: Timestamp.nullable(),
    resolved_by: z.string().nullable(),
    resolution: z.string().nullable(),
    resolution_notes: z.string().nullable(),
    approval_id: Uuid.openapi({ description: "the approval request it is (GET /intents/{id}/approvals/{approval_id})" }),
  })
  .passthrough()
  .openapi("Escalation");
export type Escalation = z.infer<typeof Escalation>;

export const EscalationList = z.object({ escalations: z.array(Escalation), has_more: z.boolean() }).passthrough().openapi("EscalationList");

export const ListEscalationsQuery = z
  .object({ intent_id: Uuid.optional(), status: z.enum(ESCALATION_STATUSES).optional(), limit: pageLimit(100, 500) })
  .strict();

export const ArbitrationRequest = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    requester_id: z.string(),
    reason: z.string(),
    context: JsonObject,
    status: z.enum(["pending", "approved", "denied"]),
    created_at: Timestamp,
    approval_id: Uuid,
  })
  .passthrough()
  .openapi("ArbitrationRequest");

/**
 * GET /intents/{id}/arbitration (the MCP server's get_arbitration: "the arbitration history and
 * governance state"): the intent's arbitration requests, oldest first, each with its status (the
 * approval's); the decisions recorded on the intent are at GET /intents/{id}/decisions.
 */
export const ArbitrationHistory = z
  .object({
    intent_id: Uuid,
    requests: z.array(ArbitrationRequest),
    pending: z.number().int().openapi({ description: "how many of the requests still wait for a human" }),
    has_more: z.boolean(),
  })
  .passthrough()
  .openapi("ArbitrationHistory");
export const ArbitrationHistoryQuery = z.object({ limit: pageLimit(100, 500) }).strict();

export const escalationCommands = {
  escalate: command("governance", "escalations.create", IntentRef.extend({ body: EscalateBody }), Escalation, ["AGENT_MISMATCH", "INTENT_NOT_FOUND"]),
  list: command("governance", "escalations.list", z.object({ query: ListEscalationsQuery }), EscalationList),
  resolve: command("governance", "escalations.resolve", z.object({ escalation_id: Uuid, body: ResolveEscalationBody }), Escalation, [
    "APPROVAL_NOT_PENDING",
    "ESCALATION_NOT_FOUND",
    "SELF_APPROVAL",
  ]),
  arbitrate: command("governance", "arbitration.request", IntentRef.extend({ body: ArbitrateBody }), ArbitrationRequest, ["AGENT_MISMATCH", "INTENT_NOT_FOUND"]),
  arbitrationHistory: command("governance", "arbitration.history", IntentRef.extend({ query: ArbitrationHistoryQuery }), ArbitrationHistory, ["INTENT_NOT_FOUND"]),
} as const;
