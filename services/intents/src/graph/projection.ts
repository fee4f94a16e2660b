import { sql } from "drizzle-orm";
import type { JsMsg } from "@nats-io/jetstream";
import { intentEvents, intentEventTypes } from "@intentmesh/contracts";
import { eventOn, newEvent, subscribe, type Bus } from "@intentmesh/bus";
import { rowsOf, type Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { inbox } from "../db/schema";
import { appendToLog, type NewEvent } from "../kernel/event-log";
import { DEPENDENCIES_BLOCK } from "./handlers";
import { toUuidArray } from "./statements";

/**
 * Completing a dependency makes its dependents ready (RFC-0002): a durable consumer of the
 * intents' own status_changed events (stream IM_INTENTS) that, when an intent completes, appends
 * `intent.ready` to the log of every open dependent whose dependencies are now all completed, so
 * it goes out as an event and over SSE like any other.
 *
 * Exactly once per moment of readiness: the effects and the inbox row commit together (a
 * redelivered event applies nothing twice), each dependent's row is locked while it is decided,
 * and a dependent that has an intent.ready after its last dependency_added is not announced
 * again (two dependencies completing at once both see the other completed; only the first to
 * lock announces).
 */
export const READINESS_PROJECTION_DURABLE = "intents-graph-readiness";

export interface ReadinessProjection {
  stop(): Promise<void>;
}

export async function startReadinessProjection(ctx: IntentsContext, bus: Bus, options: { afterCommit?: (msg: JsMsg) => Promise<void> | void } = {}): Promise<ReadinessProjection> {
  const consumer = await subscribe(bus, eventOn(intentEvents.statusChanged, "intent"), {
    durable: READINESS_PROJECTION_DURABLE,
    db: ctx.db,
    inbox,
    // Only a completion can make a dependent ready: every other status change is acknowledged at once.
    skip: (event) => event.payload.to !== "completed",
    handle: (tx, event) => announceReadyDependents(tx, event.intent_id, event.actor, ctx.clock.now()).then(() => undefined),
    logger: ctx.logger,
    afterCommit: async (msg) => {
      ctx.published();
      await options.afterCommit?.(msg);
    },
  });
  let stopping: Promise<void> | undefined;
  return { stop: () => (stopping ??= consumer.stop()) };
}

/** In the consumer's transaction: intent.ready on each open dependent of `completedId` that became ready. Returns their ids. */
export async function announceReadyDependents(tx: Tx, completedId: string, actor: string, at: Date): Promise<string[]> {
  // Locked in id order, the order every writer of several of them takes, so replicas queue, not
  // deadlock; then read in a second statement, whose snapshot is taken after the locks are held
  // (READ COMMITTED), so it sees what a transaction that held one before us committed.
  const locked = rowsOf<{ id: string }>(
    await tx.execute(sql`select id from intents.intents
      where depends_on @> array[${completedId}::uuid] and status not in ('completed', 'abandoned')
      order by id for update`),
  ).map((r) => r.id);
  if (!locked.length) return [];
  const dependents = rowsOf<{ id: string; status: string; blocked_reason: string | null; depends_on: string[]; ready: boolean; announced: boolean }>(
    await tx.execute(sql`
      select i.id, i.status, i.blocked_reason, i.depends_on,
        not exists (select 1 from intents.intents x where x.id = any(i.depends_on) and x.status <> 'completed') as ready,
        coalesce((select max(e.sequence) filter (where e.event_type = ${intentEventTypes.ready})
                    > coalesce(max(e.sequence) filter (where e.event_type = ${intentEventTypes.dependencyAdded}), 0)
                  from intents.events e where e.intent_id = i.id
                    and e.event_type in (${intentEventTypes.ready}, ${intentEventTypes.dependencyAdded})), false) as announced
      from intents.intents i where i.id = any(${toUuidArray(locked)}) and i.depends_on @> array[${completedId}::uuid]
        and i.status not in ('completed', 'abandoned')
      order by i.id`),
  );
  const announced: string[] = [];
  for (const dependent of dependents) {
    if (!dependent.ready) continue;
    const events: NewEvent[] = [];
    let status = dependent.status;
    // RFC-0002 auto-unblock: the server's block (blocked_reason dependencies) lifts when the last dependency completes.
    if (status === "blocked" && dependent.blocked_reason === DEPENDENCIES_BLOCK) {
      const [row] = rowsOf<{ version: number }>(
        await tx.execute(sql`update intents.intents set status = 'active', blocked_reason = null, version = version + 1, updated_at = ${at}
          where id = ${dependent.id} returning version`),
      );
      status = "active";
      events.push(newEvent(intentEvents.statusChanged, actor, { from: "blocked", to: "active", reason: "dependencies_completed", version: Number(row!.version) }));
    }
    if (!dependent.announced) {
      events.push(newEvent(intentEvents.ready, actor, { dependency_id: completedId, cause: "dependency_completed", depends_on: dependent.depends_on, status }));
    }
    if (!events.length) continue;
    await appendToLog(tx, dependent.id, events, at);
    announced.push(dependent.id);
  }
  return announced;
}
