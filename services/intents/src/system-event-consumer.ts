import { sql } from "drizzle-orm";
import { SystemEvent, systemEventStream } from "@intentmesh/contracts";
import { ensureStream, startDurableConsumer, type Bus } from "@intentmesh/bus";
import { rowsOf } from "@intentmesh/db";
import type { IntentsContext } from "./context";
import { inbox } from "./db/schema";
import { appendToLog } from "./event-log";

/**
 * Shared contract point 1, the intents side: facts other services announce about an intent
 * (stream IM_SYSTEM_EVENTS) are appended to its log at its next sequence number, once (the inbox
 * row of the deterministic message id commits with the append). An event for an intent that does
 * not exist is dropped.
 *
 * Interim: the service kit (issue 11) brings the consumer every service's events go through;
 * this one exists so governance's events reach the log before that lands, and the merge keeps one.
 */
export const SYSTEM_EVENT_DURABLE = "intents-system-events";

export async function startSystemEventConsumer(ctx: IntentsContext, bus: Bus): Promise<{ stop(): Promise<void> }> {
  await ensureStream(bus, systemEventStream);
  return startDurableConsumer(bus, {
    stream: systemEventStream.name,
    durable: SYSTEM_EVENT_DURABLE,
    filterSubject: systemEventStream.subjects[0],
    db: ctx.db,
    inbox,
    parse: (data) => SystemEvent.parse(data),
    handle: async (tx, event) => {
      const [exists] = rowsOf<{ id: string }>(await tx.execute(sql`select id from intents.intents where id = ${event.intent_id} for update`));
      if (!exists) return;
      await appendToLog(tx, event.intent_id, [{ eventType: event.event_type, actor: event.actor, payload: event.payload as Record<string, unknown>, traceId: event.trace_id ?? null }], ctx.clock.now());
    },
    logger: ctx.logger,
    afterCommit: () => ctx.published(),
  });
}
