import { randomBytes } from "node:crypto";
import { and, asc, desc, eq, isNull, type SQL } from "drizzle-orm";
import {
  errors,
  isoTimestamp,
  triggerEventAliases,
  type Caller,
  type CreateScopedTriggerBody,
  type CreateTriggerBody,
  type Firing,
  type ListTriggersQuery,
  type ScheduleCondition,
  type Trigger,
  type UpdateTriggerBody,
} from "@intentmesh/contracts";
import type { TriggersContext } from "../context";
import { firings, triggers } from "../db/schema";
import { nextDueAfter, parseCondition, type TriggerType } from "../domain/rules";

export type TriggerRow = typeof triggers.$inferSelect;
export type FiringRow = typeof firings.$inferSelect;

const ts = (d: Date | null) => (d ? isoTimestamp(d) : null);

export function toTrigger(row: TriggerRow): Trigger {
  return {
    trigger_id: row.id,
    name: row.name,
    type: row.type as TriggerType,
    enabled: row.enabled,
    condition: row.condition,
    intent_template: row.intentTemplate ?? null,
    deduplication: row.deduplication as Trigger["deduplication"],
    max_concurrent: row.maxConcurrent ?? null,
    namespace: row.namespace ?? null,
    intent_id: row.intentId ?? null,
    action: row.action ?? null,
    created_by: row.createdBy,
    created_at: isoTimestamp(row.createdAt),
    updated_at: isoTimestamp(row.updatedAt),
    last_fired_at: ts(row.lastFiredAt),
    next_fire_at: ts(row.nextFireAt),
    fire_count: row.fireCount,
    version: row.version,
  };
}

export function toFiring(row: FiringRow): Firing {
  return {
    firing_id: row.id,
    trigger_id: row.triggerId,
    source: row.source as Firing["source"],
    status: row.status as Firing["status"],
    scheduled_for: ts(row.scheduledFor),
    fired_at: isoTimestamp(row.firedAt),
    intent_id: row.status === "created" || row.status === "pending" ? row.intentId : null,
    cause_event_id: row.causeEventId,
    trigger_depth: row.depth,
    reason: row.reason,
  };
}

/** The next due time of a trigger as it is now: only enabled schedule triggers have one; a change or a resume starts from now (missed times are skipped). */
export function scheduleFrom(type: string, enabled: boolean, condition: Record<string, unknown>, now: Date, anchor: Date): Date | null {
  if (type !== "schedule" || !enabled) return null;
  return nextDueAfter(condition as ScheduleCondition, now, anchor);
}

const newTriggerId = () => `trg_${randomBytes(16).toString("hex")}`;

/** POST /triggers (§8.2): checked, then stored with its first due time. */
export async function createTrigger(ctx: TriggersContext, body: CreateTriggerBody, caller: Caller): Promise<Trigger> {
  const condition = parseCondition(body.type, body.condition) as Record<string, unknown>;
  return insertTrigger(ctx, {
    name: body.name,
    type: body.type,
    enabled: body.enabled,
    condition,
    intentTemplate: body.intent_template as Record<string, unknown>,
    deduplication: body.deduplication,
    maxConcurrent: body.max_concurrent ?? null,
    namespace: body.namespace ?? null,
    intentId: null,
    action: null,
    createdBy: caller.actor,
  });
}

/**
 * The MCP server's POST /intents/{id}/triggers: `trigger_type` state_change is an event trigger
 * on the intent's status changes (its condition the filter, e.g. {"to_state": "completed"});
 * `action` is kept, and the intent a firing creates carries it (docs/triggers.md).
 */
export async function createScopedTrigger(ctx: TriggersContext, intentId: string, body: CreateScopedTriggerBody, caller: Caller): Promise<Trigger> {
  const type: TriggerType = body.trigger_type === "schedule" ? "schedule" : "event";
  const raw = body.trigger_type === "state_change" ? stateChangeCondition(body.condition) : body.condition;
  const condition = parseCondition(type, raw) as Record<string, unknown>;
  const title = typeof body.action.title === "string" && body.action.title.trim() ? body.action.title.trim().slice(0, 500) : `${body.name || body.trigger_type} fired`;
  return insertTrigger(ctx, {
    name: body.name,
    type,
    enabled: true,
    condition,
    intentTemplate: { title, context: { action: body.action, scope_intent_id: intentId } },
    deduplication: "allow",
    maxConcurrent: null,
    namespace: null,
    intentId,
    action: body.action,
    createdBy: body.created_by ?? caller.actor,
  });
}

function stateChangeCondition(condition: Record<string, unknown>): Record<string, unknown> {
  if (typeof condition.event === "string") return condition;
  const { filter, ...rest } = condition;
  return { event: triggerEventAliases.intentStateChanged, filter: filter && typeof filter === "object" ? filter : rest };
}

async function insertTrigger(ctx: TriggersContext, fields: Omit<typeof triggers.$inferInsert, "id" | "createdAt" | "updatedAt" | "nextFireAt">): Promise<Trigger> {
  const now = ctx.clock.now();
  const [row] = await ctx.db
    .insert(triggers)
    .values({ ...fields, id: newTriggerId(), createdAt: now, updatedAt: now, nextFireAt: scheduleFrom(fields.type, fields.enabled!, fields.condition, now, now) })
    .returning();
  if (row!.nextFireAt) ctx.dispatchSoon();
  ctx.eventTriggers.invalidate();
  return toTrigger(row!);
}

export async function findTrigger(ctx: TriggersContext, triggerId: string): Promise<TriggerRow> {
  const [row] = await ctx.db.select().from(triggers).where(and(eq(triggers.id, triggerId), isNull(triggers.deletedAt)));
  if (!row) throw errors.notFound("trigger", triggerId);
  return row;
}

export async function getTrigger(ctx: TriggersContext, triggerId: string): Promise<Trigger> {
  return toTrigger(await findTrigger(ctx, triggerId));
}

/** GET /triggers (§8.1 filters), oldest first, as the bare list the Python client reads. */
export async function listTriggers(ctx: TriggersContext, query: ListTriggersQuery): Promise<Trigger[]> {
  const filters: SQL[] = [isNull(triggers.deletedAt)];
  if (query.type) filters.push(eq(triggers.type, query.type));
  if (query.namespace) filters.push(eq(triggers.namespace, query.namespace));
  if (query.enabled !== undefined) filters.push(eq(triggers.enabled, query.enabled));
  const rows = await ctx.db.select().from(triggers).where(and(...filters)).orderBy(asc(triggers.createdAt), asc(triggers.id)).limit(query.limit);
  return rows.map(toTrigger);
}

export async function listScopedTriggers(ctx: TriggersContext, intentId: string): Promise<Trigger[]> {
  const rows = await ctx.db.select().from(triggers).where(and(eq(triggers.intentId, intentId), isNull(triggers.deletedAt))).orderBy(asc(triggers.createdAt), asc(triggers.id)).limit(1000);
  return rows.map(toTrigger);
}

/**
 * PATCH /triggers/{id} (§9.2): one conditional UPDATE on the version the caller read (If-Match)
 * or holds now. A change of the condition, or a resume, schedules from now.
 */
export async function updateTrigger(ctx: TriggersContext, triggerId: string, ifMatch: number | null, body: UpdateTriggerBody): Promise<Trigger> {
  const updated = await ctx.db.transaction(async (tx) => {
    const [row] = await tx.select().from(triggers).where(and(eq(triggers.id, triggerId), isNull(triggers.deletedAt))).for("update");
    if (!row) throw errors.notFound("trigger", triggerId);
    if (ifMatch !== null && ifMatch !== row.version) throw errors.versionMismatch("trigger", triggerId, row.version, ifMatch);
    const now = ctx.clock.now();
    const condition = body.condition ? (parseCondition(row.type as TriggerType, body.condition) as Record<string, unknown>) : row.condition;
    const enabled = body.enabled ?? row.enabled;
    const reschedule = body.condition !== undefined || (enabled && !row.enabled);
    const nextFireAt = !enabled ? null : reschedule ? scheduleFrom(row.type, enabled, condition, now, row.createdAt) : row.nextFireAt;
    const [updated] = await tx
      .update(triggers)
      .set({
        name: body.name ?? row.name,
        enabled,
        condition,
        intentTemplate: (body.intent_template as Record<string, unknown> | undefined) ?? row.intentTemplate,
        deduplication: body.deduplication ?? row.deduplication,
        maxConcurrent: body.max_concurrent === undefined ? row.maxConcurrent : body.max_concurrent,
        namespace: body.namespace === undefined ? row.namespace : body.namespace,
        nextFireAt,
        updatedAt: now,
        version: row.version + 1,
      })
      .where(eq(triggers.id, triggerId))
      .returning();
    if (nextFireAt) ctx.dispatchSoon();
    return toTrigger(updated!);
  });
  ctx.eventTriggers.invalidate();
  return updated;
}

/** DELETE (§9.1): never answered again nor fired; its history stays. */
export async function deleteTrigger(ctx: TriggersContext, triggerId: string, intentId?: string) {
  const filters = [eq(triggers.id, triggerId), isNull(triggers.deletedAt)];
  if (intentId) filters.push(eq(triggers.intentId, intentId));
  const now = ctx.clock.now();
  const [row] = await ctx.db.update(triggers).set({ deletedAt: now, enabled: false, nextFireAt: null, updatedAt: now }).where(and(...filters)).returning({ id: triggers.id });
  if (!row) throw errors.notFound("trigger", triggerId);
  ctx.eventTriggers.invalidate();
  return { status: "deleted" as const, trigger_id: triggerId };
}

/** GET /triggers/{id}/history: newest first. */
export async function triggerHistory(ctx: TriggersContext, triggerId: string, limit: number): Promise<Firing[]> {
  await findTrigger(ctx, triggerId);
  const rows = await ctx.db.select().from(firings).where(eq(firings.triggerId, triggerId)).orderBy(desc(firings.firedAt), desc(firings.id)).limit(limit);
  return rows.map(toFiring);
}

export { type Caller };
