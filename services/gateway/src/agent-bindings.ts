import { AppError, registryCommands, type Caller } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";

/**
 * Which API key (principal) each agent id is bound to, asked of the registry. Part 5 and the
 * registry issue: the acting agent of a request must be bound to the calling key.
 *
 * A binding never changes once made (re-registration keeps it), so a positive answer is cached
 * for good, up to a bound on entries; a miss is always asked again, so an agent registered
 * through another gateway replica a moment ago is found.
 */
export class AgentBindings {
  private readonly cache = new Map<string, string>();

  constructor(
    private readonly client: BusClient,
    private readonly maxEntries = 100_000,
  ) {}

  async assertBound(agentId: string, caller: Caller): Promise<void> {
    const principal = this.cache.get(agentId) ?? (await this.lookup(agentId, caller));
    if (principal === caller.principal) return;
    throw new AppError("AGENT_NOT_BOUND", 403, `agent ${agentId} is registered with another API key; act as it only with that key`, { agent_id: agentId });
  }

  private async lookup(agentId: string, caller: Caller): Promise<string> {
    let principal: string;
    try {
      ({ principal } = await this.client.request<{ principal: string }>(registryCommands.binding, caller, { agent_id: agentId }));
    } catch (error) {
      if (error instanceof AppError && error.status === 404) {
        throw new AppError("AGENT_NOT_REGISTERED", 403, `agent ${agentId} is not registered; register it with this API key (POST /agents) before acting as it`, {
          agent_id: agentId,
        });
      }
      throw error;
    }
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(agentId, principal);
    return principal;
  }
}
