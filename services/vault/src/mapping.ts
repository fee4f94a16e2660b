import { isoTimestamp, type Credential, type ToolGrant, type ToolInvocation, type Vault } from "@intentmesh/contracts";
import type { credentials, grants, invocations, vaults } from "./db/schema";
import { credentialStatus, grantStatus } from "./domain/grants";

export type VaultRow = typeof vaults.$inferSelect;
export type CredentialRow = typeof credentials.$inferSelect;
export type GrantRow = typeof grants.$inferSelect;
export type InvocationRow = typeof invocations.$inferSelect;

const iso = (value: Date | null): string | null => (value ? isoTimestamp(value) : null);

export function toVault(row: VaultRow, credentialIds: string[]): Vault {
  return { id: row.id, owner_id: row.ownerId, name: row.name, created_by: row.createdBy, created_at: isoTimestamp(row.createdAt), credentials: credentialIds };
}

/** A credential as answered: configuration and the names of its secret values, never the sealed columns. */
export function toCredential(row: CredentialRow, now: Date): Credential {
  return {
    id: row.id,
    vault_id: row.vaultId,
    service: row.service,
    label: row.label,
    auth_type: row.authType as Credential["auth_type"],
    scopes_available: row.scopesAvailable,
    status: credentialStatus(row, now),
    metadata: row.metadata,
    secret_fields: row.secretFields,
    created_by: row.createdBy,
    created_at: isoTimestamp(row.createdAt),
    rotated_at: iso(row.rotatedAt),
    expires_at: iso(row.expiresAt),
    revoked_at: iso(row.revokedAt),
  };
}

export function toGrant(row: GrantRow, dormant: boolean, now: Date): ToolGrant {
  return {
    id: row.id,
    credential_id: row.credentialId,
    vault_id: row.vaultId,
    service: row.service,
    agent_id: row.agentId,
    granted_by: row.grantedBy,
    scopes: row.scopes,
    constraints: row.constraints,
    source: row.source as ToolGrant["source"],
    delegatable: row.delegatable,
    delegation_depth: row.delegationDepth,
    delegated_from: row.delegatedFrom,
    context: row.context,
    status: grantStatus({ status: row.status, expiresAt: row.expiresAt, dormant }, now),
    dormant,
    invocation_count: row.invocationCount,
    expires_at: iso(row.expiresAt),
    created_at: isoTimestamp(row.createdAt),
    revoked_at: iso(row.revokedAt),
  };
}

export function toInvocation(row: InvocationRow): ToolInvocation {
  return {
    id: row.id,
    invocation_id: row.id,
    grant_id: row.grantId,
    credential_id: row.credentialId,
    service: row.service,
    tool: row.tool,
    agent_id: row.agentId,
    parameters: row.parameters,
    // A row still `running` (its process died mid-call) reads as an error: the outcome is unknown.
    status: row.status === "running" ? "error" : (row.status as ToolInvocation["status"]),
    result: row.result ?? null,
    error: row.status === "running" ? { code: "PROXY_ERROR", message: "the invocation has not completed (or its process stopped mid-call)" } : ((row.error as ToolInvocation["error"]) ?? null),
    cost: row.cost ?? null,
    duration_ms: row.durationMs,
    http_status: row.httpStatus,
    idempotency_key: row.idempotencyKey,
    context: row.context,
    reported: row.reported,
    timestamp: isoTimestamp(row.createdAt),
  };
}
