import { randomUUID } from "node:crypto";
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { SECRET_METADATA_KEYS, appError, errors, vaultEvents, type Caller, type Credential, type CredentialBody, type CreateVaultBody, type RotateCredentialBody, type Vault } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { isAdmin, type VaultContext } from "../context";
import { credentials, grants, vaults } from "../db/schema";
import { toCredential, toVault, type CredentialRow, type VaultRow } from "../mapping";
import { vaultEvent, writeVaultEvents } from "../events";

/** Vaults and credentials (RFC-0014 §1). Ownership: the vault's creating principal, and admins. */

export async function createVault(ctx: VaultContext, body: CreateVaultBody, caller: Caller): Promise<Vault> {
  const row: VaultRow = { id: randomUUID(), ownerId: body.owner_id ?? caller.actor, name: body.name, createdBy: caller.principal, createdAt: ctx.clock.now() };
  const [inserted] = await ctx.db.insert(vaults).values(row).onConflictDoNothing().returning();
  if (!inserted) throw appError("VAULT_NAME_TAKEN", `owner ${row.ownerId} already has a vault named ${body.name}`, { owner_id: row.ownerId, name: body.name });
  return toVault(inserted, []);
}

export async function listVaults(ctx: VaultContext, caller: Caller): Promise<{ vaults: Vault[] }> {
  const rows = await ctx.db
    .select()
    .from(vaults)
    .where(isAdmin(caller) ? undefined : eq(vaults.createdBy, caller.principal))
    .orderBy(asc(vaults.createdAt))
    .limit(500);
  const ids = await credentialIdsOf(ctx, rows.map((r) => r.id));
  return { vaults: rows.map((row) => toVault(row, ids.get(row.id) ?? [])) };
}

export async function getVault(ctx: VaultContext, vaultId: string, caller: Caller): Promise<Vault> {
  const row = await ownedVault(ctx, vaultId, caller);
  const ids = await credentialIdsOf(ctx, [row.id]);
  return toVault(row, ids.get(row.id) ?? []);
}

async function credentialIdsOf(ctx: VaultContext, vaultIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (!vaultIds.length) return out;
  const rows = await ctx.db
    .select({ id: credentials.id, vaultId: credentials.vaultId })
    .from(credentials)
    .where(inArray(credentials.vaultId, vaultIds))
    .orderBy(asc(credentials.createdAt));
  for (const row of rows) out.set(row.vaultId, [...(out.get(row.vaultId) ?? []), row.id]);
  return out;
}

/** The vault, when the caller owns it (or is an admin). */
export async function ownedVault(ctx: VaultContext | { db: Tx | VaultContext["db"] }, vaultId: string, caller: Caller): Promise<VaultRow> {
  const [row] = await ctx.db.select().from(vaults).where(eq(vaults.id, vaultId));
  if (!row) throw errors.notFound("vault", vaultId);
  if (!isAdmin(caller) && row.createdBy !== caller.principal) {
    throw appError("VAULT_ACCESS_DENIED", `vault ${vaultId} belongs to another principal; only its creator and admins manage it`, { vault_id: vaultId });
  }
  return row;
}

/** The credential, when the caller owns its vault (or is an admin). */
export async function ownedCredential(ctx: VaultContext, credentialId: string, caller: Caller): Promise<CredentialRow> {
  const [row] = await ctx.db.select().from(credentials).where(eq(credentials.id, credentialId));
  if (!row) throw errors.notFound("credential", credentialId);
  if (!isAdmin(caller) && row.ownerPrincipal !== caller.principal) {
    throw appError("VAULT_ACCESS_DENIED", `credential ${credentialId} is in a vault of another principal`, { credential_id: credentialId });
  }
  return row;
}

const SECRET_KEYS: ReadonlySet<string> = new Set(SECRET_METADATA_KEYS);

/**
 * Splits what a client sent into the configuration kept in the clear and the material sealed:
 * `secret` (one value, named after the auth type, or named values), plus any secret-named key of
 * `metadata` (the other implementation's convention), which is moved out of the metadata.
 */
export function splitMaterial(authType: string, secret: CredentialBody["secret"], metadata: Record<string, unknown>): { material: Record<string, string>; metadata: Record<string, unknown> } {
  const material: Record<string, string> = {};
  const clear: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (SECRET_KEYS.has(key.toLowerCase())) {
      if (typeof value === "string" && value !== "") material[key.toLowerCase()] = value;
      else if (value !== null && value !== undefined) throw errors.validation(`metadata.${key} is a secret field and must be a string`, [{ path: `metadata.${key}`, message: "must be a string", code: "invalid_type" }]);
      continue;
    }
    clear[key] = value;
  }
  if (typeof secret === "string") {
    if (authType === "basic_auth") {
      const colon = secret.indexOf(":");
      if (colon <= 0) throw errors.validation("secret: a basic_auth secret is username:password (or {username, password})", [{ path: "secret", message: "must be username:password", code: "custom" }]);
      material.username = secret.slice(0, colon);
      material.password = secret.slice(colon + 1);
    } else {
      material[defaultSecretName(authType)] = secret;
    }
  } else if (secret) {
    for (const [key, value] of Object.entries(secret)) material[key.toLowerCase()] = value;
  }
  return { material, metadata: clear };
}

function defaultSecretName(authType: string): string {
  if (authType === "api_key") return "api_key";
  if (authType === "connection_string") return "connection_string";
  if (authType === "bearer_token" || authType === "oauth2_token") return "token";
  return "secret";
}

/** The execution configuration must be one the proxy can use: base_url http(s), endpoints with paths. */
export function checkExecutionConfig(metadata: Record<string, unknown>): void {
  const bad = (path: string, message: string) => errors.validation(`metadata.${path}: ${message}`, [{ path: `metadata.${path}`, message, code: "custom" }]);
  if (metadata.base_url !== undefined) {
    if (typeof metadata.base_url !== "string") throw bad("base_url", "must be an http(s) URL");
    // Scheme and userinfo only; whether the address may be reached is the SSRF guard's decision at each call.
    let url: URL | null = null;
    try {
      url = new URL(metadata.base_url);
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.username !== "" || url.password !== "") {
      throw bad("base_url", "must be an absolute http(s) URL without user information");
    }
  }
  if (metadata.endpoints !== undefined) {
    if (!isObject(metadata.endpoints)) throw bad("endpoints", "must be an object of tool name -> {path, method, param_mapping, cost_cents}");
    for (const [tool, endpoint] of Object.entries(metadata.endpoints)) {
      if (!isObject(endpoint)) throw bad(`endpoints.${tool}`, "must be an object");
      if (endpoint.path !== undefined && (typeof endpoint.path !== "string" || !endpoint.path.startsWith("/"))) throw bad(`endpoints.${tool}.path`, "must start with /");
      if (endpoint.method !== undefined && !["GET", "POST", "PUT", "PATCH", "DELETE"].includes(String(endpoint.method).toUpperCase())) throw bad(`endpoints.${tool}.method`, "must be GET, POST, PUT, PATCH or DELETE");
      if (endpoint.cost_cents !== undefined && !(typeof endpoint.cost_cents === "number" && endpoint.cost_cents >= 0 && endpoint.cost_cents <= 1e9)) throw bad(`endpoints.${tool}.cost_cents`, "must be a number from 0 to 1e9");
    }
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

const parseTime = (value: string | null | undefined): Date | null => {
  if (!value) return null;
  // Python's isoformat() may omit the offset: read as UTC.
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);
};
export { parseTime };

/** POST /credentials (vault in the body) and POST /vaults/{id}/credentials (RFC and MCP shapes). */
export async function createCredential(ctx: VaultContext, pathVaultId: string | undefined, body: CredentialBody, caller: Caller): Promise<Credential> {
  const vaultId = pathVaultId ?? body.vault_id;
  if (!vaultId) throw errors.validation("vault_id is required", [{ path: "vault_id", message: "required", code: "invalid_type" }]);
  if (pathVaultId && body.vault_id && body.vault_id !== pathVaultId) throw errors.validation("vault_id in the body differs from the vault in the path");
  const label = body.label ?? body.name;
  const service = body.service ?? label;
  if (!label || !service) throw errors.validation("label (or name) is required", [{ path: "label", message: "required", code: "invalid_type" }]);
  const authType = body.auth_type ?? body.credential_type ?? "api_key";
  const { material, metadata } = splitMaterial(authType, body.secret, body.metadata ?? {});
  checkExecutionConfig(metadata);
  const now = ctx.clock.now();
  const id = randomUUID();
  const sealed = ctx.keys.sealMaterial(id, material);
  const row = await ctx.db.transaction(async (tx) => {
    const vault = await ownedVault({ db: tx }, vaultId, caller);
    const [inserted] = await tx
      .insert(credentials)
      .values({
        id,
        vaultId,
        ownerPrincipal: vault.createdBy,
        service,
        label,
        authType,
        scopesAvailable: [...new Set(body.scopes_available ?? [])],
        metadata,
        secretFields: Object.keys(material).sort(),
        status: "active",
        createdBy: caller.actor,
        createdAt: now,
        expiresAt: parseTime(body.expires_at),
        ...sealed,
      })
      .onConflictDoNothing()
      .returning();
    if (!inserted) throw appError("CREDENTIAL_LABEL_TAKEN", `vault ${vaultId} already has a credential labelled ${label}`, { vault_id: vaultId, label });
    await writeVaultEvents(tx, [vaultEvent(vaultEvents.credentialCreated, { key: id, actor: caller.actor, agentId: null, payload: { credential_id: id, vault_id: vaultId, service, auth_type: authType } })], now);
    return inserted;
  });
  ctx.published();
  return toCredential(row, now);
}

export async function listCredentials(ctx: VaultContext, vaultId: string, caller: Caller): Promise<{ credentials: Credential[] }> {
  await ownedVault(ctx, vaultId, caller);
  const rows = await ctx.db.select().from(credentials).where(eq(credentials.vaultId, vaultId)).orderBy(asc(credentials.createdAt)).limit(1000);
  const now = ctx.clock.now();
  return { credentials: rows.map((row) => toCredential(row, now)) };
}

export async function getCredential(ctx: VaultContext, credentialId: string, caller: Caller): Promise<Credential> {
  return toCredential(await ownedCredential(ctx, credentialId, caller), ctx.clock.now());
}

/** MCP `openintent_get_credential`: by label within a vault (an id works too). */
export async function getCredentialByName(ctx: VaultContext, vaultId: string, name: string, caller: Caller): Promise<Credential> {
  await ownedVault(ctx, vaultId, caller);
  const [row] = await ctx.db
    .select()
    .from(credentials)
    .where(and(eq(credentials.vaultId, vaultId), sql`(${credentials.label} = ${name} or ${credentials.id}::text = lower(${name}))`));
  if (!row) throw errors.notFound("credential", name);
  return toCredential(row, ctx.clock.now());
}

/** PATCH /credentials/{id}/rotate (RFC-0014 §1.3): new material under a new data key, same id, grants untouched. */
export async function rotateCredential(ctx: VaultContext, credentialId: string, body: RotateCredentialBody, caller: Caller): Promise<Credential> {
  const current = await ownedCredential(ctx, credentialId, caller);
  if (current.status === "revoked") throw appError("CREDENTIAL_REVOKED", `credential ${credentialId} was revoked; create a new one`, { credential_id: credentialId });
  const { material, metadata } = splitMaterial(current.authType, body.secret, body.metadata ?? current.metadata);
  checkExecutionConfig(metadata);
  const now = ctx.clock.now();
  const sealed = ctx.keys.sealMaterial(credentialId, material);
  const row = await ctx.db.transaction(async (tx) => {
    const [updated] = await tx
      .update(credentials)
      .set({ ...sealed, metadata, secretFields: Object.keys(material).sort(), rotatedAt: now, ...(body.expires_at !== undefined ? { expiresAt: parseTime(body.expires_at) } : {}) })
      .where(and(eq(credentials.id, credentialId), eq(credentials.status, "active")))
      .returning();
    if (!updated) throw appError("CREDENTIAL_REVOKED", `credential ${credentialId} was revoked; create a new one`, { credential_id: credentialId });
    await writeVaultEvents(tx, [vaultEvent(vaultEvents.credentialRotated, { key: credentialId, actor: caller.actor, agentId: null, payload: { credential_id: credentialId, rotated_by: caller.actor } })], now);
    return updated;
  });
  ctx.published();
  return toCredential(row, now);
}

/** DELETE /credentials/{id}: revoked for good, its grants with it (§1.3, §5.3). The material is destroyed. */
export async function revokeCredential(ctx: VaultContext, credentialId: string, caller: Caller): Promise<Credential> {
  await ownedCredential(ctx, credentialId, caller);
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    // Nothing may open the material again: it is replaced by an empty sealed value.
    const [updated] = await tx
      .update(credentials)
      .set({ status: "revoked", revokedAt: now, secretFields: [], ...ctx.keys.sealMaterial(credentialId, {}) })
      .where(and(eq(credentials.id, credentialId), eq(credentials.status, "active")))
      .returning();
    if (!updated) {
      const [existing] = await tx.select().from(credentials).where(eq(credentials.id, credentialId));
      return existing!;
    }
    const revoked = await tx
      .update(grants)
      .set({ status: "revoked", revokedAt: now })
      .where(and(eq(grants.credentialId, credentialId), sql`${grants.status} <> 'revoked'`))
      .returning({ id: grants.id, agentId: grants.agentId });
    await writeVaultEvents(
      tx,
      [
        vaultEvent(vaultEvents.credentialRevoked, { key: credentialId, actor: caller.actor, agentId: null, payload: { credential_id: credentialId, reason: "revoked", affected_grants_count: revoked.length } }),
        ...revoked.map((grant) => vaultEvent(vaultEvents.grantRevoked, { key: grant.id, actor: caller.actor, agentId: grant.agentId, payload: { grant_id: grant.id, reason: "credential_revoked", cascade_count: 0 } })),
      ],
      now,
    );
    return updated;
  });
  ctx.published();
  return toCredential(row, now);
}
