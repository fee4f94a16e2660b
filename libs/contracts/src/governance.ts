import { z } from "./zod";
import { ActorId, AgentId, Caller, Timestamp, Uuid, boundedJsonObject, pageLimit } from "./common";
import { IntentRef, IfMatch, command } from "./command";
import { Intent } from "./intents";

/**
 * The governance service (spec 2.9-2.11, 4.5, 4.6): suspensions (their contract lives in
 * suspension.ts), their server-side timeouts, approvals and engagement decisions. Commands are
 * `im.governance.<verb>`.
 */



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

/**
 * GovernancePolicy (spec 2.11). Every field is optional; GET shows the effective policy with the
 * defaults filled in (EFFECTIVE_POLICY_DEFAULTS). Unknown fields are refused.
 */
export const GovernancePolicy = z
  .object({
    completion_mode: z.enum(["auto", "require_approval", "quorum"]).optional(),
    write_scope: z.enum(["any", "assigned_only"]).optional(),
    max_cost: z.number().min(0).max(1e15).nullable().optional(),
    quorum_threshold: z.number().gt(0, "quorum_threshold must be in (0, 1]").max(1, "quorum_threshold must be in (0, 1]").optional(),
    allowed_agents: z.array(AgentId).max(1000).nullable().optional(),
    require_status_reason: z.boolean().optional(),
  })
  .strict()
  .openapi("GovernancePolicy");
export type GovernancePolicy = z.infer<typeof GovernancePolicy>;

export const EFFECTIVE_POLICY_DEFAULTS = {
  completion_mode: "auto",
  write_scope: "any",
  max_cost: null,
  quorum_threshold: 0.5,
  allowed_agents: null,
  require_status_reason: false,
} as const;

export interface EffectiveGovernancePolicy {
  completion_mode: "auto" | "require_approval" | "quorum";
  write_scope: "any" | "assigned_only";
  max_cost: number | null;
  quorum_threshold: number;
  allowed_agents: string[] | null;
  require_status_reason: boolean;
}

export const effectivePolicy = (policy: GovernancePolicy | null | undefined): EffectiveGovernancePolicy => {
  const effective = { ...EFFECTIVE_POLICY_DEFAULTS } as EffectiveGovernancePolicy;
  for (const [key, value] of Object.entries(policy ?? {})) if (value !== undefined && value !== null) (effective as unknown as Record<string, unknown>)[key] = value;
  return effective;
};

/** The writes of other services a governance policy binds (spec 2.11: every mutation of the intent). */
export const GovernedWriteKind = z.enum(["memory", "channel"]);
export type GovernedWriteKind = z.infer<typeof GovernedWriteKind>;

/** The most checks one governance.check_many request carries. */
export const GOVERNANCE_CHECKS_PER_REQUEST = 256;

// What the commands answer (each command carries its output schema).
/**
 * PUT /intents/{id}/governance (docs/governance.md, "The answer of PUT"): one body two readers use.
 * Spec 4.6 answers the policy: its six 2.11 fields are at the top level, with their effective
 * values (defaults filled in, as GET's effective_policy). The official Python client parses the
 * answer as an Intent (Intent.from_dict reads id, title, status, version, state, constraints,
 * created_at, governance_policy, ...): every intent field is there, and governance_policy is the
 * policy as set. The intent's fields and the policy's share no name.
 */
export const IntentWithGovernancePolicy = Intent.extend({
  governance_policy: GovernancePolicy,
  completion_mode: z.enum(["auto", "require_approval", "quorum"]),
  write_scope: z.enum(["any", "assigned_only"]),
  max_cost: z.number().nullable(),
  quorum_threshold: z.number(),
  allowed_agents: z.array(z.string()).nullable(),
  require_status_reason: z.boolean(),
}).openapi("IntentWithGovernancePolicy");

export const GovernancePolicyView = z
  .object({ intent_id: Uuid, governance_policy: GovernancePolicy.nullable(), effective_policy: z.object({}).passthrough() })
  .passthrough()
  .openapi("GovernancePolicyView");

export const Approval = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    action: z.string(),
    reason: z.string().nullable(),
    context: z.object({}).passthrough(),
    requested_by: z.string(),
    status: z.enum(["pending", "approved", "denied"]),
    created_at: Timestamp,
    decided_at: Timestamp.nullable(),
    decided_by: z.string().nullable(),
    decision_notes: z.string().nullable(),
  })
  .passthrough()
  .openapi("Approval");

export const ApprovalList = z.object({ approvals: z.array(Approval) }).passthrough().openapi("ApprovalList");

export const EngagementDecisionSchema = z
  .object({ mode: z.string(), should_ask: z.boolean(), rationale: z.string(), signals: z.object({}).passthrough() })
  .passthrough()
  .openapi("EngagementDecision");

export const GrantedApprovals = z.object({ granted: z.number().int().nonnegative() });

export const ServerConfig = z.object({ protocol_version: z.string(), suspension: z.object({ default_retry_policy: z.object({}).passthrough().nullable() }) }).passthrough();

export const GovernanceAllowed = z.object({ allowed: z.literal(true) });

/** governance.check_many: per check, in the order asked, allowed or the error that check answers. */
export const GovernanceVerdicts = z.object({
  results: z.array(
    z.union([
      GovernanceAllowed,
      z.object({ error: z.object({ code: z.string(), status: z.number().int(), message: z.string(), details: z.record(z.string(), z.unknown()).optional(), extra: z.record(z.string(), z.unknown()).optional() }) }),
    ]),
  ),
});
export type GovernanceVerdicts = z.infer<typeof GovernanceVerdicts>;

/** The policy commands: served by the intents service, which keeps the policy in the intent's row. */
export const governancePolicyCommands = {
  set: command("intents", "governance.set", IntentRef.merge(IfMatch).extend({ body: GovernancePolicy }), IntentWithGovernancePolicy, ["INTENT_NOT_FOUND", "PRECONDITION_REQUIRED", "VERSION_MISMATCH"]),
  get: command("intents", "governance.get", IntentRef, GovernancePolicyView, ["INTENT_NOT_FOUND"]),
  remove: command("intents", "governance.remove", IntentRef.merge(IfMatch), Intent, ["INTENT_NOT_FOUND", "PRECONDITION_REQUIRED", "VERSION_MISMATCH"]),
  /**
   * Asked by other services before they write something scoped to the intent (memory entries,
   * channel messages): 403 GOVERNANCE_VIOLATION when the policy refuses the acting agent
   * (allowed_agents, write_scope), else {allowed: true}. Read from the intent's row at the time of
   * the call, so a policy whose PUT has answered binds every later write.
   */
  check: command("intents", "governance.check", IntentRef.extend({ kind: GovernedWriteKind }), GovernanceAllowed, ["GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND"]),
  /**
   * Many checks in one request, each with its own caller: what the writes of one event-loop turn
   * of a service ask (libs/service GovernanceChecks). Each is read from its intent's row when
   * this request is served, after every write it belongs to arrived, so the rule above holds for
   * each. Answers {results} in the order asked: {allowed: true} or {error} (the wire error that
   * check alone would have answered). 500 REPLY_TOO_LARGE when those verdicts pass 512 KiB (a
   * refusal names up to 1,000 allowed_agents): the asker then sends the checks one by one.
   */
  checkMany: command(
    "intents",
    "governance.check_many",
    z.object({ checks: z.array(z.object({ intent_id: Uuid, kind: GovernedWriteKind, caller: Caller })).min(1).max(GOVERNANCE_CHECKS_PER_REQUEST) }),
    GovernanceVerdicts,
    // Each check's refusal travels inside the answer; the request fails as a whole only when those
    // verdicts are too large for one answer (the asker then checks one by one), or with a 503/500.
    ["REPLY_TOO_LARGE"],
  ),
} as const;

const ApprovalRef = IntentRef.extend({ approval_id: Uuid });

export const governanceCommands = {
  createApproval: command("governance", "approvals.create", IntentRef.extend({ body: CreateApprovalBody }), Approval, ["INTENT_NOT_FOUND"]),
  getApproval: command("governance", "approvals.get", ApprovalRef, Approval, ["APPROVAL_NOT_FOUND", "INTENT_NOT_FOUND"]),
  listApprovals: command("governance", "approvals.list", IntentRef.extend({ query: ListApprovalsQuery }), ApprovalList, ["INTENT_NOT_FOUND"]),
  approve: command("governance", "approvals.approve", ApprovalRef.extend({ body: DecideApprovalBody }), Approval, ["APPROVAL_NOT_FOUND", "APPROVAL_NOT_PENDING", "INTENT_NOT_FOUND", "SELF_APPROVAL"]),
  deny: command("governance", "approvals.deny", ApprovalRef.extend({ body: DecideApprovalBody }), Approval, ["APPROVAL_NOT_FOUND", "APPROVAL_NOT_PENDING", "INTENT_NOT_FOUND", "SELF_APPROVAL"]),
  decideEngagement: command("governance", "engagement.decide", IntentRef.extend({ body: EngagementSignals }), EngagementDecisionSchema, ["INTENT_NOT_FOUND"]),
  /** GET /server/config (no key): {protocol_version, suspension: {default_retry_policy}}, the clients' retry cascade level 3. */
  serverConfig: command("governance", "server_config", z.object({}), ServerConfig),
  /** Asked by the intents service when a completion needs approvals: {granted} approvals of `action`. */
  grantedApprovals: command("governance", "approvals.granted", IntentRef.extend({ action: z.string().max(200) }), GrantedApprovals),
} as const;
