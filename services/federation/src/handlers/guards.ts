import { appError } from "@intentmesh/contracts";
import { AppError, registryCommands, type Agent, type Caller } from "@intentmesh/contracts";
import { checkOutboundUrl, isOutboundError } from "@intentmesh/ssrf";
import type { FederationContext } from "../context";
import { federationErrors, outboundAppError } from "../errors";
import { normalServerUrl } from "../identity";

/** The caller the federation service uses for its own requests to other services. */
export const SERVICE_CALLER: Caller = { principal: "federation", roles: ["admin"], actor: "federation", agent_id: null };

export function assertEnabled(ctx: FederationContext): void {
  if (!ctx.settings.enabled) throw federationErrors.disabled();
}

/**
 * A peer's server URL as this server will call it: through the SSRF guard's URL checks, https
 * only (http is admitted only with the test-only loopback allowance), normalised.
 */
export function peerServerUrl(ctx: FederationContext, value: string, field: string): string {
  try {
    const { url } = checkOutboundUrl(value, { allowLoopback: ctx.settings.allowLoopback });
    if (url.protocol !== "https:" && !ctx.settings.allowLoopback) {
      throw appError("SSRF_BLOCKED", `${field} must be an https URL`, { refused_class: "scheme", field });
    }
    if (url.search || url.hash) throw appError("VALIDATION_ERROR", `${field} must not carry a query or a fragment`, { field });
    return normalServerUrl(url.href);
  } catch (error) {
    if (isOutboundError(error)) {
      const outbound = outboundAppError(error);
      throw outbound.within(`${field}: `, { field });
    }
    throw error;
  }
}

/** The agent's registry record, or null when the registry does not know it. */
export async function localAgent(ctx: FederationContext, agentId: string): Promise<Agent | null> {
  try {
    return await ctx.client.request(registryCommands.get, SERVICE_CALLER, { agent_id: agentId });
  } catch (error) {
    if (error instanceof AppError && error.status === 404) return null;
    throw error;
  }
}
