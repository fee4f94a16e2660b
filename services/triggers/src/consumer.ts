import { agentEvents } from "@intentmesh/contracts";
import { eventOn, eventsOfLog, subscribe, type Bus } from "@intentmesh/bus";
import type { TriggersContext } from "./context";
import { inbox } from "./db/schema";
import { endsIntent, onIntentEvent } from "./firing";

/**
 * Every intent event and every agent lifecycle event, once (durable consumer shared by the replicas, inbox row in the transaction
 * of its effects): event triggers fire, ended intents free their trigger's place (firing.ts
 * onIntentEvent). The firings it records are created by the dispatcher right after the commit.
 */
export async function startEventConsumer(bus: Bus, ctx: TriggersContext) {
  const common = { db: ctx.db, inbox, logger: ctx.logger, afterCommit: () => ctx.dispatchSoon() };
  const intentEvents = await subscribe(bus, eventsOfLog("intent"), {
    ...common,
    durable: "triggers-intent-events",
    // Most events end no intent and match no event trigger: acknowledged without a transaction.
    skip: async (event) => !endsIntent(event) && !(await ctx.eventTriggers.couldMatch(event)),
    handle: async (tx, event) => {
      await onIntentEvent(ctx, tx, event);
    },
  });
  // RFC-0017 §3.2 agent.registered, agent.status_changed, agent.dead: the registry's lifecycle events.
  const lifecycleEvents = await subscribe(bus, eventOn(agentEvents.lifecycle, "agent"), {
    ...common,
    durable: "triggers-agent-lifecycle",
    skip: async (event) => !(await ctx.eventTriggers.couldMatch({ ...event, intent_id: null })),
    handle: async (tx, event) => {
      await onIntentEvent(ctx, tx, { ...event, intent_id: null });
    },
  });
  return {
    stop: async () => {
      await intentEvents.stop();
      await lifecycleEvents.stop();
    },
  };
}
