import { expect } from "vitest";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { OperationRequest } from "../../../test/support/typed-api";
import { uniqueTag } from "../../../test/support/e2e-helpers";
import type { ChannelsService } from "../src/service";

export type ChannelsHarness = ServiceHarness<{ channels: ChannelsService; stop(): Promise<void> }>;

/**
 * The channels service with what every channel request asks beside it: intents (the intent's ACL)
 * and the registry (X-Agent-ID bindings, role addressing); sweeps only when a test calls them.
 */
export const startChannelsHarness = (): Promise<ChannelsHarness> =>
  startServiceHarness(
    manifestServices({
      intents: QUIET.intents,
      registry: QUIET.registry,
      channels: QUIET.channels,
    }),
  );

export interface Agent {
  id: string;
  /** What a request acting as this agent carries: the agent key and X-Agent-ID. */
  as: Pick<OperationRequest, "key" | "headers">;
}

/** Registers an agent (with a role, when given) on the agent key. */
export async function registerAgent(harness: ChannelsHarness, prefix: string, role: string | null = null): Promise<Agent> {
  const id = uniqueTag(prefix);
  expect((await harness.api("agentsRegister", { key: "agent", body: { agent_id: id, ...(role ? { role_id: role } : {}) } })).status).toBe(201);
  return { id, as: { key: "agent", headers: { "X-Agent-ID": id } } };
}
