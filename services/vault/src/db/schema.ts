import { sql } from "drizzle-orm";
import { boolean, index, integer, jsonb, pgSchema, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { inboxTable } from "@intentmesh/db";
import { outboxTable } from "@intentmesh/bus";

/** The vault service owns this schema; no other service reads it. */
export const vaultSchema = pgSchema("vault");

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const vaults = vaultSchema.table(
  "vaults",
  {
    id: uuid("id").primaryKey(),
    ownerId: text("owner_id").notNull(),
    name: text("name").notNull(),
    /** The API key principal that created it: the one (with admins) who manages its credentials and grants. */
    createdBy: text("created_by").notNull(),
    createdAt: ts("created_at").notNull(),
  },
  (t) => [uniqueIndex("vaults_owner_name_idx").on(t.ownerId, t.name), index("vaults_created_by_idx").on(t.createdBy)],
);

/**
 * A credential: its configuration in the clear, its secret material sealed (docs/vaults.md).
 * `material` is AES-256-GCM under a data key of its own; `wrapped_key` is that data key sealed
 * under the key-encryption key `kek_id`, which is configuration, never in the database. Both are
 * base64 of iv (12 bytes) | tag (16 bytes) | ciphertext, bound to the credential id (AAD).
 */
export const credentials = vaultSchema.table(
  "credentials",
  {
    id: uuid("id").primaryKey(),
    vaultId: uuid("vault_id").notNull(),
    /** The vault's creator, copied: ownership checks need no join. */
    ownerPrincipal: text("owner_principal").notNull(),
    service: text("service").notNull(),
    label: text("label").notNull(),
    authType: text("auth_type").notNull(),
    scopesAvailable: text("scopes_available").array().notNull().default(sql`'{}'::text[]`),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    secretFields: text("secret_fields").array().notNull().default(sql`'{}'::text[]`),
    status: text("status").notNull(),
    createdBy: text("created_by").notNull(),
    createdAt: ts("created_at").notNull(),
    rotatedAt: ts("rotated_at"),
    expiresAt: ts("expires_at"),
    revokedAt: ts("revoked_at"),
    kekId: text("kek_id").notNull(),
    wrappedKey: text("wrapped_key").notNull(),
    material: text("material").notNull(),
  },
  (t) => [uniqueIndex("credentials_vault_label_idx").on(t.vaultId, t.label), index("credentials_kek_idx").on(t.kekId), index("credentials_service_idx").on(t.service)],
);

export const grants = vaultSchema.table(
  "grants",
  {
    id: uuid("id").primaryKey(),
    credentialId: uuid("credential_id").notNull(),
    vaultId: uuid("vault_id").notNull(),
    ownerPrincipal: text("owner_principal").notNull(),
    service: text("service").notNull(),
    agentId: text("agent_id").notNull(),
    grantedBy: text("granted_by").notNull(),
    scopes: text("scopes").array().notNull().default(sql`'{}'::text[]`),
    constraints: jsonb("constraints").$type<Record<string, unknown>>().notNull(),
    source: text("source").notNull(),
    delegatable: boolean("delegatable").notNull(),
    delegationDepth: integer("delegation_depth").notNull(),
    delegatedFrom: uuid("delegated_from"),
    context: jsonb("context").$type<Record<string, unknown>>().notNull(),
    /** active | suspended | revoked (expired is derived from expires_at on the server clock). */
    status: text("status").notNull(),
    suspendedReason: text("suspended_reason"),
    invocationCount: integer("invocation_count").notNull().default(0),
    expiresAt: ts("expires_at"),
    createdAt: ts("created_at").notNull(),
    revokedAt: ts("revoked_at"),
  },
  (t) => [index("grants_agent_idx").on(t.agentId), index("grants_credential_idx").on(t.credentialId)],
);

export const invocations = vaultSchema.table(
  "invocations",
  {
    id: uuid("id").primaryKey(),
    grantId: uuid("grant_id").notNull(),
    credentialId: uuid("credential_id").notNull(),
    ownerPrincipal: text("owner_principal").notNull(),
    agentId: text("agent_id").notNull(),
    service: text("service").notNull(),
    tool: text("tool").notNull(),
    parameters: jsonb("parameters").$type<Record<string, unknown>>().notNull(),
    /** running (the call is out) | success | denied | error */
    status: text("status").notNull(),
    result: jsonb("result"),
    error: jsonb("error").$type<Record<string, unknown>>(),
    cost: jsonb("cost").$type<Record<string, unknown>>(),
    durationMs: integer("duration_ms"),
    httpStatus: integer("http_status"),
    idempotencyKey: text("idempotency_key"),
    context: jsonb("context").$type<Record<string, unknown>>().notNull(),
    intentId: uuid("intent_id"),
    reported: boolean("reported").notNull(),
    /** none | pending | recorded | failed: the cost's way into the intent's cost ledger. */
    costState: text("cost_state").notNull().default("none"),
    createdAt: ts("created_at").notNull(),
    completedAt: ts("completed_at"),
  },
  (t) => [
    index("invocations_grant_idx").on(t.grantId, t.createdAt),
    uniqueIndex("invocations_idempotency_idx").on(t.agentId, t.idempotencyKey).where(sql`${t.idempotencyKey} is not null`),
    index("invocations_cost_pending_idx").on(t.createdAt).where(sql`${t.costState} = 'pending'`),
  ],
);

/** Projection of the registry's agent.lifecycle events: the last status seen per agent (heartbeat rule 6). */
export const agentStatuses = vaultSchema.table("agent_statuses", {
  agentId: text("agent_id").primaryKey(),
  status: text("status").notNull(),
  /** The registry's record version at that event: an older event never overwrites a newer one. */
  version: integer("version").notNull(),
  updatedAt: ts("updated_at").notNull(),
});

/**
 * RFC-0018 keys, one row per key an agent ever registered. The current key has neither
 * retired_at nor revoked_at (at most one per agent, by the partial unique index); a rotated key
 * keeps verifying new signatures until overlap_until; a revoked key verifies nothing.
 * Public keys only: the private key never reaches the server.
 */
export const identityKeys = vaultSchema.table(
  "identity_keys",
  {
    id: uuid("id").primaryKey(),
    agentId: text("agent_id").notNull(),
    publicKey: text("public_key").notNull(),
    did: text("did").notNull(),
    registeredAt: ts("registered_at").notNull(),
    keyExpiresAt: ts("key_expires_at"),
    registeredBy: text("registered_by").notNull(),
    retiredAt: ts("retired_at"),
    overlapUntil: ts("overlap_until"),
    revokedAt: ts("revoked_at"),
    revokeReason: text("revoke_reason"),
  },
  (t) => [
    uniqueIndex("identity_keys_current_idx").on(t.agentId).where(sql`${t.retiredAt} is null and ${t.revokedAt} is null`),
    index("identity_keys_agent_idx").on(t.agentId, t.registeredAt),
    index("identity_keys_public_key_idx").on(t.publicKey),
  ],
);

/** Registration challenges (RFC-0018 §2.3): single use, five minutes by default. */
export const identityChallenges = vaultSchema.table(
  "identity_challenges",
  {
    id: uuid("id").primaryKey(),
    agentId: text("agent_id").notNull(),
    publicKey: text("public_key").notNull(),
    challenge: text("challenge").notNull(),
    keyExpiresAt: ts("key_expires_at"),
    createdAt: ts("created_at").notNull(),
    expiresAt: ts("expires_at").notNull(),
    usedAt: ts("used_at"),
  },
  (t) => [uniqueIndex("identity_challenges_challenge_idx").on(t.challenge), index("identity_challenges_agent_idx").on(t.agentId)],
);

export const outbox = outboxTable(vaultSchema);
export const inbox = inboxTable(vaultSchema);
