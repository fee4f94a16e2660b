import { randomUUID } from "node:crypto";
import { governanceEvents, intentsCommands, type Caller, type EngagementDecision, type EngagementSignals } from "@intentmesh/contracts";
import { enqueueSystemEvents } from "@intentmesh/bus";
import type { GovernanceContext } from "../context";
import { outbox } from "../db/schema";
import { decideEngagement } from "../domain/engagement";
import { governanceEvent } from "../system-events";

/** POST /intents/{id}/engagement: the decision of spec 4.5, logged as engagement.decision {mode, should_ask, rationale, signals}. */
export async function engagementDecision(ctx: GovernanceContext, intentId: string, signals: EngagementSignals, caller: Caller): Promise<EngagementDecision> {
  await ctx.client.request(intentsCommands.get, caller, { intent_id: intentId });
  const decision = decideEngagement(signals);
  await ctx.db.transaction(async (tx) => {
    await enqueueSystemEvents(tx, outbox, [
      governanceEvent(governanceEvents.engagementDecision, randomUUID(), intentId, caller.actor, { ...decision }, ctx.clock.now()),
    ]);
  });
  ctx.published();
  return decision;
}
