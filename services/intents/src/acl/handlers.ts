import { randomUUID } from "node:crypto";
import { and, asc, count, eq, sql } from "drizzle-orm";
import {
  AppError,
  appError,
  errors,
  isoTimestamp,
  MAX_ACCESS_REQUESTS_LISTED,
  MAX_ACL_ENTRIES,
  type AccessRequest,
  type AclEntry,
  type AclEntryInput,
  type Caller,
  type CreateAccessRequestBody,
  type DecideAccessRequestBody,
  type GrantAccessBody,
  type IntentAcl,
  type IntentPermission,
  type PrincipalType,
  permissionsToAcl,
  SetAclBody,
  type GrantPermissionBody,
  type SetPermissionsBody,
  type AccessVerdicts,
  type IntentAccessCheck,
  intentEvents,
} from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { intents } from "../db/schema";
import { accessRequests, aclEntries } from "../db/schema-acl";
import { appendToLog, type NewEvent } from "../kernel/event-log";
import { assertExpiryAhead, assertPermission, assertRequestsForItself, entryIsLive, permissionOf } from "./rules";
import { inList, readAccessFacts, readManyAccessFacts } from "./statements";

/** Pending requests one intent may hold: each is an event and a row a principal without access can make. */
export const MAX_PENDING_ACCESS_REQUESTS = 500;

type EntryRow = typeof aclEntries.$inferSelect;
type RequestRow = typeof accessRequests.$inferSelect;

export const toAclEntry = (row: EntryRow): AclEntry => ({
  id: row.id,
  intent_id: row.intentId,
  principal_id: row.principalId,
  principal_type: row.principalType as PrincipalType,
  permission: row.permission as IntentPermission,
  granted_by: row.grantedBy,
  granted_at: isoTimestamp(row.grantedAt),
  expires_at: row.expiresAt ? isoTimestamp(row.expiresAt) : null,
  reason: row.reason,
});

const toAccessRequest = (row: RequestRow): AccessRequest => ({
  id: row.id,
  intent_id: row.intentId,
  principal_id: row.principalId,
  principal_type: row.principalType as PrincipalType,
  requested_permission: row.requestedPermission as IntentPermission,
  reason: row.reason,
  status: row.status as AccessRequest["status"],
  capabilities: row.capabilities,
  requested_by: row.requestedBy,
  decided_by: row.decidedBy,
  decided_at: row.decidedAt ? isoTimestamp(row.decidedAt) : null,
  decision_reason: row.decisionReason,
  entry_id: row.entryId,
  created_at: isoTimestamp(row.createdAt),
});

/** An entry as events carry it (never its reason: a free text that stays in the ACL). */
const entryFacts = (row: EntryRow) => ({
  entry_id: row.id,
  principal_id: row.principalId,
  principal_type: row.principalType,
  permission: row.permission,
  expires_at: row.expiresAt ? isoTimestamp(row.expiresAt) : null,
});

/**
 * Locks the intent's row for the rest of the transaction and bumps its ACL version: every change
 * of an ACL queues behind the writers of the intent and they behind it, so a request that starts
 * after a change has answered is decided by it (read-your-writes, on every replica).
 */
async function lockAcl(tx: Tx, intentId: string) {
  const [row] = await tx
    .update(intents)
    .set({ aclVersion: sql`${intents.aclVersion} + 1` })
    .where(eq(intents.id, intentId))
    .returning({ policy: intents.aclPolicy, defaultPermission: intents.aclDefault, owner: intents.aclOwner, version: intents.aclVersion });
  if (!row) throw errors.notFound("intent", intentId);
  return row;
}

const liveEntries = (tx: Tx | IntentsContext["db"], intentId: string, now: Date) =>
  tx
    .select()
    .from(aclEntries)
    .where(and(eq(aclEntries.intentId, intentId), sql`(${aclEntries.expiresAt} is null or ${aclEntries.expiresAt} > ${now})`))
    .orderBy(asc(aclEntries.grantedAt), asc(aclEntries.id));

const expiryOf = (value: string | null | undefined) => (value ? new Date(value) : null);

/** GET /intents/{id}/acl. An intent without an ACL answers an open policy giving admin to everyone: what it is. */
export async function getAcl(ctx: IntentsContext, intentId: string): Promise<IntentAcl> {
  return ctx.db.transaction(async (tx) => {
    const [head] = await tx
      .select({ policy: intents.aclPolicy, defaultPermission: intents.aclDefault, owner: intents.aclOwner, version: intents.aclVersion })
      .from(intents)
      .where(eq(intents.id, intentId));
    if (!head) throw errors.notFound("intent", intentId);
    const entries = await liveEntries(tx, intentId, ctx.clock.now());
    return aclView(intentId, head, entries);
  });
}

function aclView(intentId: string, head: { policy: string | null; defaultPermission: string | null; owner: string | null; version: number }, entries: EntryRow[]): IntentAcl {
  return {
    intent_id: intentId,
    default_policy: (head.policy ?? "open") as IntentAcl["default_policy"],
    default_permission: (head.policy ? (head.defaultPermission ?? "read") : "admin") as IntentPermission,
    owner: head.policy ? head.owner : null,
    entries: entries.map(toAclEntry),
    version: head.version,
  };
}

/**
 * PUT /intents/{id}/acl: the default policy and every entry replaced. An entry equal to one held
 * (same principal, permission, expiry and reason) is kept as it is, so writing back what GET
 * answered changes nothing but the version; the first PUT makes the caller's principal the owner.
 */
export async function setAcl(ctx: IntentsContext, intentId: string, body: SetAclBody, caller: Caller, expectedVersion: number | null = null): Promise<IntentAcl> {
  const now = ctx.clock.now();
  for (const entry of body.entries) assertExpiryAhead(expiryOf(entry.expires_at), now);
  const acl = await ctx.db.transaction(async (tx) => {
    const locked = await lockAcl(tx, intentId);
    // lockAcl bumped the version; the one the caller read is the one before.
    if (expectedVersion !== null && locked.version - 1 !== expectedVersion) throw errors.versionMismatch("acl of intent", intentId, locked.version - 1, expectedVersion);
    const [head] = await tx
      .update(intents)
      .set({ aclPolicy: body.default_policy, aclDefault: body.default_permission, aclOwner: sql`coalesce(${intents.aclOwner}, ${caller.principal})` })
      .where(eq(intents.id, intentId))
      .returning({ policy: intents.aclPolicy, defaultPermission: intents.aclDefault, owner: intents.aclOwner, version: intents.aclVersion });
    const held = await tx.select().from(aclEntries).where(eq(aclEntries.intentId, intentId));
    const key = (type: string, id: string) => `${type}\u0000${id}`;
    const heldByPrincipal = new Map(held.map((row) => [key(row.principalType, row.principalId), row]));
    const wanted = new Set(body.entries.map((entry) => key(entry.principal_type, entry.principal_id)));
    const removed = held.filter((row) => !wanted.has(key(row.principalType, row.principalId)));
    if (removed.length) await tx.delete(aclEntries).where(sql`${aclEntries.id} in (${sql.join(removed.map((row) => sql`${row.id}`), sql`, `)})`);
    const kept: EntryRow[] = [];
    for (const entry of body.entries) {
      const existing = heldByPrincipal.get(key(entry.principal_type, entry.principal_id));
      if (existing && sameGrant(existing, entry)) kept.push(existing);
      else kept.push(await upsertEntry(tx, intentId, entry, caller, now));
    }
    const entries = kept.filter((row) => entryIsLive({ expiresAt: row.expiresAt }, now));
    await appendToLog(
      tx,
      intentId,
      [
        newEvent(intentEvents.accessGranted, caller.actor, {
          action: "acl_set",
          default_policy: body.default_policy,
          default_permission: body.default_permission,
          entries: entries.map(entryFacts),
          removed_entry_ids: removed.map((row) => row.id),
          acl_version: locked.version,
        }),
      ],
      now,
    );
    return aclView(intentId, head!, entries);
  });
  ctx.published();
  return acl;
}

const sameGrant = (row: EntryRow, entry: AclEntryInput) =>
  row.permission === entry.permission && (row.expiresAt?.getTime() ?? null) === (expiryOf(entry.expires_at)?.getTime() ?? null) && row.reason === (entry.reason ?? null);

/** One entry per principal: a grant to a principal that has one replaces its permission, expiry and reason (its id stays). */
async function upsertEntry(tx: Tx, intentId: string, entry: AclEntryInput, caller: Caller, now: Date): Promise<EntryRow> {
  const values = {
    permission: entry.permission,
    grantedBy: caller.actor,
    grantedAt: now,
    expiresAt: expiryOf(entry.expires_at),
    reason: entry.reason ?? null,
  };
  const [row] = await tx
    .insert(aclEntries)
    .values({ id: randomUUID(), intentId, principalType: entry.principal_type, principalId: entry.principal_id, ...values })
    .onConflictDoUpdate({ target: [aclEntries.intentId, aclEntries.principalType, aclEntries.principalId], set: values })
    .returning();
  return row!;
}

async function assertRoomForEntry(tx: Tx, intentId: string, principalType: string, principalId: string): Promise<void> {
  const [row] = await tx
    .select({ n: count() })
    .from(aclEntries)
    .where(and(eq(aclEntries.intentId, intentId), sql`not (${aclEntries.principalType} = ${principalType} and ${aclEntries.principalId} = ${principalId})`));
  if (Number(row?.n ?? 0) >= MAX_ACL_ENTRIES) {
    throw appError("ACL_FULL", `intent ${intentId} has ${MAX_ACL_ENTRIES} access-control entries, the most it may hold; revoke one first`, { limit: MAX_ACL_ENTRIES });
  }
}

/** POST /intents/{id}/acl/entries: grants (or replaces) one principal's entry. */
export async function grantAccess(ctx: IntentsContext, intentId: string, body: GrantAccessBody, caller: Caller): Promise<AclEntry> {
  const now = ctx.clock.now();
  assertExpiryAhead(expiryOf(body.expires_at), now);
  const entry = await ctx.db.transaction(async (tx) => {
    const locked = await lockAcl(tx, intentId);
    await assertRoomForEntry(tx, intentId, body.principal_type, body.principal_id);
    const row = await upsertEntry(tx, intentId, body, caller, now);
    await appendToLog(tx, intentId, [newEvent(intentEvents.accessGranted, caller.actor, { action: "grant", ...entryFacts(row), acl_version: locked.version })], now);
    return row;
  });
  ctx.published();
  return toAclEntry(entry);
}

/**
 * PUT /intents/{id}/permissions (the MCP server's spelling, docs/compatibility.md): the ACL the
 * RFC-0011 permissions block stands for, replaced as PUT /acl replaces it; If-Match, when sent,
 * is the ACL's version (GET /permissions answers it).
 */
export function setPermissions(ctx: IntentsContext, intentId: string, ifMatch: number | null, body: SetPermissionsBody, caller: Caller): Promise<IntentAcl> {
  return setAcl(ctx, intentId, SetAclBody.parse(permissionsToAcl(body.permissions)), caller, ifMatch);
}

/** POST /intents/{id}/permissions/grants (the MCP server's grant_access): the agent's entry, as POST /acl/entries grants it. */
export function grantPermission(ctx: IntentsContext, intentId: string, body: GrantPermissionBody, caller: Caller): Promise<AclEntry> {
  return grantAccess(ctx, intentId, { principal_id: body.agent_id, principal_type: "agent", permission: body.level, expires_at: body.expires_at ?? null, reason: body.reason ?? null }, caller);
}

/** DELETE /intents/{id}/acl/entries/{entry_id}: the entry is gone; its grant ends with this answer. */
export async function revokeAccess(ctx: IntentsContext, intentId: string, entryId: string, caller: Caller) {
  const now = ctx.clock.now();
  await ctx.db.transaction(async (tx) => {
    const locked = await lockAcl(tx, intentId);
    const [row] = await tx
      .delete(aclEntries)
      .where(and(eq(aclEntries.id, entryId), eq(aclEntries.intentId, intentId)))
      .returning();
    if (!row) throw appError("ACL_ENTRY_NOT_FOUND", `intent ${intentId} has no access-control entry ${entryId}`, { intent_id: intentId, entry_id: entryId });
    const { expires_at: _expires, ...facts } = entryFacts(row);
    await appendToLog(tx, intentId, [newEvent(intentEvents.accessRevoked, caller.actor, { ...facts, acl_version: locked.version })], now);
  });
  ctx.published();
  return { revoked: true as const, entry_id: entryId };
}

/** POST /intents/{id}/access-requests: asked by the principal it names, with or without access. */
export async function createAccessRequest(ctx: IntentsContext, intentId: string, body: CreateAccessRequestBody, caller: Caller): Promise<AccessRequest> {
  assertRequestsForItself(caller, body.principal_type, body.principal_id);
  const now = ctx.clock.now();
  const request = await ctx.db.transaction(async (tx) => {
    const id = randomUUID();
    const event: NewEvent = newEvent(intentEvents.accessRequested, caller.actor, { request_id: id, principal_id: body.principal_id, principal_type: body.principal_type, requested_permission: body.requested_permission, capabilities: body.capabilities, reason: body.reason });
    // The log's sequence is taken first: it locks the intent's row (404 for none), so the count below is exact.
    await appendToLog(tx, intentId, [event], now);
    const [pending] = await tx
      .select({ n: count() })
      .from(accessRequests)
      .where(and(eq(accessRequests.intentId, intentId), eq(accessRequests.status, "pending")));
    if (Number(pending?.n ?? 0) >= MAX_PENDING_ACCESS_REQUESTS) {
      throw appError("ACCESS_REQUESTS_FULL", `intent ${intentId} has ${MAX_PENDING_ACCESS_REQUESTS} pending access requests; an admin of the intent must decide some first`, { limit: MAX_PENDING_ACCESS_REQUESTS });
    }
    const [row] = await tx
      .insert(accessRequests)
      .values({
        id,
        intentId,
        principalType: body.principal_type,
        principalId: body.principal_id,
        requestedPermission: body.requested_permission,
        reason: body.reason,
        capabilities: body.capabilities,
        requestedBy: caller.principal,
        status: "pending",
        createdAt: now,
      })
      .returning();
    return row!;
  });
  ctx.published();
  return toAccessRequest(request);
}

/** GET /intents/{id}/access-requests: oldest first; an admin of the intent sees all, anyone else the ones naming them. */
export async function listAccessRequests(ctx: IntentsContext, intentId: string, query: { status?: string | undefined }, caller: Caller) {
  const facts = await readAccessFacts(ctx.query, intentId, caller);
  if (!facts) throw errors.notFound("intent", intentId);
  const seesAll = permissionOf(facts.head, facts.entries, caller, ctx.clock.now()) === "admin";
  const filters = [eq(accessRequests.intentId, intentId)];
  if (query.status) filters.push(eq(accessRequests.status, query.status));
  if (!seesAll) {
    filters.push(
      sql`((${accessRequests.principalType} = 'user' and ${accessRequests.principalId} = ${caller.principal})
        or (${accessRequests.principalType} = 'agent' and ${accessRequests.principalId} = ${caller.actor})
        or (${accessRequests.principalType} = 'group' and ${inList(sql`${accessRequests.principalId}`, caller.roles)}))`,
    );
  }
  const rows = await ctx.db
    .select()
    .from(accessRequests)
    .where(and(...filters))
    .orderBy(asc(accessRequests.seq))
    .limit(MAX_ACCESS_REQUESTS_LISTED + 1);
  return { access_requests: rows.slice(0, MAX_ACCESS_REQUESTS_LISTED).map(toAccessRequest), has_more: rows.length > MAX_ACCESS_REQUESTS_LISTED };
}

/** `decided_by` (the clients send their agent id) must name the caller: a decision is recorded under who made it. */
function decider(caller: Caller, body: DecideAccessRequestBody): string {
  const named = body.decided_by;
  if (named && named !== caller.actor && named !== caller.principal) {
    throw appError("AGENT_MISMATCH", `decided_by ${named} is not the caller (${caller.actor})`, { decided_by: named, actor: caller.actor });
  }
  return caller.actor;
}

async function pendingRequest(tx: Tx, intentId: string, requestId: string): Promise<RequestRow> {
  const [row] = await tx
    .select()
    .from(accessRequests)
    .where(and(eq(accessRequests.id, requestId), eq(accessRequests.intentId, intentId)))
    .for("update");
  if (!row) throw appError("ACCESS_REQUEST_NOT_FOUND", `intent ${intentId} has no access request ${requestId}`, { intent_id: intentId, request_id: requestId });
  if (row.status !== "pending") {
    throw appError("ACCESS_REQUEST_DECIDED", `access request ${requestId} was already ${row.status}`, { request_id: requestId, status: row.status, decided_by: row.decidedBy });
  }
  return row;
}

/** approve: the principal gets an entry at the permission asked (or the one the admin chose), with the expiry given. */
export async function approveAccessRequest(ctx: IntentsContext, intentId: string, requestId: string, body: DecideAccessRequestBody, caller: Caller): Promise<AccessRequest> {
  const decidedBy = decider(caller, body);
  const now = ctx.clock.now();
  assertExpiryAhead(expiryOf(body.expires_at), now);
  const request = await ctx.db.transaction(async (tx) => {
    const locked = await lockAcl(tx, intentId);
    const pending = await pendingRequest(tx, intentId, requestId);
    await assertRoomForEntry(tx, intentId, pending.principalType, pending.principalId);
    const permission = (body.permission ?? pending.requestedPermission) as IntentPermission;
    const entry = await upsertEntry(
      tx,
      intentId,
      { principal_type: pending.principalType as PrincipalType, principal_id: pending.principalId, permission, expires_at: body.expires_at ?? null, reason: body.reason ?? pending.reason ?? null },
      caller,
      now,
    );
    const [row] = await tx
      .update(accessRequests)
      .set({ status: "approved", decidedBy, decidedAt: now, decisionReason: body.reason ?? null, entryId: entry.id })
      .where(eq(accessRequests.id, requestId))
      .returning();
    await appendToLog(
      tx,
      intentId,
      [
        newEvent(intentEvents.accessRequestApproved, decidedBy, { request_id: requestId, principal_id: pending.principalId, principal_type: pending.principalType, permission, entry_id: entry.id, expires_at: entryFacts(entry).expires_at, acl_version: locked.version }),
      ],
      now,
    );
    return row!;
  });
  ctx.published();
  return toAccessRequest(request);
}

export async function denyAccessRequest(ctx: IntentsContext, intentId: string, requestId: string, body: DecideAccessRequestBody, caller: Caller): Promise<AccessRequest> {
  const decidedBy = decider(caller, body);
  const now = ctx.clock.now();
  const request = await ctx.db.transaction(async (tx) => {
    const pending = await pendingRequest(tx, intentId, requestId);
    const [row] = await tx
      .update(accessRequests)
      .set({ status: "denied", decidedBy, decidedAt: now, decisionReason: body.reason ?? null })
      .where(eq(accessRequests.id, requestId))
      .returning();
    await appendToLog(
      tx,
      intentId,
      [newEvent(intentEvents.accessRequestDenied, decidedBy, { request_id: requestId, principal_id: pending.principalId, principal_type: pending.principalType, reason: body.reason ?? null })],
      now,
    );
    return row!;
  });
  ctx.published();
  return toAccessRequest(request);
}

/** acl.check: the caller of the envelope is the one a service acts for. */
export async function checkAccess(ctx: IntentsContext, intentId: string, permission: IntentPermission, caller: Caller) {
  const facts = await readAccessFacts(ctx.query, intentId, caller);
  if (!facts) throw errors.notFound("intent", intentId);
  return { allowed: true as const, permission: assertPermission(intentId, facts.head, facts.entries, caller, permission, ctx.clock.now()) };
}

/** acl.check_many: every check read in one statement, each decided by the same rule. */
export async function checkAccessMany(ctx: IntentsContext, checks: IntentAccessCheck[]): Promise<AccessVerdicts> {
  const facts = await readManyAccessFacts(
    ctx.query,
    checks.map((check) => ({ intentId: check.intent_id, caller: check.caller })),
  );
  const now = ctx.clock.now();
  return {
    results: checks.map((check, i) => {
      const found = facts[i];
      try {
        if (!found) throw errors.notFound("intent", check.intent_id);
        return { allowed: true as const, permission: assertPermission(check.intent_id, found.head, found.entries, check.caller, check.permission, now) };
      } catch (error) {
        if (error instanceof AppError) return { error: error.toWire() };
        throw error;
      }
    }),
  };
}

