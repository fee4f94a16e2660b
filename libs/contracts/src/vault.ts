import { z } from "./zod";
import { ActorId, AgentId, JsonObject, Timestamp, Uuid, boundedJsonObject, pageLimit } from "./common";
import { command } from "./command";
import { agentSubjectToken } from "./registry";
import type { ZodType } from "zod";
import { defineEvent, eventNames, type EventDefinition } from "./event-definition";

/**
 * Credential vaults, credentials, tool grants, tool invocations (RFC-0014) and agent identity
 * (RFC-0018), served by the vault service on `im.vault.*`. Decisions where the RFCs, the official
 * clients and the other implementation disagree: docs/vaults.md, docs/identity.md and
 * docs/compatibility.md.
 *
 * Secret material enters in one field (`secret` of a credential body, or the secret-named keys of
 * `metadata`, which are moved out of it) and never leaves the vault service again: no schema in
 * this module has a field that could carry it out.
 */

/** RFC-0014 §1.2 auth types, with the MCP server's short spellings read as the RFC's. */
export const AUTH_TYPES = ["api_key", "oauth2_token", "oauth2_client_credentials", "bearer_token", "basic_auth", "connection_string", "custom", "webhook"] as const;
const AUTH_TYPE_ALIASES: Record<string, string> = { oauth2: "oauth2_token", bearer: "bearer_token", basic: "basic_auth", apikey: "api_key", "api-key": "api_key" };
/** The RFC's names and the clients' short spellings (documented as such, so a generated client sends either). */
export const AuthType = z
  .enum([...AUTH_TYPES, ...(Object.keys(AUTH_TYPE_ALIASES) as [string, ...string[]])])
  .transform((value) => (AUTH_TYPE_ALIASES[value] ?? value) as (typeof AUTH_TYPES)[number]);
export type AuthType = (typeof AUTH_TYPES)[number];

/**
 * Keys of a credential's `metadata` that hold secret material (the other implementation's
 * convention, which its clients follow): they are moved into the encrypted material on write and
 * are never stored or answered as metadata.
 */
export const SECRET_METADATA_KEYS = ["api_key", "token", "access_token", "refresh_token", "client_id", "client_secret", "username", "password", "signing_secret", "secret", "connection_string"] as const;

export const CREDENTIAL_STATUSES = ["active", "expired", "revoked"] as const;
export const GRANT_STATUSES = ["active", "expired", "revoked", "suspended"] as const;
/** The official Python client's InvocationStatus: a timeout is an `error` whose code says so. */
export const INVOCATION_STATUSES = ["success", "denied", "error"] as const;

/** Names: printable, no control characters, bounded. */
const Name = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\p{Cc}]+$/u, "must not contain control characters");
const Scope = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s\p{Cc}]+$/u, "must not contain whitespace or control characters");
const Scopes = z.array(Scope).max(200);
/** Python's isoformat() may omit the offset: such a time is read as UTC. */
const DateTime = z.string().datetime({ offset: true, local: true });
/** One secret value: bounded, text. */
const SecretText = z.string().min(1).max(8192);
/** The material of a credential: one value, or named values (api_key, username and password, ...). */
export const SecretMaterial = z.union([SecretText, z.record(z.string().min(1).max(100), SecretText).refine((o) => Object.keys(o).length >= 1 && Object.keys(o).length <= 16, "must name 1 to 16 values")]);

export const Vault = z
  .object({
    id: Uuid,
    owner_id: z.string(),
    name: z.string(),
    created_by: z.string(),
    created_at: Timestamp,
    credentials: z.array(z.string()).openapi({ description: "ids of the vault's credentials (RFC-0014 §1.1)" }),
  })
  .openapi("Vault");
export type Vault = z.infer<typeof Vault>;

export const CreateVaultBody = z
  .object({
    owner_id: ActorId.optional().openapi({ description: "the user or organization owning the vault; default the acting agent or the key's principal" }),
    name: Name,
  })
  .strict()
  .openapi("CreateVaultBody");
export type CreateVaultBody = z.infer<typeof CreateVaultBody>;

export const VaultList = z.object({ vaults: z.array(Vault) }).openapi("VaultList");

export const Credential = z
  .object({
    id: Uuid,
    vault_id: Uuid,
    service: z.string(),
    label: z.string(),
    auth_type: z.enum(AUTH_TYPES),
    scopes_available: z.array(z.string()),
    status: z.enum(CREDENTIAL_STATUSES),
    metadata: JsonObject.openapi({ description: "non-secret configuration (base_url, endpoints, auth); secret-named keys are never here" }),
    secret_fields: z.array(z.string()).openapi({ description: "names of the values held in the encrypted material (never the values)" }),
    created_by: z.string(),
    created_at: Timestamp,
    rotated_at: Timestamp.nullable(),
    expires_at: Timestamp.nullable(),
    revoked_at: Timestamp.nullable(),
  })
  .openapi("Credential");
export type Credential = z.infer<typeof Credential>;

/**
 * A credential as the Python client (`POST /credentials`, vault_id in the body), the RFC
 * (`POST /vaults/{id}/credentials`) and the MCP server (`name`, `credential_type`, `stored_by`)
 * send it. `service` defaults to `label`/`name`, `auth_type` to api_key.
 */
export const CredentialBody = z
  .object({
    vault_id: Uuid.optional(),
    service: Name.optional(),
    label: Name.optional(),
    name: Name.optional().openapi({ description: "MCP spelling of label" }),
    auth_type: AuthType.optional(),
    credential_type: AuthType.optional().openapi({ description: "MCP spelling of auth_type" }),
    scopes_available: Scopes.optional(),
    metadata: boundedJsonObject(16 * 1024).optional(),
    secret: SecretMaterial.optional().openapi({ description: "the secret material, encrypted at rest and never answered: one value, or named values" }),
    stored_by: ActorId.optional().openapi({ description: "MCP: who stores it (informational; the caller is recorded)" }),
    expires_at: DateTime.nullable().optional(),
  })
  .strict()
  .openapi("CredentialBody");
export type CredentialBody = z.infer<typeof CredentialBody>;

export const RotateCredentialBody = z
  .object({ secret: SecretMaterial, metadata: boundedJsonObject(16 * 1024).optional(), expires_at: DateTime.nullable().optional() })
  .strict()
  .openapi("RotateCredentialBody");
export type RotateCredentialBody = z.infer<typeof RotateCredentialBody>;

export const CredentialList = z.object({ credentials: z.array(Credential) }).openapi("CredentialList");

/** RFC-0014 §2.1 constraints; other keys pass through and are kept. */
export const GrantConstraints = z
  .object({
    max_invocations_per_hour: z.number().int().min(0).max(1_000_000).nullable().optional(),
    max_invocations: z.number().int().min(0).max(1_000_000_000).nullable().optional().openapi({ description: "usage limit over the grant's whole life" }),
    max_cost_per_invocation: z.number().min(0).max(1e12).nullable().optional().openapi({ description: "cents" }),
    allowed_parameters: JsonObject.nullable().optional(),
    denied_parameters: JsonObject.nullable().optional(),
    ip_allowlist: z.array(z.string().max(100)).max(100).nullable().optional(),
  })
  .passthrough();
export type GrantConstraints = z.infer<typeof GrantConstraints>;

const GrantContext = z
  .object({
    intent_id: Uuid.nullable().optional(),
    plan_id: z.string().max(200).nullable().optional(),
    task_id: z.string().max(200).nullable().optional(),
    tools: z.array(Scope).max(200).optional(),
  })
  .passthrough();

export const ToolGrant = z
  .object({
    id: Uuid,
    credential_id: Uuid,
    vault_id: Uuid,
    service: z.string(),
    agent_id: z.string(),
    granted_by: z.string(),
    scopes: z.array(z.string()),
    constraints: JsonObject,
    source: z.enum(["direct", "delegated"]),
    delegatable: z.boolean(),
    delegation_depth: z.number().int(),
    delegated_from: z.string().nullable(),
    context: JsonObject,
    status: z.enum(GRANT_STATUSES),
    dormant: z.boolean().openapi({ description: "the agent is deregistered: the grant is kept but refuses every use until it registers again" }),
    invocation_count: z.number().int(),
    expires_at: Timestamp.nullable(),
    created_at: Timestamp,
    revoked_at: Timestamp.nullable(),
  })
  .openapi("ToolGrant");
export type ToolGrant = z.infer<typeof ToolGrant>;

export const CreateGrantBody = z
  .object({
    credential_id: Uuid,
    agent_id: AgentId,
    granted_by: ActorId.optional(),
    scopes: Scopes.default([]),
    constraints: withConstraints().optional(),
    delegatable: z.boolean().optional(),
    delegation_depth: z.number().int().min(0).max(16).nullable().optional(),
    expires_at: DateTime.nullable().optional(),
    context: GrantContext.optional(),
  })
  .strict()
  .openapi("CreateGrantBody");
export type CreateGrantBody = z.infer<typeof CreateGrantBody>;

/** MCP `openintent_grant_tool`: a grant of one tool, bound to an intent, the credential found by the tool's name. */
export const GrantToolBody = z
  .object({ agent_id: AgentId, tool_name: Scope, constraints: withConstraints().optional(), granted_by: ActorId.optional(), expires_at: DateTime.nullable().optional() })
  .strict()
  .openapi("GrantToolBody");
export type GrantToolBody = z.infer<typeof GrantToolBody>;

function withConstraints() {
  return GrantConstraints.superRefine((value, ctx) => {
    if (JSON.stringify(value).length > 16 * 1024) ctx.addIssue({ code: "custom", message: "constraints must be at most 16 KiB of JSON" });
  });
}

export const SuspendGrantBody = z.object({ reason: z.string().max(500).optional() }).strict();

export const ListGrantsQuery = z.object({
  agent_id: AgentId.optional(),
  credential_id: Uuid.optional(),
  service: z.string().max(200).optional(),
  limit: pageLimit(100, 500),
});
export type ListGrantsQuery = z.infer<typeof ListGrantsQuery>;
export const GrantList = z.object({ grants: z.array(ToolGrant) }).openapi("GrantList");
export const GrantArray = z.array(ToolGrant).openapi("GrantArray");

export const GrantedTool = z.object({
  grant_id: Uuid,
  service: z.string(),
  tool: z.string(),
  constraints: JsonObject,
  source: z.enum(["direct", "delegated"]),
  delegated_from: z.string().nullable(),
  context: JsonObject,
  expires_at: Timestamp.nullable(),
});
export const GrantedTools = z.object({ agent_id: z.string(), tools: z.array(GrantedTool) }).openapi("GrantedTools");

export const GrantRevoked = z.object({ status: z.literal("revoked"), grant_id: Uuid, grant: ToolGrant }).openapi("GrantRevoked");

/** RFC-0014 §3.1 and the Python client's `invoke_tool` (tool_name, agent_id, parameters). */
export const InvokeToolBody = z
  .object({
    tool_name: Scope.optional(),
    tool: Scope.optional().openapi({ description: "RFC spelling of tool_name (e.g. stripe.charges.read)" }),
    grant_id: Uuid.optional(),
    agent_id: AgentId.optional().openapi({ description: "default the acting agent" }),
    parameters: boundedJsonObject(64 * 1024).default({}),
    idempotency_key: z.string().min(1).max(200).optional(),
    context: z
      .object({ intent_id: Uuid.nullable().optional(), task_id: z.string().max(200).nullable().optional(), agent_id: AgentId.optional() })
      .passthrough()
      .optional(),
  })
  .strict()
  .refine((body) => body.tool_name !== undefined || body.tool !== undefined, { message: "tool_name (or tool) is required", path: ["tool_name"] })
  .openapi("InvokeToolBody");
export type InvokeToolBody = z.infer<typeof InvokeToolBody>;

export const InvocationError = z.object({ code: z.string(), message: z.string() }).passthrough();

export const ToolInvocation = z
  .object({
    id: Uuid,
    invocation_id: Uuid,
    grant_id: Uuid,
    credential_id: Uuid,
    service: z.string(),
    tool: z.string(),
    agent_id: z.string(),
    parameters: JsonObject,
    status: z.enum(INVOCATION_STATUSES),
    result: z.unknown().nullable(),
    error: InvocationError.nullable(),
    cost: JsonObject.nullable(),
    duration_ms: z.number().int().nullable(),
    http_status: z.number().int().nullable(),
    idempotency_key: z.string().nullable(),
    context: JsonObject,
    reported: z.boolean().openapi({ description: "true: recorded by a client (POST /invocations); false: executed by the tool proxy" }),
    timestamp: Timestamp,
  })
  .openapi("ToolInvocation");
export type ToolInvocation = z.infer<typeof ToolInvocation>;

/** The answer of POST /tools/invoke (RFC-0014 §3.3 plus the Python client's tool_name). */
export const ToolInvokeResult = ToolInvocation.extend({ tool_name: z.string() }).openapi("ToolInvokeResult");

export const RecordInvocationBody = z
  .object({
    grant_id: Uuid,
    service: Name,
    tool: Scope,
    agent_id: AgentId,
    parameters: boundedJsonObject(16 * 1024).optional(),
    status: z.enum(INVOCATION_STATUSES).optional(),
    result: boundedJsonObject(32 * 1024).nullable().optional(),
    error: boundedJsonObject(4 * 1024).nullable().optional(),
    cost: boundedJsonObject(4 * 1024).nullable().optional(),
    duration_ms: z.number().int().min(0).max(86_400_000).nullable().optional(),
    idempotency_key: z.string().min(1).max(200).nullable().optional(),
    context: boundedJsonObject(4 * 1024).optional(),
  })
  .strict()
  .openapi("RecordInvocationBody");
export type RecordInvocationBody = z.infer<typeof RecordInvocationBody>;

export const ListInvocationsQuery = z.object({ limit: pageLimit(50, 500) });
export const InvocationArray = z.array(ToolInvocation).openapi("InvocationArray");

export const RewrapResult = z
  .object({ rewrapped: z.number().int(), remaining: z.number().int(), primary_key_id: z.string() })
  .openapi("RewrapResult");

// ---------------------------------------------------------------------------------------------
// RFC-0018 agent identity
// ---------------------------------------------------------------------------------------------

/** `ed25519:<base64url>`, bare base64/base64url of the 32 bytes, or base64 of the SPKI DER (the clients' docs show both). */
export const PublicKeyText = z.string().min(40).max(200).regex(/^[A-Za-z0-9+/=_:-]+$/, "must be ed25519:<base64url> or the base64 of an Ed25519 public key");
export const SignatureText = z.string().min(80).max(200).regex(/^[A-Za-z0-9+/=_-]+$/, "must be the base64url (or base64) of a 64-byte Ed25519 signature");
/** Ed25519, as the RFC writes it or as the MCP server does (`ed25519`). */
const KeyAlgorithm = z.enum(["Ed25519", "ed25519"]).transform(() => "Ed25519" as const);

export const AgentIdentity = z
  .object({
    agent_id: z.string(),
    public_key: z.string(),
    did: z.string(),
    key_algorithm: z.literal("Ed25519"),
    registered_at: Timestamp,
    key_expires_at: Timestamp.nullable(),
    previous_keys: z.array(z.string()).openapi({ description: "keys this one replaced, most recent first (still verify historical signatures)" }),
    overlap_until: Timestamp.nullable().openapi({ description: "until then the key this one replaced still verifies new signatures" }),
    metadata: JsonObject,
  })
  .openapi("AgentIdentity");
export type AgentIdentity = z.infer<typeof AgentIdentity>;

export const IdentityChallenge = z
  .object({ agent_id: z.string(), challenge: z.string(), challenge_expires_at: Timestamp, signs: z.string().openapi({ description: "what the signature must cover" }) })
  .openapi("IdentityChallenge");

export const RegisterIdentityBody = z
  .object({ public_key: PublicKeyText, key_algorithm: KeyAlgorithm.optional(), key_expires_at: DateTime.nullable().optional() })
  .strict()
  .openapi("RegisterIdentityBody");
/** MCP `openintent_register_identity`: the agent in the body, `key_type`. */
export const McpRegisterIdentityBody = z
  .object({ agent_id: AgentId, public_key: PublicKeyText, key_type: KeyAlgorithm.optional(), key_expires_at: DateTime.nullable().optional() })
  .strict()
  .openapi("McpRegisterIdentityBody");
export const ChallengeResponseBody = z.object({ challenge: z.string().min(1).max(200), signature: SignatureText }).strict().openapi("ChallengeResponseBody");
/** MCP `openintent_verify_challenge`. */
export const McpChallengeResponseBody = ChallengeResponseBody.extend({ agent_id: AgentId }).strict().openapi("McpChallengeResponseBody");

export const VerifySignatureBody = z
  .object({ payload: boundedJsonObject(64 * 1024), signature: SignatureText })
  .strict()
  .openapi("VerifySignatureBody");
export const IdentityVerification = z
  .object({
    valid: z.boolean(),
    agent_id: z.string(),
    did: z.string(),
    verified_at: Timestamp,
    public_key: z.string().nullable().openapi({ description: "the key the signature verified against (null when none did)" }),
  })
  .openapi("IdentityVerification");

export const RotateKeyBody = z
  .object({ action: z.literal("rotate").optional(), new_public_key: PublicKeyText, old_public_key: PublicKeyText.optional(), signature: SignatureText.optional(), rotation_proof: SignatureText.optional() })
  .strict()
  .refine((b) => b.signature !== undefined || b.rotation_proof !== undefined, { message: "signature (or rotation_proof) is required", path: ["signature"] })
  .openapi("RotateKeyBody");
export type RotateKeyBody = z.infer<typeof RotateKeyBody>;

export const RevokeIdentityBody = z.object({ reason: z.string().max(500).optional() }).strict();
export const IdentityRevoked = z.object({ agent_id: z.string(), revoked: z.literal(true), public_key: z.string(), revoked_at: Timestamp }).openapi("IdentityRevoked");

/** Asked by the intents service for a signed event (RFC-0018 §3.4): does this signature verify for this agent now? */
export const CheckSignatureInput = z.object({ agent_id: z.string().min(1).max(200), payload: JsonObject, signature: z.string().max(200), verification_method: z.string().max(300).nullable().optional() });
export const SignatureCheck = z.object({ valid: z.boolean(), has_identity: z.boolean(), did: z.string().nullable(), reason: z.string().nullable() });
export type SignatureCheck = z.infer<typeof SignatureCheck>;

const AgentRef = z.object({ agent_id: AgentId });
const VaultRef = z.object({ vault_id: Uuid });
const CredentialRef = z.object({ credential_id: Uuid });
const GrantRef = z.object({ grant_id: Uuid });

export const vaultCommands = {
  createVault: command("vault", "vaults.create", z.object({ body: CreateVaultBody }), Vault, ["VAULT_NAME_TAKEN"]),
  listVaults: command("vault", "vaults.list", z.object({}), VaultList),
  getVault: command("vault", "vaults.get", VaultRef, Vault, ["VAULT_ACCESS_DENIED", "VAULT_NOT_FOUND"]),
  createCredential: command("vault", "credentials.create", z.object({ vault_id: Uuid.optional(), body: CredentialBody }), Credential, ["CREDENTIAL_LABEL_TAKEN", "VAULT_ACCESS_DENIED", "VAULT_NOT_FOUND"]),
  listCredentials: command("vault", "credentials.list", VaultRef, CredentialList, ["VAULT_ACCESS_DENIED", "VAULT_NOT_FOUND"]),
  getCredential: command("vault", "credentials.get", CredentialRef, Credential, ["CREDENTIAL_NOT_FOUND", "VAULT_ACCESS_DENIED"]),
  getCredentialByName: command("vault", "credentials.by_name", VaultRef.extend({ credential_name: z.string().min(1).max(200) }), Credential, ["CREDENTIAL_NOT_FOUND", "VAULT_ACCESS_DENIED", "VAULT_NOT_FOUND"]),
  rotateCredential: command("vault", "credentials.rotate", CredentialRef.extend({ body: RotateCredentialBody }), Credential, ["CREDENTIAL_NOT_FOUND", "CREDENTIAL_REVOKED", "VAULT_ACCESS_DENIED"]),
  revokeCredential: command("vault", "credentials.revoke", CredentialRef, Credential, ["CREDENTIAL_NOT_FOUND", "VAULT_ACCESS_DENIED"]),
  createGrant: command("vault", "grants.create", z.object({ body: CreateGrantBody }), ToolGrant, ["CREDENTIAL_EXPIRED", "CREDENTIAL_NOT_FOUND", "CREDENTIAL_REVOKED", "INTENT_NOT_FOUND", "SCOPE_NOT_AVAILABLE", "VAULT_ACCESS_DENIED"]),
  grantTool: command("vault", "grants.grant_tool", z.object({ intent_id: Uuid, body: GrantToolBody }), ToolGrant, ["AMBIGUOUS_TOOL", "CREDENTIAL_EXPIRED", "CREDENTIAL_NOT_FOUND", "CREDENTIAL_REVOKED", "INTENT_NOT_FOUND", "SCOPE_NOT_AVAILABLE"]),
  getGrant: command("vault", "grants.get", GrantRef, ToolGrant, ["GRANT_NOT_FOUND"]),
  listGrants: command("vault", "grants.list", z.object({ query: ListGrantsQuery }), GrantList),
  agentGrants: command("vault", "grants.of_agent", AgentRef, GrantArray),
  grantedTools: command("vault", "tools.granted", z.object({ query: z.object({ agent_id: AgentId.optional() }) }), GrantedTools),
  revokeGrant: command("vault", "grants.revoke", GrantRef, GrantRevoked, ["GRANT_NOT_FOUND", "VAULT_ACCESS_DENIED"]),
  suspendGrant: command("vault", "grants.suspend", GrantRef.extend({ body: SuspendGrantBody }), ToolGrant, ["GRANT_NOT_FOUND", "GRANT_REVOKED", "VAULT_ACCESS_DENIED"]),
  resumeGrant: command("vault", "grants.resume", GrantRef, ToolGrant, ["GRANT_NOT_FOUND", "GRANT_REVOKED", "VAULT_ACCESS_DENIED"]),
  invokeTool: command("vault", "tools.invoke", z.object({ body: InvokeToolBody }), ToolInvokeResult, ["CREDENTIAL_EXPIRED", "CREDENTIAL_REVOKED", "GRANT_CONTEXT_MISMATCH", "GRANT_DORMANT", "GRANT_EXHAUSTED", "GRANT_EXPIRED", "GRANT_NOT_FOUND", "GRANT_PARAMETER_DENIED", "GRANT_RATE_LIMITED", "GRANT_REVOKED", "GRANT_SCOPE_INSUFFICIENT", "GRANT_SUSPENDED", "IDEMPOTENCY_KEY_REUSED", "TOOL_NOT_CALLABLE"]),
  recordInvocation: command("vault", "invocations.record", z.object({ body: RecordInvocationBody }), ToolInvocation, ["AGENT_MISMATCH", "GRANT_CONTEXT_MISMATCH", "GRANT_NOT_FOUND", "GRANT_REVOKED", "GRANT_SCOPE_INSUFFICIENT", "IDEMPOTENCY_KEY_REUSED"]),
  listInvocations: command("vault", "invocations.list", GrantRef.extend({ query: ListInvocationsQuery }), InvocationArray, ["GRANT_NOT_FOUND"]),
  rewrap: command("vault", "keys.rewrap", z.object({ body: z.object({ limit: z.number().int().min(1).max(10_000).optional() }).strict() }), RewrapResult),
  registerIdentity: command("vault", "identity.register", AgentRef.extend({ body: RegisterIdentityBody }), IdentityChallenge, ["IDENTITY_EXISTS"]),
  registerIdentityMcp: command("vault", "identity.register_mcp", z.object({ body: McpRegisterIdentityBody }), IdentityChallenge, ["IDENTITY_EXISTS"]),
  completeChallenge: command("vault", "identity.challenge", AgentRef.extend({ body: ChallengeResponseBody }), AgentIdentity, ["CHALLENGE_INVALID", "IDENTITY_EXISTS", "SIGNATURE_REJECTED"]),
  completeChallengeMcp: command("vault", "identity.challenge_mcp", z.object({ body: McpChallengeResponseBody }), AgentIdentity, ["CHALLENGE_INVALID", "IDENTITY_EXISTS", "SIGNATURE_REJECTED"]),
  getIdentity: command("vault", "identity.get", AgentRef, AgentIdentity, ["IDENTITY_NOT_FOUND"]),
  verifySignature: command("vault", "identity.verify", AgentRef.extend({ body: VerifySignatureBody }), IdentityVerification, ["IDENTITY_NOT_FOUND"]),
  rotateKey: command("vault", "identity.rotate", AgentRef.extend({ body: RotateKeyBody }), AgentIdentity, ["IDENTITY_NOT_FOUND", "KEY_MISMATCH", "SIGNATURE_REJECTED"]),
  revokeIdentity: command("vault", "identity.revoke", AgentRef.extend({ body: RevokeIdentityBody }), IdentityRevoked, ["IDENTITY_NOT_FOUND"]),
  checkSignature: command("vault", "identity.check", CheckSignatureInput, SignatureCheck),
} as const;

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

/**
 * The vault service's own events: `im.evt.vault.<kind>.<token>.<event_type>` on stream IM_VAULT,
 * kind `credential`, `grant`, `invocation` (token: the id) or `identity` (token: the agent's
 * subject token). A tool invocation with an intent in its context is also appended to that
 * intent's log as `tool.invoked` (system-event path).
 */
export const vaultStream = { name: "IM_VAULT", subjects: ["im.evt.vault.>"] } as const;
export const VAULT_EVENT_SCHEMA = "im.vault-event/1";
export type VaultEventKind = "credential" | "grant" | "invocation" | "identity";

export const VaultEvent = z.object({
  id: Uuid,
  event_type: z.string(),
  actor: z.string(),
  /** The agent concerned (grants, invocations, identity), when there is one. */
  agent_id: z.string().nullable(),
  payload: JsonObject,
  occurred_at: Timestamp,
});
export type VaultEvent = z.infer<typeof VaultEvent>;

/** tool.invoked in an intent's log (RFC-0014 §6.1 data): never parameters' secrets, never credential material. */
export const ToolInvokedPayload = z
  .object({
    invocation_id: z.string().min(1),
    grant_id: z.string().min(1),
    agent_id: z.string(),
    service: z.string(),
    tool: z.string(),
    status: z.string(),
    duration_ms: z.number().int().nullable(),
    cost: JsonObject.nullable(),
    parameters_summary: JsonObject,
  })
  .passthrough();

// Payloads: what the vault's handlers and its agent projection write (RFC-0014 §6 and RFC-0018
// name the events and show no payloads). Never secret material: ids, labels, public keys.
const VaultId = z.string().min(1);
const CredentialCreatedPayload = z.object({ credential_id: VaultId, vault_id: VaultId, service: z.string(), auth_type: z.string() }).passthrough();
const CredentialRotatedPayload = z.object({ credential_id: VaultId, rotated_by: z.string() }).passthrough();
const CredentialRevokedPayload = z.object({ credential_id: VaultId, reason: z.literal("revoked"), affected_grants_count: z.number().int().nonnegative() }).passthrough();
const GrantCreatedPayload = z
  .object({ grant_id: VaultId, credential_id: VaultId, agent_id: z.string(), scopes: z.array(z.string()), expires_at: z.string().nullable() })
  .passthrough();
/** revoked: the grant itself; cascade: a grant delegated from it; credential_revoked: its credential was revoked. */
const GrantRevokedPayload = z
  .object({ grant_id: VaultId, reason: z.enum(["revoked", "cascade", "credential_revoked"]), cascade_count: z.number().int().nonnegative() })
  .passthrough();
const GrantSuspendedPayload = z.object({ grant_id: VaultId, reason: z.string().nullable() }).passthrough();
const GrantResumedPayload = z.object({ grant_id: VaultId }).passthrough();
const GrantDormancyPayload = z.object({ grant_id: VaultId, agent_id: z.string(), reason: z.enum(["agent_deregistered", "agent_registered"]) }).passthrough();
const IdentityKey = { agent_id: z.string().min(1), public_key: z.string(), did: z.string() };
const IdentityRegisteredPayload = z.object(IdentityKey).passthrough();
const IdentityRotatedPayload = z.object({ ...IdentityKey, previous_public_key: z.string(), overlap_until: z.string() }).passthrough();
const IdentityRevokedPayload = z.object({ ...IdentityKey, reason: z.string().nullable() }).passthrough();

const VAULT = "written by the vault on its own log (IM_VAULT); never credential material";
/** A vault event: its definition and the kind of subject it is published under (im.evt.vault.<kind>.<token>.<name>). */
const vaultEvent = <const Name extends string, Schema extends ZodType, const Kind extends VaultEventKind>(kind: Kind, name: Name, payload: Schema) => ({
  ...defineEvent({ name, logs: ["vault"], payload, description: VAULT }),
  kind,
});

/** RFC-0014 §6 and RFC-0018 events, each one definition (defineEvent): the only place their names are spelled. */
export const vaultEvents = {
  credentialCreated: vaultEvent("credential", "credential.created", CredentialCreatedPayload),
  credentialRotated: vaultEvent("credential", "credential.rotated", CredentialRotatedPayload),
  credentialRevoked: vaultEvent("credential", "credential.revoked", CredentialRevokedPayload),
  grantCreated: vaultEvent("grant", "grant.created", GrantCreatedPayload),
  grantRevoked: vaultEvent("grant", "grant.revoked", GrantRevokedPayload),
  grantSuspended: vaultEvent("grant", "grant.suspended", GrantSuspendedPayload),
  grantResumed: vaultEvent("grant", "grant.resumed", GrantResumedPayload),
  /** The grant's agent was deregistered (spec 4.9 heartbeat rule 6): every use refused until it registers again. */
  grantDormant: vaultEvent("grant", "grant.dormant", GrantDormancyPayload),
  grantAwake: vaultEvent("grant", "grant.awake", GrantDormancyPayload),
  /**
   * On the vault's log, and on the intent's log too when the invocation names an intent: a system
   * event there (the intents service appends it after checking it against this schema).
   */
  toolInvoked: {
    ...defineEvent({
      name: "tool.invoked",
      logs: ["vault", "intent"],
      payload: ToolInvokedPayload,
      system: true,
      description: "a tool invoked through the vault's tool proxy or recorded by its agent (RFC-0014 §6.1); on the intent's log when the invocation names one; never credential material",
    }),
    kind: "invocation" as const,
  },
  identityRegistered: vaultEvent("identity", "agent.identity.registered", IdentityRegisteredPayload),
  identityRotated: vaultEvent("identity", "agent.identity.rotated", IdentityRotatedPayload),
  identityRevoked: vaultEvent("identity", "agent.identity.revoked", IdentityRevokedPayload),
} as const satisfies Record<string, EventDefinition & { kind: VaultEventKind }>;
/** The names of vaultEvents by key, derived (a name is spelled once, above). */
export const vaultEventTypes = eventNames(vaultEvents);
export type VaultEventType = (typeof vaultEventTypes)[keyof typeof vaultEventTypes];
/** One of the vault's event definitions. */
export type VaultEventDefinition = (typeof vaultEvents)[keyof typeof vaultEvents];

/** The subject of a vault event: kind and name from its definition, token from its key (identity: the agent's subject token). */
export const vaultEventSubject = (definition: VaultEventDefinition, key: string) =>
  `im.evt.vault.${definition.kind}.${definition.kind === "identity" ? agentSubjectToken(key) : key}.${definition.name}`;
export const vaultEventMsgId = (eventId: string) => `vault:${eventId}`;
