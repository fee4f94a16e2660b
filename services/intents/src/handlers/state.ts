import { and, eq, sql } from "drizzle-orm";
import { errors, intentEventTypes, type Caller, type Intent, type StatePatch } from "@intentmesh/contracts";
import type { IntentsContext } from "../context";
import { intents } from "../db/schema";
import { missingOrStale, writeEvents } from "../event-log";
import { toIntent } from "../mapping";
import { applyStatePatches } from "../domain/state-patch";
import { assertLeasesAllowWrite } from "./lease-guard";

/**
 * POST /intents/{id}/state. Requires If-Match. The patches apply to the state read at that
 * version and are written by an UPDATE conditional on it: a concurrent writer makes this one
 * fail with 409, never overwrite. All patches apply or none does.
 */
export async function patchState(ctx: IntentsContext, intentId: string, ifMatch: number | null, patches: StatePatch[], caller: Caller): Promise<Intent> {
  if (ifMatch === null) throw errors.preconditionRequired("intent state");
  const now = ctx.clock.now();
  const intent = await ctx.db.transaction(async (tx) => {
    const [current] = await tx.select().from(intents).where(eq(intents.id, intentId));
    if (!current) throw errors.notFound("intent", intentId);
    if (current.version !== ifMatch) throw errors.versionMismatch("intent", intentId, current.version, ifMatch);
    await assertLeasesAllowWrite(tx, current, caller, patches.map((p) => p.path), now);
    const state = applyStatePatches(current.state, patches);
    const [row] = await tx
      .update(intents)
      .set({ state, version: sql`${intents.version} + 1`, eventSeq: sql`${intents.eventSeq} + 1`, updatedAt: now })
      .where(and(eq(intents.id, intentId), eq(intents.version, ifMatch)))
      .returning();
    if (!row) throw await missingOrStale(tx, intentId, ifMatch);
    await writeEvents(
      tx,
      intentId,
      row.eventSeq,
      [{ eventType: intentEventTypes.statePatched, actor: caller.actor, payload: { patches, version: row.version } }],
      now,
    );
    return toIntent(row);
  });
  ctx.published();
  return intent;
}
