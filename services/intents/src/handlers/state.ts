import { errors, intentEventTypes, type Caller, type Intent, type StatePatch } from "@intentmesh/contracts";
import type { IntentsContext } from "../context";
import { commitIntentChange, readAtVersion } from "../event-log";
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
    const current = await readAtVersion(tx, intentId, ifMatch);
    await assertLeasesAllowWrite(tx, current, caller, patches.map((p) => p.path), now);
    const state = applyStatePatches(current.state, patches);
    return commitIntentChange(
      tx,
      intentId,
      ifMatch,
      { state },
      (row) => ({ eventType: intentEventTypes.statePatched, actor: caller.actor, payload: { patches, version: row.version } }),
      now,
    );
  });
  ctx.published();
  return intent;
}
