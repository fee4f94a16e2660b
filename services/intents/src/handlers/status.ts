import { errors, intentEventTypes, type Caller, type Intent, type IntentStatus, type StatusTransitionBody } from "@intentmesh/contracts";
import type { IntentsContext } from "../context";
import { commitIntentChange, readAtVersion } from "../event-log";
import { assertTransition } from "../domain/status";

/** POST /intents/{id}/status: table 3.1, If-Match required, version + 1, intent.status_changed. */
export async function transitionStatus(ctx: IntentsContext, intentId: string, ifMatch: number | null, body: StatusTransitionBody, caller: Caller): Promise<Intent> {
  if (ifMatch === null) throw errors.preconditionRequired("intent status");
  const now = ctx.clock.now();
  const intent = await ctx.db.transaction(async (tx) => {
    const from = (await readAtVersion(tx, intentId, ifMatch)).status as IntentStatus;
    assertTransition(from, body.status);
    return commitIntentChange(
      tx,
      intentId,
      ifMatch,
      { status: body.status },
      (row) => ({
        eventType: intentEventTypes.statusChanged,
        actor: caller.actor,
        payload: { from, to: body.status, reason: body.reason ?? null, version: row.version },
      }),
      now,
    );
  });
  ctx.published();
  return intent;
}
