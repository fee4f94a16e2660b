import { AgentEvent, IntentEvent, agentEventTypes, streams } from "@intentmesh/contracts";
import { startDurableConsumer, type Bus } from "@intentmesh/bus";
import type { TriggersContext } from "./context";
import { inbox } from "./db/schema";
import { onIntentEvent } from "./firing";

/**
 * Every intent event and every agent lifecycle event, once (durable consumer shared by the replicas, inbox row in the transaction
 * of its effects): event triggers fire, ended intents free their trigger's place (firing.ts
 * onIntentEvent). The firings it records are created by the dispatcher right after the commit.
 */
export async function startEventConsumer(bus: Bus, ctx: TriggersContext) {
  const common = { db: ctx.db, inbox, logger: ctx.logger, afterCommit: () => ctx.dispatchSoon() };
  const intentEvents = await startDurableConsumer(bus, {
    ...common,
    stream: streams.intents.name,
    durable: "triggers-intent-events",
    filterSubject: "im.evt.intent.>",
    parse: (data) => IntentEvent.parse(data),
    handle: async (tx, event) => {
      await onIntentEvent(ctx, tx, event);
    },
  });
  // RFC-0017 §3.2 agent.registered, agent.status_changed, agent.dead: the registry's lifecycle events.
  const agentEvents = await startDurableConsumer(bus, {
    ...common,
    stream: streams.registry.name,
    durable: "triggers-agent-lifecycle",
    filterSubject: `im.evt.agent.*.${agentEventTypes.lifecycle}`,
    parse: (data) => AgentEvent.parse(data),
    handle: async (tx, event) => {
      await onIntentEvent(ctx, tx, { ...event, intent_id: null });
    },
  });
  return {
    stop: async () => {
      await intentEvents.stop();
      await agentEvents.stop();
    },
  };
}
