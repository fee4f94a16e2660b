import { appError, isoTimestamp, intentEvents } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { enforceGovernance } from "../governance/handlers";
import type { GovernancePolicy } from "@intentmesh/contracts";
import { and, asc, eq, lte, sql } from "drizzle-orm";
import { AppError, errors, fitPage, type Caller, type Lease } from "@intentmesh/contracts";
import { rowsOf, type Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { leases } from "../db/schema";
import { appendToLog, assertIntentExists, lockIntent, type NewEvent } from "../kernel/event-log";
import { toLease } from "../kernel/mapping";
import { leaseState, scopeKey } from "./lease-scope";
import { PointerError } from "../kernel/json-pointer";
import { actingAgent } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import { assertMayRelease, assertMayRenew, assertMayTakeLease } from "./rules";
import { assertAgentMayWork } from "../costs/budget";
import { agentWorkRefusal } from "../agents/agent-status";

type LeaseRow = typeof leases.$inferSelect;

/** The SQL test "two scope keys overlap": one is a prefix of the other. */
const overlaps = (key: string) => sql`(starts_with(${leases.scopeKey}, ${key}) or starts_with(${key}, ${leases.scopeKey}))`;

/**
 * POST /intents/{id}/leases. The intent row is locked first, so acquisitions on one intent are
 * serialized; lapsed leases touching the scope are expired (with their events); a live lease
 * touching it is a collision (409 with that lease); otherwise the insert, backed by a unique
 * index on held scopes, grants the lease.
 */
export async function acquireLease(
  ctx: IntentsContext,
  intentId: string,
  ifMatch: number | null,
  body: { scope: string; ttl_seconds: number; agent_id?: string | undefined },
  caller: Caller,
): Promise<Lease> {
  const agentId = actingAgent(caller, body.agent_id);
  const key = parseScope(body.scope);
  const now = ctx.clock.now();
  const lease = await ctx.db.transaction(async (tx) => {
    const refusal = await agentWorkRefusal(tx, agentId, true);
    if (refusal) throw refusal;
    const intent = await lockIntent(tx, intentId, ifMatch);
    // The policy read under the intent's lock: no PUT can slip between the check and the write.
    await enforceGovernance(ctx, intentId, intent.governancePolicy as GovernancePolicy | null, { kind: "lease" }, caller, tx);
    assertMayTakeLease(intentId, intent.status);
    // Agents take no lease on an intent its budget blocked.
    assertAgentMayWork(intentId, { status: intent.status, blocked_reason: intent.blockedReason }, caller, "take leases on it");
    const suspended = intent.status === "suspended_awaiting_input";
    const lapsed = suspended ? [] : await expireLapsed(tx, intentId, key, now);
    const [held] = await tx
      .select()
      .from(leases)
      .where(and(eq(leases.intentId, intentId), eq(leases.holdsScope, true), overlaps(key)))
      .limit(1);
    if (held) throw leaseHeld(held);
    const [row] = await tx
      .insert(leases)
      .values({
        id: randomUUID(),
        intentId,
        agentId,
        scope: body.scope,
        scopeKey: key,
        acquiredAt: now,
        expiresAt: new Date(now.getTime() + body.ttl_seconds * 1000),
        holdsScope: true,
      })
      .onConflictDoNothing()
      .returning();
    if (!row) throw appError("LEASE_HELD", `scope ${body.scope} of intent ${intentId} is already leased`, { scope: body.scope });
    const acquired = toLease(row);
    await appendToLog(
      tx,
      intentId,
      [
        ...lapsed.map((l) => expiryEvent(l, "expired", caller.actor)),
        newEvent(intentEvents.leaseAcquired, agentId, { lease_id: acquired.id, agent_id: agentId, scope: acquired.scope, expires_at: acquired.expires_at }),
      ],
      now,
    );
    return acquired;
  });
  ctx.published();
  return lease;
}

/** POST /intents/{id}/leases/{lease_id}/renew (and PATCH /intents/{id}/leases/{lease_id}): only the holder, only while the lease is live (always, while the intent is suspended). */
export async function renewLease(
  ctx: IntentsContext,
  intentId: string,
  ifMatch: number | null,
  leaseId: string,
  body: { ttl_seconds: number },
  caller: Caller,
): Promise<Lease> {
  const now = ctx.clock.now();
  const lease = await ctx.db.transaction(async (tx) => {
    const intent = await lockIntent(tx, intentId, ifMatch);
    await enforceGovernance(ctx, intentId, intent.governancePolicy as GovernancePolicy | null, { kind: "lease" }, caller, tx);
    const current = await findLease(tx, intentId, leaseId);
    assertMayRenew(current, intent.status, caller, now);
    const [row] = await tx
      .update(leases)
      .set({ expiresAt: new Date(now.getTime() + body.ttl_seconds * 1000) })
      .where(eq(leases.id, leaseId))
      .returning();
    const renewed = toLease(row!);
    // A renewal acquires the same lease for a new term: logged as lease_acquired with `renewal`,
    // a name the clients' strict EventType enum can read (it has no lease_renewed).
    await appendToLog(
      tx,
      intentId,
      [newEvent(intentEvents.leaseAcquired, caller.actor, { lease_id: leaseId, agent_id: current.agentId, scope: current.scope, expires_at: renewed.expires_at, renewal: true })],
      now,
    );
    return renewed;
  });
  ctx.published();
  return lease;
}

/**
 * DELETE /intents/{id}/leases/{lease_id}: the holder, a coordinator or an admin releases it.
 * Releasing a lease that already ended changes nothing and answers it as it is.
 */
export async function releaseLease(ctx: IntentsContext, intentId: string, ifMatch: number | null, leaseId: string, caller: Caller): Promise<Lease> {
  const now = ctx.clock.now();
  let changed = false;
  const lease = await ctx.db.transaction(async (tx) => {
    const intent = await lockIntent(tx, intentId, ifMatch);
    await enforceGovernance(ctx, intentId, intent.governancePolicy as GovernancePolicy | null, { kind: "lease" }, caller, tx);
    const current = await findLease(tx, intentId, leaseId);
    assertMayRelease(current, caller);
    if (!current.holdsScope) return toLease(current);
    const [row] = await tx
      .update(leases)
      .set({ releasedAt: now, holdsScope: false, endReason: "released", endedAt: now })
      .where(eq(leases.id, leaseId))
      .returning();
    await appendToLog(tx, intentId, [newEvent(intentEvents.leaseReleased, caller.actor, { lease_id: leaseId, agent_id: current.agentId, scope: current.scope, reason: "released" })], now);
    changed = true;
    return toLease(row!);
  });
  if (changed) ctx.published();
  return lease;
}

export async function getLease(ctx: IntentsContext, intentId: string, leaseId: string): Promise<Lease> {
  return toLease(await findLease(ctx.db as never, intentId, leaseId));
}

/** GET /intents/{id}/leases: every lease of the intent, oldest first; active=true keeps the live ones. */
export async function listLeases(ctx: IntentsContext, intentId: string, activeOnly: boolean): Promise<{ leases: Lease[]; has_more: boolean }> {
  // Oldest first, bounded: an intent's history of leases has no bound, its answer does (?active=true lists the live ones).
  const filters = [eq(leases.intentId, intentId)];
  if (activeOnly) filters.push(eq(leases.holdsScope, true));
  const rows = await ctx.db.select().from(leases).where(and(...filters)).orderBy(asc(leases.acquiredAt)).limit(MAX_LEASES_LISTED + 1);
  if (!rows.length) await assertIntentExists(ctx.db, intentId);
  const now = ctx.clock.now();
  // Active as spec 2.4 derives it, and still holding its scope (not ended by the sweeper or a death).
  const kept = activeOnly ? rows.filter((l) => leaseState(l, now) === "ACTIVE") : rows;
  const shown = fitPage(kept.slice(0, MAX_LEASES_LISTED).map(toLease));
  return { leases: shown.items, has_more: shown.cut || kept.length > MAX_LEASES_LISTED };
}

/** How many leases one listing shows at most. */
const MAX_LEASES_LISTED = 1000;

/**
 * The lease-expiry event of spec part 6; reason is `expired` (ttl), `agent_dead` or
 * `agent_deregistered`. Its type is lease_released (the lease no longer holds its scope), the
 * name the clients' EventType enum knows; the reason tells an expiry from a release.
 */
export function expiryEvent(lease: LeaseRow, reason: "expired" | "agent_dead" | "agent_deregistered", actor: string): NewEvent {
  return newEvent(intentEvents.leaseReleased, actor, { lease_id: lease.id, agent_id: lease.agentId, scope: lease.scope, expires_at: isoTimestamp(lease.expiresAt), reason });
}

async function expireLapsed(tx: Tx, intentId: string, key: string, now: Date): Promise<LeaseRow[]> {
  return tx
    .update(leases)
    .set({ holdsScope: false, endReason: "expired", endedAt: now })
    .where(and(eq(leases.intentId, intentId), eq(leases.holdsScope, true), lte(leases.expiresAt, now), overlaps(key)))
    .returning();
}

async function findLease(tx: Tx, intentId: string, leaseId: string): Promise<LeaseRow> {
  const [row] = await tx.select().from(leases).where(and(eq(leases.id, leaseId), eq(leases.intentId, intentId)));
  if (row) return row;
  await assertIntentExists(tx, intentId);
  throw errors.notFound("lease", leaseId);
}

function leaseHeld(held: LeaseRow): AppError {
  const lease = toLease(held);
  return appError("LEASE_HELD", `scope ${held.scope} of intent ${held.intentId} is leased to agent ${held.agentId} until ${lease.expires_at}`,
    { lease },
    // existing_lease: the name the official Python client reads on a lease collision.
    { lease, existing_lease: lease },
  );
}

function parseScope(scope: string): string {
  try {
    return scopeKey(scope);
  } catch (error) {
    if (error instanceof PointerError) throw errors.validation(`scope: ${error.message}`);
    throw error;
  }
}

/**
 * How many live leases each agent holds (the registry asks while agents drain). A lease lapsed
 * by its TTL but not yet swept no longer counts; one on a suspended intent still does (3.1).
 */
export async function leasesHeldBy(ctx: IntentsContext, agentIds: string[]): Promise<{ held: Record<string, number> }> {
  const now = ctx.clock.now();
  const rows = rowsOf<{ agent_id: string; held: number }>(
    await ctx.db.execute(sql`
      select l.agent_id, count(*)::int as held
      from ${leases} l join intents.intents i on i.id = l.intent_id
      where l.holds_scope and l.agent_id in (${sql.join(agentIds.map((id) => sql`${id}`), sql`, `)})
        and (l.expires_at > ${now} or i.status = 'suspended_awaiting_input')
      group by l.agent_id`),
  );
  const held: Record<string, number> = Object.fromEntries(agentIds.map((id) => [id, 0]));
  for (const row of rows) held[row.agent_id] = row.held;
  return { held };
}
