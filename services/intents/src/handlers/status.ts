import { and, eq, sql } from "drizzle-orm";
import { errors, intentEventTypes, type Caller, type Intent, type IntentStatus, type StatusTransitionBody } from "@intentmesh/contracts";
import type { IntentsContext } from "../context";
import { intents } from "../db/schema";
import { missingOrStale, writeEvents } from "../event-log";
import { toIntent } from "../mapping";
import { assertTransition } from "../domain/status";

/** POST /intents/{id}/status: table 3.1, If-Match required, version + 1, intent.status_changed. */
export async function transitionStatus(ctx: IntentsContext, intentId: string, ifMatch: number | null, body: StatusTransitionBody, caller: Caller): Promise<Intent> {
  if (ifMatch === null) throw errors.preconditionRequired("intent status");
  const now = ctx.clock.now();
  const intent = await ctx.db.transaction(async (tx) => {
    const [current] = await tx.select({ status: intents.status, version: intents.version }).from(intents).where(eq(intents.id, intentId));
    if (!current) throw errors.notFound("intent", intentId);
    if (current.version !== ifMatch) throw errors.versionMismatch("intent", intentId, current.version, ifMatch);
    const from = current.status as IntentStatus;
    assertTransition(from, body.status);
    // Conditional on the version and the status read: a concurrent transition makes this one a 409.
    const [row] = await tx
      .update(intents)
      .set({ status: body.status, version: sql`${intents.version} + 1`, eventSeq: sql`${intents.eventSeq} + 1`, updatedAt: now })
      .where(and(eq(intents.id, intentId), eq(intents.version, ifMatch), eq(intents.status, from)))
      .returning();
    if (!row) throw await missingOrStale(tx, intentId, ifMatch);
    await writeEvents(
      tx,
      intentId,
      row.eventSeq,
      [
        {
          eventType: intentEventTypes.statusChanged,
          actor: caller.actor,
          payload: { from, to: body.status, reason: body.reason ?? null, version: row.version },
        },
      ],
      now,
    );
    return toIntent(row);
  });
  ctx.published();
  return intent;
}
