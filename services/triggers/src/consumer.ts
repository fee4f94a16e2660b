import { IntentEvent, streams } from "@intentmesh/contracts";
import { startDurableConsumer, type Bus } from "@intentmesh/bus";
import type { TriggersContext } from "./context";
import { inbox } from "./db/schema";
import { onIntentEvent } from "./firing";

/**
 * Every intent event, once (durable consumer shared by the replicas, inbox row in the transaction
 * of its effects): event triggers fire, ended intents free their trigger's place (firing.ts
 * onIntentEvent). The firings it records are created by the dispatcher right after the commit.
 */
export async function startEventConsumer(bus: Bus, ctx: TriggersContext) {
  return startDurableConsumer(bus, {
    stream: streams.intents.name,
    durable: "triggers-intent-events",
    filterSubject: "im.evt.intent.>",
    db: ctx.db,
    inbox,
    logger: ctx.logger,
    parse: (data) => IntentEvent.parse(data),
    handle: async (tx, event) => {
      await onIntentEvent(ctx, tx, event);
    },
    afterCommit: () => ctx.dispatchSoon(),
  });
}
