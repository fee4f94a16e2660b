import { coordinatorCommands } from "@intentmesh/contracts";
import { SERVICE_CALLER, type MemoryContext } from "./context";

/**
 * Spec 4.8 "the coordinator managing the task" includes the agent holding the live coordinator
 * lease of the task's intent (RFC-0013; docs/coordinators.md). Only the intents service knows
 * the leases: memory asks it (im.intents.coordinators.held_by) and never reads its tables.
 *
 * Nothing is cached: a lease can end at any moment (expiry on the intents service's clock,
 * failover), so every access decision that needs it asks again, and a right gained through a
 * lease ends with the very next request after the lease does. Callers ask only when the other
 * rules have refused, so owners, admins and coordinator keys that created the task never wait on it.
 */
export async function intentsCoordinatedBy(ctx: MemoryContext, agentId: string): Promise<string[]> {
  const reply = await ctx.client.request(coordinatorCommands.heldBy, SERVICE_CALLER, { agent_id: agentId });
  return reply.intent_ids;
}
