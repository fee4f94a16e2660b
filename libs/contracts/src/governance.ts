import { z } from "./zod";
import { ActorId, Uuid, boundedJsonObject, pageLimit, withinBytes } from "./common";
import { IntentRef, IfMatch, command } from "./subjects";
import { SuspensionRequest } from "./suspension";

/**
 * The governance service (spec 2.9-2.11, 4.5, 4.6): the REST surface of suspensions and their
 * server-side timeouts, approvals and engagement decisions. Commands are `im.governance.<verb>`.
 */

/** POST /intents/{id}/suspend/respond (spec 4.5). suspension_id is checked by the handler: missing or empty is 422. */
export const RespondBody = z
  .object({
    suspension_id: z.string().max(200).optional(),
    value: z.unknown().optional(),
    responded_by: ActorId.optional(),
    metadata: boundedJsonObject().optional(),
  })
  .strict()
  .openapi("SuspensionResponse");
export type RespondBody = z.infer<typeof RespondBody>;

/** InputResponse (spec 2.9), the 200 body of respond. */
export interface InputResponse {
  intent_id: string;
  suspension_id: string;
  resolution: "responded";
  value: unknown;
  choice_label?: string;
  choice_description?: string;
  responded_by: string;
  responded_at: string;
  metadata?: Record<string, unknown>;
}

export const APPROVAL_STATUSES = ["pending", "approved", "denied"] as const;

/** POST /intents/{id}/approvals: a pending approval request (the body of the official clients). */
export const CreateApprovalBody = z
  .object({
    action: z.string().trim().min(1).max(200),
    reason: z.string().max(2000).nullable().optional(),
    context: boundedJsonObject().nullable().optional(),
    requested_by: ActorId.optional(),
  })
  .strict()
  .openapi("ApprovalRequest");
export type CreateApprovalBody = z.infer<typeof CreateApprovalBody>;

/**
 * POST …/approve and …/deny. Every field is optional; the Python client sends no body, the MCP
 * server `{notes, approved_by}` / `{reason, denied_by}`. The decider is always the key's
 * principal: approved_by / denied_by are read and ignored.
 */
export const DecideApprovalBody = z
  .object({
    reason: z.string().max(2000).nullable().optional(),
    notes: z.string().max(2000).nullable().optional(),
    approved_by: z.string().max(200).nullable().optional(),
    denied_by: z.string().max(200).nullable().optional(),
  })
  .strict();
export type DecideApprovalBody = z.infer<typeof DecideApprovalBody>;

export const ListApprovalsQuery = z
  .object({ status: z.enum(APPROVAL_STATUSES).optional(), limit: pageLimit(100, 1000) })
  .strict();

const Signal = z.number().min(0).max(1);
/** EngagementSignals (spec 2.9); missing fields take the spec's defaults. */
export const EngagementSignals = z
  .object({
    confidence: Signal.default(1),
    risk: Signal.default(0),
    reversibility: Signal.default(1),
    context: boundedJsonObject().default({}),
  })
  .strict()
  .openapi("EngagementSignals");
export type EngagementSignals = z.infer<typeof EngagementSignals>;

export const ENGAGEMENT_MODES = ["autonomous", "request_input", "require_input", "defer"] as const;
export interface EngagementDecision {
  mode: (typeof ENGAGEMENT_MODES)[number];
  should_ask: boolean;
  rationale: string;
  signals: EngagementSignals;
}

const ApprovalRef = IntentRef.extend({ approval_id: Uuid });

export const governanceCommands = {
  suspend: command("governance", "suspend", IntentRef.merge(IfMatch).extend({ body: withinBytes(SuspensionRequest) })),
  respond: command("governance", "respond", IntentRef.extend({ body: RespondBody })),
  createApproval: command("governance", "approvals.create", IntentRef.extend({ body: CreateApprovalBody })),
  getApproval: command("governance", "approvals.get", ApprovalRef),
  listApprovals: command("governance", "approvals.list", IntentRef.extend({ query: ListApprovalsQuery })),
  approve: command("governance", "approvals.approve", ApprovalRef.extend({ body: DecideApprovalBody })),
  deny: command("governance", "approvals.deny", ApprovalRef.extend({ body: DecideApprovalBody })),
  decideEngagement: command("governance", "engagement.decide", IntentRef.extend({ body: EngagementSignals })),
} as const;
