import { and, asc, count, eq, inArray, isNull, lte, or, sql } from "drizzle-orm";
import {
  MAX_TRIGGER_DEPTH,
  appError,
  derivedUuid,
  intentsCommands,
  isAppError,
  intentEvents,
  isoTimestamp,
  systemEvents,
  type EventCondition,
  type ScheduleCondition,
  type TriggerFiredPayload,
} from "@intentmesh/contracts";
import { enqueueSystemEvents, newSystemEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { Sweeper } from "@intentmesh/service";
import { SERVICE_CALLER, type TriggersContext } from "./context";
import { firings, outbox, triggers } from "./db/schema";
import { afterFiring, eventFacts, eventMatches, isOneTime, mayOpenAnother, render, type ObservedEvent } from "./domain/rules";
import { findTrigger, type FiringRow, type TriggerRow } from "./handlers/triggers";

/** How many due triggers one claim transaction takes, and how many pending firings one dispatch. */
const CLAIM_BATCH = 100;
const DISPATCH_BATCH = 16;

/** The intent a firing creates: derived from the firing, so every attempt names the same one (derived-uuid.ts). */
export const intentIdOf = (firingId: string) => derivedUuid(`trigger-firing-intent:${firingId}`);

type Admission = "pending" | "skipped" | "queued";

/**
 * §6 deduplication, under the trigger's row lock (the caller holds it): may this firing open
 * another intent? Pending firings count as open (their intent is on its way).
 */
async function admit(tx: Tx, row: TriggerRow): Promise<Admission> {
  const [open] = await tx
    .select({ n: count() })
    .from(firings)
    .where(and(eq(firings.triggerId, row.id), or(eq(firings.intentOpen, true), eq(firings.status, "pending"))));
  if (mayOpenAnother(row.deduplication as "allow" | "skip" | "queue", row.maxConcurrent, open!.n)) return "pending";
  // §6 queue: one deferred firing at most; a second is skipped.
  return row.deduplication === "queue" && !row.queued ? "queued" : "skipped";
}

const REASONS: Record<Admission, string | null> = {
  pending: null,
  skipped: "deduplication: the trigger's open intents are at its limit",
  queued: "deduplication: queued until an open intent of the trigger ends",
};

/** Writes a firing and moves the trigger's counters, in the caller's transaction. False when the firing existed already. */
async function recordFiring(
  tx: Tx,
  row: TriggerRow,
  now: Date,
  firing: { id: string; source: "schedule" | "event" | "manual"; scheduledFor?: Date | null; causeEventId?: string | null; causePayload?: Record<string, unknown> | null; depth: number; chain: string[] },
  status: Admission | "suppressed",
  reason: string | null,
): Promise<boolean> {
  const inserted = await tx
    .insert(firings)
    .values({
      id: firing.id,
      triggerId: row.id,
      source: firing.source,
      status,
      scheduledFor: firing.scheduledFor ?? null,
      firedAt: now,
      intentId: intentIdOf(firing.id),
      causeEventId: firing.causeEventId ?? null,
      causePayload: firing.causePayload ?? null,
      depth: firing.depth,
      chain: firing.chain,
      reason,
    })
    .onConflictDoNothing()
    .returning({ id: firings.id });
  if (!inserted.length) return false;
  if (status === "pending") await tx.update(triggers).set({ fireCount: sql`${triggers.fireCount} + 1`, lastFiredAt: now }).where(eq(triggers.id, row.id));
  if (status === "queued") await tx.update(triggers).set({ queued: true }).where(eq(triggers.id, row.id));
  return true;
}

/**
 * One claim of the schedules due at `now`, across replicas: the due rows are locked (FOR UPDATE
 * SKIP LOCKED, so two replicas never take the same one), and for each the firing is recorded
 * and the next due time moved on in the same transaction. A replica that dies before the commit
 * leaves the row as it was, due, for the next claim; after it, the firing is there and the due
 * time has moved: no due time fires twice (a unique index on trigger and due time says so too).
 * Misfires: rules.ts afterFiring (one firing for all the due times missed).
 */
export async function claimDue(ctx: TriggersContext): Promise<number> {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (tx) => {
    const due = await tx
      .select()
      .from(triggers)
      .where(and(eq(triggers.enabled, true), isNull(triggers.deletedAt), lte(triggers.nextFireAt, now)))
      .orderBy(asc(triggers.nextFireAt))
      .limit(CLAIM_BATCH)
      .for("update", { skipLocked: true });
    for (const row of due) {
      const condition = row.condition as ScheduleCondition;
      const dueAt = row.nextFireAt!;
      const { next, missed } = afterFiring(condition, dueAt, now, row.createdAt);
      const status = await admit(tx, row);
      const reason = [REASONS[status], missed ? `${missed} missed due time(s) coalesced into this firing` : null].filter(Boolean).join("; ") || null;
      await recordFiring(tx, row, now, { id: derivedUuid(`trigger:${row.id}:schedule:${dueAt.toISOString()}`), source: "schedule", scheduledFor: dueAt, depth: 1, chain: [row.id] }, status, reason);
      await tx
        .update(triggers)
        .set({ nextFireAt: next, enabled: isOneTime(condition) && !next ? false : row.enabled })
        .where(eq(triggers.id, row.id));
    }
    return due.length;
  });
}

/** What the firing's intent is: the template rendered (§5.1), its lineage in state._trigger (§5.2). */
export function intentBodyOf(row: TriggerRow, firing: FiringRow) {
  const vars = {
    trigger: { trigger_id: row.id, name: row.name, type: row.type, fired_at: isoTimestamp(firing.firedAt), fire_count: row.fireCount, scheduled_for: firing.scheduledFor ? isoTimestamp(firing.scheduledFor) : null },
    event: firing.causePayload ?? {},
  };
  const template = (render(row.intentTemplate ?? {}, vars) ?? {}) as Record<string, unknown>;
  const context = template.context && typeof template.context === "object" && !Array.isArray(template.context) ? (template.context as Record<string, unknown>) : {};
  const title = typeof template.title === "string" && template.title.trim() ? template.title.trim().slice(0, 500) : row.name || `trigger ${row.id}`;
  const lineage = {
    created_by: "trigger",
    trigger_id: row.id,
    trigger_type: row.type,
    trigger_depth: firing.depth,
    trigger_chain: firing.chain,
    firing_id: firing.id,
    fired_at: isoTimestamp(firing.firedAt),
    scheduled_for: firing.scheduledFor ? isoTimestamp(firing.scheduledFor) : null,
    intent_type: template.type ?? null,
    priority: template.priority ?? null,
    tags: Array.isArray(template.tags) ? template.tags : [],
    namespace: row.namespace,
    ...(row.intentId ? { scope_intent_id: row.intentId } : {}),
  };
  return {
    title,
    description: typeof template.description === "string" ? template.description : null,
    created_by: `trigger:${row.id}`,
    status: template.status === "draft" ? ("draft" as const) : ("active" as const),
    state: { ...context, _trigger: lineage },
    constraints: {},
  };
}

/** Whether a refusal of the intents service is final (the template cannot make an intent), not a passing failure worth retrying. */
const isFinal = (error: unknown) => isAppError(error) && error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429;

/**
 * Creates the intents of pending firings, each under the id derived from its firing (a retry
 * after a crash finds the intent made before and creates none), then marks the firing created
 * and enqueues trigger.fired into the new intent's log in one transaction. The firings are
 * locked while their intents are made (SKIP LOCKED: replicas share the backlog).
 */
export async function dispatchPending(ctx: TriggersContext, only?: string): Promise<number> {
  let total = 0;
  for (;;) {
    const done = await ctx.db.transaction(async (tx) => {
      const filter = only ? and(eq(firings.id, only), eq(firings.status, "pending")) : eq(firings.status, "pending");
      const query = tx.select().from(firings).where(filter).orderBy(asc(firings.firedAt)).limit(only ? 1 : DISPATCH_BATCH);
      const locked = only ? await query.for("update") : await query.for("update", { skipLocked: true });
      const rows = locked.length ? await tx.select().from(triggers).where(inArray(triggers.id, [...new Set(locked.map((f) => f.triggerId))])) : [];
      const byId = new Map(rows.map((row) => [row.id, row]));
      const batch = locked.map((firing) => ({ firings: firing, triggers: byId.get(firing.triggerId)! }));
      const results = await Promise.allSettled(
        batch.map(({ firings: firing, triggers: row }) => ctx.client.request(intentsCommands.create, SERVICE_CALLER, { intent_id: firing.intentId!, body: intentBodyOf(row, firing) })),
      );
      const now = ctx.clock.now();
      for (const [i, result] of results.entries()) {
        const { firings: firing, triggers: row } = batch[i]!;
        if (result.status === "fulfilled") {
          // A retry after a crash may find its intent already ended (its status_changed passed while the firing was pending).
          const open = result.value.status !== "completed" && result.value.status !== "abandoned";
          await tx.update(firings).set({ status: "created", intentOpen: open }).where(eq(firings.id, firing.id));
          const payload: TriggerFiredPayload = {
            trigger_id: row.id,
            trigger_name: row.name,
            trigger_type: row.type,
            firing_id: firing.id,
            created_intent_id: result.value.id,
            source: firing.source,
            trigger_depth: firing.depth,
            trigger_chain: firing.chain,
            scheduled_for: firing.scheduledFor ? isoTimestamp(firing.scheduledFor) : null,
            ...(row.action ? { action: row.action } : {}),
          };
          await enqueueSystemEvents(tx, outbox, [
            newSystemEvent(systemEvents.triggerFired, { id: derivedUuid(`trigger-fired:${firing.id}`), source: "triggers", intentId: result.value.id, actor: "system:triggers", payload, at: now }),
          ]);
        } else if (isFinal(result.reason)) {
          await tx.update(firings).set({ status: "failed", reason: `the intent could not be created: ${(result.reason as Error).message}`.slice(0, 1000) }).where(eq(firings.id, firing.id));
        } else {
          ctx.logger.warn({ err: result.reason, firing_id: firing.id, trigger_id: row.id }, "triggers: creating a firing's intent failed; the next pass retries");
        }
      }
      return { taken: batch.length, created: results.filter((r) => r.status === "fulfilled").length };
    });
    if (done.created) ctx.published();
    total += done.created;
    if (only || done.taken < DISPATCH_BATCH || done.created === 0) return total;
  }
}

/**
 * POST /triggers/{id}/fire (§8.3): bypasses the condition, respects deduplication (409
 * TRIGGER_DEDUPLICATED), and answers the created intent (201).
 */
export async function fireManually(ctx: TriggersContext, triggerId: string) {
  await findTrigger(ctx, triggerId);
  const firingId = crypto.randomUUID();
  await ctx.db.transaction(async (tx) => {
    const [row] = await tx.select().from(triggers).where(and(eq(triggers.id, triggerId), isNull(triggers.deletedAt))).for("update");
    if (!row) throw appError("TRIGGER_NOT_FOUND", `trigger ${triggerId} was not found`, { resource: "trigger", id: triggerId });
    const admission = await admit(tx, row);
    if (admission !== "pending") {
      throw appError("TRIGGER_DEDUPLICATED", `trigger ${triggerId} is at its limit of open intents (deduplication ${row.deduplication}); nothing was created`, { trigger_id: triggerId, deduplication: row.deduplication });
    }
    await recordFiring(tx, row, ctx.clock.now(), { id: firingId, source: "manual", depth: 1, chain: [row.id] }, "pending", null);
  });
  await dispatchPending(ctx, firingId);
  const [firing] = await ctx.db.select().from(firings).where(eq(firings.id, firingId));
  if (firing!.status === "failed") throw appError("TRIGGER_FIRE_FAILED", firing!.reason ?? "the trigger's template did not make a valid intent", { trigger_id: triggerId, firing_id: firingId });
  if (firing!.status !== "created") throw appError("SERVICE_UNAVAILABLE", "the intent of this firing could not be created yet; the scheduler retries it (see the trigger's history)", { firing_id: firingId });
  const intent = await ctx.client.request(intentsCommands.get, SERVICE_CALLER, { intent_id: firing!.intentId! });
  return { ...intent, trigger_id: triggerId, firing_id: firingId };
}

/**
 * What an event means for triggers, in the consumer's transaction (idempotent with the inbox
 * row): an intent of a firing that ended frees its place (and lets a queued firing go, §6
 * queue); every enabled event trigger it matches (§3.1) fires, once per event (unique index),
 * with the cascade depth of the intent it happened on (§3.3: past MAX_TRIGGER_DEPTH suppressed).
 * An agent's lifecycle event (no intent) reaches the global triggers only, at depth 1.
 */
/** An intent's move to completed or abandoned: it frees the place its trigger's firing held (deduplication). */
export const endsIntent = (event: ObservedEvent): event is ObservedEvent & { intent_id: string } =>
  event.intent_id !== null && event.event_type === intentEvents.statusChanged.name && (event.payload.to === "completed" || event.payload.to === "abandoned");

export async function onIntentEvent(ctx: TriggersContext, tx: Tx, event: ObservedEvent): Promise<number> {
  const now = ctx.clock.now();
  let pending = 0;
  if (endsIntent(event)) {
    const closed = await tx.update(firings).set({ intentOpen: false }).where(and(eq(firings.intentId, event.intent_id), eq(firings.intentOpen, true))).returning({ triggerId: firings.triggerId });
    for (const { triggerId } of closed) pending += await releaseQueued(tx, triggerId, now);
  }
  const candidates = await tx
    .select()
    .from(triggers)
    .where(and(eq(triggers.enabled, true), isNull(triggers.deletedAt), eq(triggers.type, "event"), event.intent_id ? or(isNull(triggers.intentId), eq(triggers.intentId, event.intent_id)) : isNull(triggers.intentId)));
  // A trigger answers the events that happened once it existed (a replay of older ones fires nothing).
  const at = Date.parse(event.created_at);
  const matching = candidates.filter((row) => at >= row.createdAt.getTime() && eventMatches(row.condition as EventCondition, event));
  if (!matching.length) return pending;
  const [parent] = event.intent_id ? await tx.select({ depth: firings.depth, chain: firings.chain }).from(firings).where(eq(firings.intentId, event.intent_id)).limit(1) : [];
  for (const candidate of matching) {
    const [row] = await tx.select().from(triggers).where(eq(triggers.id, candidate.id)).for("update");
    if (!row || !row.enabled || row.deletedAt) continue;
    const depth = (parent?.depth ?? 0) + 1;
    const chain = [...(parent?.chain ?? []), row.id];
    const status = depth > MAX_TRIGGER_DEPTH ? "suppressed" : await admit(tx, row);
    const reason = status === "suppressed" ? `cascade depth ${depth} is past the limit of ${MAX_TRIGGER_DEPTH} (RFC-0017 §3.3)` : REASONS[status];
    const firing = { id: derivedUuid(`trigger:${row.id}:event:${event.id}`), source: "event" as const, causeEventId: event.id, causePayload: eventFacts(event), depth, chain };
    if ((await recordFiring(tx, row, now, firing, status, reason)) && status === "pending") pending += 1;
  }
  return pending;
}

/** §6 queue: the trigger's deferred firing goes now, when its limit allows. */
async function releaseQueued(tx: Tx, triggerId: string, now: Date): Promise<number> {
  const [row] = await tx.select().from(triggers).where(eq(triggers.id, triggerId)).for("update");
  if (!row?.queued || row.deletedAt) return 0;
  if ((await admit(tx, { ...row, queued: true })) !== "pending") return 0;
  const released = await tx
    .update(firings)
    .set({ status: "pending", firedAt: now, reason: "deduplication: released from the queue when an open intent ended" })
    .where(and(eq(firings.triggerId, triggerId), eq(firings.status, "queued")))
    .returning({ id: firings.id });
  await tx.update(triggers).set({ queued: false, fireCount: sql`${triggers.fireCount} + ${released.length}`, lastFiredAt: released.length ? now : row.lastFiredAt }).where(eq(triggers.id, triggerId));
  return released.length;
}

/**
 * The scheduler: each pass claims the due schedules, then creates the intents of every pending
 * firing (schedule, event, queue, and manual ones whose caller went away). Runs every
 * TRIGGER_SCHEDULER_INTERVAL_MS on the injectable clock's time; tests call sweep() directly.
 */
export class TriggerScheduler extends Sweeper {
  private soon: NodeJS.Timeout | undefined;
  private stopped = false;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly ctx: TriggersContext,
    intervalMs: number,
  ) {
    super(intervalMs, ctx.logger, "trigger scheduler");
  }

  async sweep(): Promise<number> {
    let claimed = 0;
    for (let i = 0; i < 100; i++) {
      const n = await claimDue(this.ctx);
      claimed += n;
      if (n < CLAIM_BATCH) break;
    }
    return claimed + (await this.dispatch());
  }

  /** This replica's dispatches run one after another (a kick and a pass never skip each other's rows); replicas share the backlog through SKIP LOCKED. */
  private dispatch(): Promise<number> {
    const run = this.chain.then(() => dispatchPending(this.ctx));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Dispatch pending firings shortly (coalesced), without waiting for the next tick. */
  kick(): void {
    if (this.soon || this.stopped) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      this.dispatch().catch((err: unknown) => this.ctx.logger.warn({ err }, "triggers: dispatch failed; the next tick retries"));
    }, 10);
    this.soon.unref();
  }

  override async stop(): Promise<void> {
    this.stopped = true;
    if (this.soon) clearTimeout(this.soon);
    await super.stop();
    await this.chain;
  }
}
