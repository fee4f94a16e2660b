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

  /** The acting agent: registered, and bound to the caller's key. */
  async assertBound(agentId: string, caller: Caller): Promise<void> {
    const principal = await this.principalOf(agentId, caller);
    if (principal === undefined) {
      throw new AppError("AGENT_NOT_REGISTERED", 403, `agent ${agentId} is not registered; register it with this API key (POST /agents) before acting as it`, {
        agent_id: agentId,
      });
    }
    if (principal !== caller.principal) throw notBound(agentId);
  }

  /** A name that may be a person's label: free, unless it is a registered agent of another key. */
  async assertNotAnothers(name: string, caller: Caller): Promise<void> {
    const principal = await this.principalOf(name, caller);
    if (principal !== undefined && principal !== caller.principal) throw notBound(name);
  }

  private async principalOf(agentId: string, caller: Caller): Promise<string | undefined> {
    const cached = this.cache.get(agentId);
    if (cached !== undefined) return cached;
    let principal: string;
    try {
      ({ principal } = await this.client.request<{ principal: string }>(registryCommands.binding, caller, { agent_id: agentId }));
    } catch (error) {
      if (error instanceof AppError && error.status === 404) return undefined;
      throw error;
    }
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(agentId, principal);
    return principal;
  }
}

const notBound = (agentId: string) =>
  new AppError("AGENT_NOT_BOUND", 403, `agent ${agentId} is registered with another API key; act as it only with that key`, { agent_id: agentId });
