import { appError } from "@intentmesh/contracts";
import { AppError, isCoordinatorOrAdmin, registryCommands, type Caller } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";

/**
 * Which API key (principal) each agent id is bound to, asked of the registry. Part 5 and the
 * registry issue: a registered agent acts only through the key it is bound to.
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

  /**
   * The acting agent (X-Agent-ID, or the body field naming it). An id no agent registered is the
   * caller's own label: a standalone agent (spec 4.9, registration rule 6: registration is
   * optional) may be assigned, lease, record costs and failures and append events under it. A
   * registered agent acts only through the key it is bound to. Admins and coordinators may act
   * for any agent (they assign and supervise work).
   */
  async assertMayActAs(agentId: string, caller: Caller, isAnotherKeysPrincipal: (name: string) => boolean): Promise<void> {
    if (isCoordinatorOrAdmin(caller)) return; // they act for any agent, registered or not
    const principal = await this.principalOf(agentId, caller);
    if (principal !== undefined && principal !== caller.principal) throw notBound(agentId);
    // An unregistered label equal to another key's principal would act as that key's requests do.
    if (principal === undefined && agentId !== caller.principal && isAnotherKeysPrincipal(agentId)) {
      throw appError("AGENT_ID_RESERVED", `${agentId} is the name of another API key's principal; act under another agent id`, { agent_id: agentId });
    }
  }

  /** A name that may be a person's label: free, unless it is a registered agent of another key (admins and coordinators excepted). */
  async assertNotAnothers(name: string, caller: Caller): Promise<void> {
    if (isCoordinatorOrAdmin(caller)) return; // they act for any agent, registered or not
    const principal = await this.principalOf(name, caller);
    if (principal !== undefined && principal !== caller.principal) throw notBound(name);
  }

  /** The principal an agent id is bound to; undefined (never cached) when no agent registered it, so a registration through another replica counts at once. */
  private async principalOf(agentId: string, caller: Caller): Promise<string | undefined> {
    const cached = this.cache.get(agentId);
    if (cached !== undefined) return cached;
    let principal: string;
    try {
      ({ principal } = await this.client.request(registryCommands.binding, caller, { agent_id: agentId }));
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
  appError("AGENT_NOT_BOUND", `agent ${agentId} is registered with another API key; act as it only with that key`, { agent_id: agentId });
