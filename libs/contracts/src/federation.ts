import { CheckpointSignature, CheckpointStatement } from "./verifiable-logs";
import { z } from "./zod";
import { AgentId, Uuid } from "./common";
import { command } from "./command";
import { AgentStatus } from "./registry";

/**
 * Federation (SPEC 2.16, 4.11, 5.7): the contract between the gateway and the federation service.
 * The bodies of the SPEC are "not shown"; docs/federation.md fixes them.
 */

export const TRUST_POLICIES = ["open", "allowlist", "trustless"] as const;
export const TrustPolicy = z.enum(TRUST_POLICIES);
export type TrustPolicy = z.infer<typeof TrustPolicy>;

export const PEER_RELATIONSHIPS = ["peer", "upstream", "downstream"] as const;
export const AGENT_VISIBILITIES = ["public", "unlisted", "private"] as const;
export const AgentVisibility = z.enum(AGENT_VISIBILITIES);
export type AgentVisibility = z.infer<typeof AgentVisibility>;

const ServerUrl = z.string().min(1).max(2048);
const PermissionName = z.string().min(1).max(200);

export const DelegationScopeBody = z
  .object({
    permissions: z.array(PermissionName).max(200).default([]),
    denied_operations: z.array(PermissionName).max(200).default([]),
    max_delegation_depth: z.number().int().min(0).max(16).default(0),
  })
  .strict();

/** The governance fields of SPEC 2.11 an envelope carries (composed to the strictest on receive). */
export const FederationPolicyBody = z
  .object({
    max_cost: z.number().finite().min(0).optional(),
    quorum_threshold: z.number().finite().min(0).max(1).optional(),
    require_status_reason: z.boolean().optional(),
    completion_mode: z.enum(["auto", "quorum", "require_approval"]).optional(),
    write_scope: z.enum(["any", "assigned_only"]).optional(),
    allowed_agents: z.array(AgentId).max(200).optional(),
  })
  .strict();

export const DispatchBody = z
  .object({
    intent_id: Uuid,
    target_server: ServerUrl,
    agent_id: AgentId.optional(),
    delegation_scope: DelegationScopeBody.optional(),
    federation_policy: FederationPolicyBody.optional(),
    trace_context: z.record(z.string().max(64), z.string().max(512)).optional(),
    /**
     * Accepted because the official clients send it, checked by the SSRF guard, and not used:
     * the peer's callbacks always come back to this server's callback endpoint, which writes
     * them into the intent's log (docs/federation.md).
     */
    callback_url: z.string().max(2048).nullable().optional(),
    idempotency_key: z.string().min(1).max(200).optional(),
  })
  .strict()
  .openapi("FederationDispatch");
export type DispatchBody = z.infer<typeof DispatchBody>;

/** An HTTP request as the gateway received it, for signature verification: the exact body bytes (UTF-8) and the headers that were signed. */
export const SignedRequest = z.object({
  method: z.string().max(16),
  /** Path and query as received (the service joins it to its own public URL for @target-uri). */
  path: z.string().max(4096),
  headers: z.record(z.string().max(64), z.string().max(8192)),
  body: z.string(),
});
export type SignedRequest = z.infer<typeof SignedRequest>;

/** GET /api/v1/federation/agents: local agents by federation visibility (public by default). */
export const FederationAgentsQuery = z.object({
  visibility: z
    .string()
    .optional()
    .transform((v) => (v ? v.split(",").map((s) => s.trim()).filter(Boolean) : ["public"]))
    .pipe(z.array(AgentVisibility).min(1))
    .openapi({ description: "comma-separated: public, unlisted, private; default public" }),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

// What the commands answer (each command carries its output schema).
/** What both forms of GET /federation/status carry: the policy and the names the official clients read (CLIENTS.md section 1). */
const StatusFields = {
  trust_policy: TrustPolicy,
  visibility_default: AgentVisibility,
  peers: z.number().int().openapi({ description: "how many peers are configured" }),
  peer_count: z.number().int().openapi({ description: "the same as peers (the clients' name)" }),
  active_dispatches: z.number().int().openapi({ description: "dispatches being sent now" }),
  total_dispatches: z.number().int(),
  total_received: z.number().int().openapi({ description: "envelopes received and accepted" }),
};

/**
 * GET /federation/status: with federation off, `enabled: false`, no identity and zero counters
 * (the official clients read it either way); on, the identity and the counters by stage. A plain
 * union: `enabled` narrows it in TypeScript, and an OpenAPI discriminator cannot map booleans.
 */
export const FederationStatus = z
  .union([
    z.object({ enabled: z.literal(false), server_did: z.null(), server_url: z.null(), ...StatusFields }).passthrough().openapi("FederationStatusDisabled"),
    z
      .object({
        enabled: z.literal(true),
        server_did: z.string(),
        server_url: z.string(),
        key_id: z.string(),
        key_source: z.enum(["configured", "development"]),
        ...StatusFields,
        dispatches: z.object({ accepted: z.number().int(), failed: z.number().int(), sending: z.number().int() }).openapi({ description: "this server's dispatches by status" }),
        received: z.number().int().openapi({ description: "the same as total_received" }),
        callbacks: z.object({ pending: z.number().int(), delivered: z.number().int() }).openapi({ description: "callbacks to peers, waiting or delivered" }),
      })
      .passthrough()
      .openapi("FederationStatusEnabled"),
  ])
  .openapi("FederationStatus");

/** A local agent offered to federation, with the server that hosts it. */
export const FederatedAgent = z
  .object({
    agent_id: z.string(),
    name: z.string().nullable(),
    role_id: z.string().nullable(),
    capabilities: z.array(z.string()),
    status: AgentStatus,
    visibility: AgentVisibility,
    server_url: z.string(),
    server_did: z.string(),
  })
  .passthrough()
  .openapi("FederatedAgent");

export const FederationAgents = z
  .object({
    server_did: z.string().nullable().openapi({ description: "null when federation is off" }),
    agents: z.array(FederatedAgent),
    offset: z.number().int(),
    limit: z.number().int(),
    total_scanned: z.number().int().openapi({ description: "local agents read for this page, before the visibility filter" }),
    has_more: z.boolean(),
  })
  .passthrough()
  .openapi("FederationAgents");

/** A dispatch the peer accepted (a refusal is an error); a retry with the same key gets the same answer. */
export const DispatchResult = z
  .object({
    dispatch_id: Uuid,
    status: z.literal("accepted"),
    intent_id: Uuid,
    target_server: z.string(),
    target_did: z.string(),
    agent_id: z.string().nullable(),
    remote_intent_id: z.string().openapi({ description: "the intent the peer created for it (its id, as the peer spells it)" }),
    idempotency_key: z.string(),
    message: z.string(),
  })
  .passthrough()
  .openapi("DispatchResult");

export const CallbackReceipt = z.object({ accepted: z.literal(true), duplicate: z.boolean() });

export const DidDocument = z.object({ id: z.string(), verificationMethod: z.array(z.object({ id: z.string() }).passthrough()) }).passthrough();

export const FederationDiscovery = z.object({ server_did: z.string(), server_url: z.string(), protocol_version: z.string() }).passthrough();

export const ReceiveAnswer = z.object({ dispatch_id: Uuid, accepted: z.literal(true), local_intent_id: Uuid }).passthrough();

/** What a signed request from a peer may be refused with before it is read. */
const SIGNED_REQUEST_ERRORS = ["FEDERATION_DISABLED", "SIGNATURE_INVALID", "UNTRUSTED_SERVER", "SSRF_BLOCKED"] as const;

export const federationCommands = {
  discovery: command("federation", "discovery", z.object({}), FederationDiscovery, ["FEDERATION_DISABLED"]),
  did: command("federation", "did", z.object({}), DidDocument, ["FEDERATION_DISABLED"]),
  // Disabled, status and agents still answer ({enabled: false}, an empty list): the official clients read them.
  status: command("federation", "status", z.object({}), FederationStatus),
  agents: command("federation", "agents", z.object({ query: FederationAgentsQuery }), FederationAgents),
  dispatch: command("federation", "dispatch", z.object({ body: DispatchBody, idempotency_key: z.string().min(1).max(200).nullable() }), DispatchResult, ["DISPATCH_FAILED", "DISPATCH_IN_PROGRESS", "DISPATCH_TIMEOUT", "FEDERATION_DISABLED", "FEDERATION_LOOP", "IDEMPOTENCY_KEY_REUSED", "SSRF_BLOCKED"]),
  receive: command("federation", "receive", z.object({ request: SignedRequest }), ReceiveAnswer, [
    ...SIGNED_REQUEST_ERRORS,
    "AGENT_NOT_FOUND",
    "FEDERATION_LOOP",
    "DELEGATION_DEPTH_EXHAUSTED",
    "DISPATCH_IN_PROGRESS",
    "IDEMPOTENCY_KEY_REUSED",
    "VALIDATION_ERROR",
  ]),
  callback: command("federation", "callback", z.object({ dispatch_id: Uuid, request: SignedRequest }), CallbackReceipt, [...SIGNED_REQUEST_ERRORS, "DISPATCH_NOT_FOUND", "VALIDATION_ERROR"]),
  /**
   * Signs an RFC 0019 checkpoint with the server's Ed25519 identity, whose private key stays in
   * this service (asked by the intents service; no REST route). It signs only a checkpoint
   * statement, canonicalised here, never bytes a caller chose.
   */
  signCheckpoint: command("federation", "checkpoints.sign", z.object({ checkpoint: CheckpointStatement }), CheckpointSignature, ["SIGNING_UNAVAILABLE"]),
} as const;
