import { randomUUID } from "node:crypto";
import { and, asc, eq, inArray, or, sql, type SQL } from "drizzle-orm";
import { appError, errors, intentsCommands, vaultEvents, type Caller, type CreateGrantBody, type GrantToolBody, type ListGrantsQuery, type ToolGrant } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { isAdmin, mayReadAllGrants, type VaultContext } from "../context";
import { agentStatuses, credentials, grants } from "../db/schema";
import { toGrant, type CredentialRow, type GrantRow } from "../mapping";
import { credentialStatus, grantStatus, scopeOfTool, scopesOutsideCredential } from "../domain/grants";
import { vaultEvent, writeVaultEvents } from "../events";
import { ownedCredential, parseTime } from "./vaults";

/** Tool grants (RFC-0014 §2): created and managed by the vault's owner, read by the grantee too. */

/** The agents among `agentIds` that the registry last reported deregistered (heartbeat rule 6). */
export async function dormantAgents(db: VaultContext["db"] | Tx, agentIds: string[]): Promise<Set<string>> {
  if (!agentIds.length) return new Set();
  const rows = await db
    .select({ agentId: agentStatuses.agentId })
    .from(agentStatuses)
    .where(and(inArray(agentStatuses.agentId, [...new Set(agentIds)]), eq(agentStatuses.status, "deregistered")));
  return new Set(rows.map((r) => r.agentId));
}

async function answer(ctx: VaultContext, rows: GrantRow[]): Promise<ToolGrant[]> {
  const dormant = await dormantAgents(ctx.db, rows.map((r) => r.agentId));
  const now = ctx.clock.now();
  return rows.map((row) => toGrant(row, dormant.has(row.agentId), now));
}

const isGrantee = (caller: Caller, agentId: string) => caller.actor === agentId || caller.agent_id === agentId;

/** Grants the caller may see: all (admins, coordinators), else its vaults' and its own as grantee. */
function visibleTo(caller: Caller): SQL | undefined {
  if (mayReadAllGrants(caller)) return undefined;
  return or(eq(grants.ownerPrincipal, caller.principal), eq(grants.agentId, caller.actor));
}

async function insertGrant(ctx: VaultContext, credential: CredentialRow, grant: Omit<GrantRow, "id" | "credentialId" | "vaultId" | "ownerPrincipal" | "service" | "status" | "suspendedReason" | "invocationCount" | "revokedAt" | "createdAt">, caller: Caller): Promise<ToolGrant> {
  const now = ctx.clock.now();
  const status = credentialStatus(credential, now);
  if (status === "revoked") throw appError("CREDENTIAL_REVOKED", `credential ${credential.id} was revoked`, { credential_id: credential.id });
  if (status === "expired") throw appError("CREDENTIAL_EXPIRED", `credential ${credential.id} has expired`, { credential_id: credential.id });
  const outside = scopesOutsideCredential(grant.scopes, credential.scopesAvailable);
  if (outside.length) {
    throw appError("SCOPE_NOT_AVAILABLE", `credential ${credential.id} does not offer ${outside.join(", ")} (scopes_available: ${credential.scopesAvailable.join(", ")})`, { scopes: outside, scopes_available: credential.scopesAvailable });
  }
  if (grant.expiresAt && grant.expiresAt.getTime() <= now.getTime()) throw errors.validation("expires_at is in the past", [{ path: "expires_at", message: "must be in the future", code: "custom" }]);
  const row: GrantRow = {
    ...grant,
    id: randomUUID(),
    credentialId: credential.id,
    vaultId: credential.vaultId,
    ownerPrincipal: credential.ownerPrincipal,
    service: credential.service,
    status: "active",
    suspendedReason: null,
    invocationCount: 0,
    revokedAt: null,
    createdAt: now,
  };
  await ctx.db.transaction(async (tx) => {
    await tx.insert(grants).values(row);
    await writeVaultEvents(
      tx,
      [vaultEvent(vaultEvents.grantCreated, { key: row.id, actor: caller.actor, agentId: row.agentId, payload: { grant_id: row.id, credential_id: row.credentialId, agent_id: row.agentId, scopes: row.scopes, expires_at: row.expiresAt?.toISOString() ?? null } })],
      now,
    );
  });
  ctx.published();
  return (await answer(ctx, [row]))[0]!;
}

/**
 * A grant bound to an intent names one that exists and that the caller may read (the intents
 * service answers: 404 INTENT_NOT_FOUND otherwise). Asked before anything is written.
 */
async function assertIntentReadable(ctx: VaultContext, intentId: string, caller: Caller): Promise<void> {
  await ctx.client.request(intentsCommands.get, caller, { intent_id: intentId });
}

/** POST /grants (Python create_tool_grant, RFC §2.1). */
export async function createGrant(ctx: VaultContext, body: CreateGrantBody, caller: Caller): Promise<ToolGrant> {
  const credential = await ownedCredential(ctx, body.credential_id, caller);
  if (typeof body.context?.intent_id === "string") await assertIntentReadable(ctx, body.context.intent_id, caller);
  const delegatable = body.delegatable ?? false;
  return insertGrant(
    ctx,
    credential,
    {
      agentId: body.agent_id,
      grantedBy: body.granted_by ?? caller.actor,
      scopes: [...new Set(body.scopes)],
      constraints: body.constraints ?? {},
      source: "direct",
      delegatable,
      delegationDepth: body.delegation_depth ?? (delegatable ? 1 : 0),
      delegatedFrom: null,
      context: body.context ?? {},
      expiresAt: parseTime(body.expires_at),
    },
    caller,
  );
}

/**
 * MCP `openintent_grant_tool` (POST /intents/{id}/tools/grants): the credential is the caller's
 * one that offers the tool (its service, or a scope of scopes_available); the grant is bound to
 * the intent and to that one tool.
 */
export async function grantTool(ctx: VaultContext, intentId: string, body: GrantToolBody, caller: Caller): Promise<ToolGrant> {
  const tool = body.tool_name;
  await assertIntentReadable(ctx, intentId, caller);
  const candidates = await ctx.db
    .select()
    .from(credentials)
    .where(
      and(
        eq(credentials.status, "active"),
        isAdmin(caller) ? undefined : eq(credentials.ownerPrincipal, caller.principal),
        sql`(${credentials.service} = ${tool} or ${tool} = any(${credentials.scopesAvailable}) or (starts_with(${tool}, ${credentials.service} || '.') and substr(${tool}, length(${credentials.service}) + 2) = any(${credentials.scopesAvailable})))`,
      ),
    )
    .limit(2);
  if (!candidates.length) throw errors.notFound("credential", tool);
  if (candidates.length > 1) throw appError("AMBIGUOUS_TOOL", `several of your credentials offer ${tool}; grant it with POST /grants naming the credential`, { tool_name: tool });
  const credential = candidates[0]!;
  const scope = scopeOfTool(tool, credential.service);
  return insertGrant(
    ctx,
    credential,
    {
      agentId: body.agent_id,
      grantedBy: body.granted_by ?? caller.actor,
      scopes: tool === credential.service ? [] : [scope],
      constraints: body.constraints ?? {},
      source: "direct",
      delegatable: false,
      delegationDepth: 0,
      delegatedFrom: null,
      context: { intent_id: intentId, tools: [tool] },
      expiresAt: parseTime(body.expires_at),
    },
    caller,
  );
}

/** A grant the caller may read (its vault's owner, admins and coordinators, the grantee). */
export async function readableGrant(ctx: VaultContext, grantId: string, caller: Caller): Promise<GrantRow> {
  const [row] = await ctx.db.select().from(grants).where(eq(grants.id, grantId));
  if (!row) throw errors.notFound("grant", grantId);
  if (!mayReadAllGrants(caller) && row.ownerPrincipal !== caller.principal && !isGrantee(caller, row.agentId)) {
    throw errors.forbidden(`grant ${grantId} is neither yours nor in one of your vaults`, { grant_id: grantId });
  }
  return row;
}

export async function getGrant(ctx: VaultContext, grantId: string, caller: Caller): Promise<ToolGrant> {
  return (await answer(ctx, [await readableGrant(ctx, grantId, caller)]))[0]!;
}

/** GET /grants (RFC): filtered by agent, credential, service. */
export async function listGrants(ctx: VaultContext, query: ListGrantsQuery, caller: Caller): Promise<{ grants: ToolGrant[] }> {
  const rows = await ctx.db
    .select()
    .from(grants)
    .where(
      and(
        visibleTo(caller),
        query.agent_id !== undefined ? eq(grants.agentId, query.agent_id) : undefined,
        query.credential_id !== undefined ? eq(grants.credentialId, query.credential_id) : undefined,
        query.service !== undefined ? eq(grants.service, query.service) : undefined,
      ),
    )
    .orderBy(asc(grants.createdAt))
    .limit(query.limit);
  return { grants: await answer(ctx, rows) };
}

/** GET /agents/{id}/grants (Python list_agent_grants): a bare array, every status. */
export async function agentGrants(ctx: VaultContext, agentId: string, caller: Caller): Promise<ToolGrant[]> {
  const rows = await ctx.db
    .select()
    .from(grants)
    .where(and(eq(grants.agentId, agentId), isGrantee(caller, agentId) ? undefined : visibleTo(caller)))
    .orderBy(asc(grants.createdAt))
    .limit(1000);
  return answer(ctx, rows);
}

/** GET /tools/granted (RFC §2.3): the agent's usable tool surface, one entry per scope. */
export async function grantedTools(ctx: VaultContext, agentId: string | undefined, caller: Caller) {
  const agent = agentId ?? caller.actor;
  const all = await agentGrants(ctx, agent, caller);
  const tools = all
    .filter((grant) => grant.status === "active")
    .flatMap((grant) =>
      (grant.scopes.length ? grant.scopes : [grant.service]).map((tool) => ({
        grant_id: grant.id,
        service: grant.service,
        tool,
        constraints: grant.constraints,
        source: grant.source,
        delegated_from: grant.delegated_from,
        context: grant.context,
        expires_at: grant.expires_at,
      })),
    );
  return { agent_id: agent, tools };
}

/** The owner (or an admin) manages a grant; the grantee may give its own grant up. */
async function manageableGrant(ctx: VaultContext, grantId: string, caller: Caller, granteeMay: boolean): Promise<GrantRow> {
  const row = await readableGrant(ctx, grantId, caller);
  if (isAdmin(caller) || row.ownerPrincipal === caller.principal || (granteeMay && isGrantee(caller, row.agentId))) return row;
  throw appError("VAULT_ACCESS_DENIED", `grant ${grantId} is managed by its vault's owner`, { grant_id: grantId });
}

/** DELETE /grants/{id}: revoked, with every grant delegated from it (§5.3), in one transaction. */
export async function revokeGrant(ctx: VaultContext, grantId: string, caller: Caller) {
  await manageableGrant(ctx, grantId, caller, true);
  const now = ctx.clock.now();
  await ctx.db.transaction(async (tx) => {
    const revoked = (await tx.execute(sql`
      with recursive tree as (
        select id from ${grants} where id = ${grantId}
        union select g.id from ${grants} g join tree on g.delegated_from = tree.id)
      update ${grants} set status = 'revoked', revoked_at = ${now.toISOString()}::timestamptz
      where id in (select id from tree) and status <> 'revoked'
      returning id, agent_id`)) as unknown as { rows?: { id: string; agent_id: string }[] } | { id: string; agent_id: string }[];
    const rows = Array.isArray(revoked) ? revoked : (revoked.rows ?? []);
    if (!rows.length) return;
    await writeVaultEvents(
      tx,
      rows.map((row) =>
        vaultEvent(vaultEvents.grantRevoked, {
          key: row.id,
          actor: caller.actor,
          agentId: row.agent_id,
          payload: { grant_id: row.id, reason: row.id === grantId ? "revoked" : "cascade", cascade_count: row.id === grantId ? rows.length - 1 : 0 },
        }),
      ),
      now,
    );
  });
  ctx.published();
  return { status: "revoked" as const, grant_id: grantId, grant: await getGrant(ctx, grantId, caller) };
}

async function setSuspended(ctx: VaultContext, grantId: string, suspend: boolean, reason: string | undefined, caller: Caller): Promise<ToolGrant> {
  await manageableGrant(ctx, grantId, caller, false);
  const now = ctx.clock.now();
  await ctx.db.transaction(async (tx) => {
    const [updated] = await tx
      .update(grants)
      .set(suspend ? { status: "suspended", suspendedReason: reason ?? null } : { status: "active", suspendedReason: null })
      .where(and(eq(grants.id, grantId), eq(grants.status, suspend ? "active" : "suspended")))
      .returning();
    if (!updated) {
      const [current] = await tx.select().from(grants).where(eq(grants.id, grantId));
      if (current!.status === "revoked") throw appError("GRANT_REVOKED", `grant ${grantId} was revoked`, { grant_id: grantId });
      return; // already in the asked state
    }
    await writeVaultEvents(
      tx,
      [
        suspend
          ? vaultEvent(vaultEvents.grantSuspended, { key: grantId, actor: caller.actor, agentId: updated.agentId, payload: { grant_id: grantId, reason: reason ?? null } })
          : vaultEvent(vaultEvents.grantResumed, { key: grantId, actor: caller.actor, agentId: updated.agentId, payload: { grant_id: grantId } }),
      ],
      now,
    );
  });
  ctx.published();
  return getGrant(ctx, grantId, caller);
}

export const suspendGrant = (ctx: VaultContext, grantId: string, reason: string | undefined, caller: Caller) => setSuspended(ctx, grantId, true, reason, caller);
export const resumeGrant = (ctx: VaultContext, grantId: string, caller: Caller) => setSuspended(ctx, grantId, false, undefined, caller);

export { grantStatus };
