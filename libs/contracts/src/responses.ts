import { z } from "./zod";
import { Timestamp, Uuid } from "./common";
import { Assignment, Intent, Lease } from "./intents";
import { AgentSummary } from "./registry";
import { Attachment } from "./attachments";
import { PortfolioPage } from "./portfolios";
import { GovernancePolicy } from "./governance";
import { MemoryEntry } from "./memory";
import { Channel } from "./channels";

/**
 * What the operations and bus commands answer where no other module of the contracts names the
 * shape. Objects are `passthrough`: the named fields are promised, a later field is not a break.
 * Test gateways check every success body against its route's schema, and test services check
 * every bus-only command's answer against commandOutputSchema (libs/contracts/src/command-outputs.ts).
 */

const NullableTimestamp = Timestamp.nullable();

export const AssignmentList = z.object({ agents: z.array(Assignment) }).passthrough().openapi("AssignmentList");
export const LeaseList = z.object({ leases: z.array(Lease), has_more: z.boolean() }).passthrough().openapi("LeaseList");
export const AgentList = z.object({ agents: z.array(AgentSummary.passthrough()), total: z.number().int() }).passthrough().openapi("AgentList");
export const IntentPortfolioPage = PortfolioPage;
export const DeletedAttachment = Attachment;

export const GovernancePolicyView = z
  .object({ intent_id: Uuid, governance_policy: GovernancePolicy.nullable(), effective_policy: z.object({}).passthrough() })
  .passthrough()
  .openapi("GovernancePolicyView");

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

export const SuspensionResponse = z
  .object({ intent_id: Uuid, suspension_id: Uuid, resolution: z.string(), responded_by: z.string(), responded_at: Timestamp })
  .passthrough()
  .openapi("SuspensionResponse");

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
    decided_at: NullableTimestamp,
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

export const MemoryBatchResult = z.object({ entries: z.array(MemoryEntry) }).passthrough().openapi("MemoryBatchResult");
export const MemoryBatchDeleted = z.object({ deleted: z.number().int(), entry_ids: z.array(Uuid), has_more: z.boolean() }).passthrough().openapi("MemoryBatchDeleted");
export const MemoryEntryDeleted = z.object({ status: z.literal("deleted"), entry_id: Uuid }).passthrough().openapi("MemoryEntryDeleted");
export const MemoryNamespace = z
  .object({
    namespace: z.string(),
    permissions: z.object({}).passthrough(),
    access: z.string(),
    configured: z.boolean(),
    entry_count: z.number().int(),
    version: z.number().int(),
    updated_at: NullableTimestamp,
  })
  .passthrough()
  .openapi("MemoryNamespace");
export const MemoryNamespaceList = z.object({ namespaces: z.array(MemoryNamespace) }).passthrough().openapi("MemoryNamespaceList");
export const MemorySummary = z
  .object({
    agent_id: z.string(),
    working: z.object({ entry_count: z.number().int(), total_size_kb: z.number() }).passthrough(),
    episodic: z.object({ entry_count: z.number().int(), capacity: z.number().int(), pinned_count: z.number().int() }).passthrough(),
    semantic_namespaces_accessible: z.array(z.unknown()),
  })
  .passthrough()
  .openapi("MemorySummary");
export const EpisodicCapacity = z.object({ agent_id: z.string(), episodic_capacity: z.number().int().nullable() }).passthrough().openapi("EpisodicCapacity");

export const ChannelPage = z.object({ channels: z.array(Channel), next_cursor: z.string().nullable(), has_more: z.boolean() }).passthrough().openapi("ChannelPage");
export const ChannelDeleted = z.object({ status: z.string(), channel_id: Uuid }).passthrough().openapi("ChannelDeleted");

export const FederationStatus = z.object({ enabled: z.boolean() }).passthrough().openapi("FederationStatus");
export const FederationAgents = z.object({ server_did: z.string().nullable(), agents: z.array(z.object({ agent_id: z.string() }).passthrough()) }).passthrough().openapi("FederationAgents");
export const DispatchResult = z.object({ dispatch_id: Uuid, status: z.string() }).passthrough().openapi("DispatchResult");

// Bus-only commands (no REST route of their own).
export const ChannelStreamViewSchema = z.object({ channel_id: Uuid, sees_all: z.boolean(), agent_id: z.string().nullable(), to_values: z.array(z.string()) });
export const CallbackReceipt = z.object({ accepted: z.literal(true), duplicate: z.boolean() });
export const DidDocument = z.object({ id: z.string(), verificationMethod: z.array(z.object({ id: z.string() }).passthrough()) }).passthrough();
export const FederationDiscovery = z.object({ server_did: z.string(), server_url: z.string(), protocol_version: z.string() }).passthrough();
export const ReceiveAnswer = z.object({ dispatch_id: Uuid, accepted: z.literal(true), local_intent_id: Uuid }).passthrough();
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
export const LeasesHeld = z.object({ held: z.record(z.string(), z.number().int().nonnegative()) });
export const UnknownTasks = z.object({ unknown: z.array(z.string()) });
