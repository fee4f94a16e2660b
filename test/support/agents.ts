import { IntentmeshError } from "@intentmesh/sdk";
import { expect } from "vitest";
import type { SdkTarget } from "./e2e-helpers";
import { TEST_KEYS } from "./cluster";

type KeyName = keyof typeof TEST_KEYS;
const registered = new WeakMap<SdkTarget, Set<string>>();

/**
 * Registers `agentId` with `key` (once per cluster; an already active registration is fine) and
 * returns the headers that act as that agent: X-API-Key of the key it is bound to, and X-Agent-ID.
 */
export async function agentHeaders(cluster: SdkTarget, agentId: string, key: KeyName = "agent"): Promise<Record<string, string>> {
  let known = registered.get(cluster);
  if (!known) registered.set(cluster, (known = new Set()));
  if (!known.has(`${key}:${agentId}`)) {
    // Through the typed client: a 201 answers, an earlier registration of the same id throws a 409.
    const status = await cluster
      .sdk(key)
      .send("agentsRegister", { body: { agent_id: agentId } })
      .then(
        (res) => res.status,
        (error: unknown) => {
          if (error instanceof IntentmeshError) return error.status;
          throw error;
        },
      );
    expect([201, 409]).toContain(status);
    known.add(`${key}:${agentId}`);
  }
  return { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId };
}

/** Registers several agents with one key. */
export async function registerAgents(cluster: SdkTarget, agentIds: string[], key: KeyName = "agent"): Promise<void> {
  await Promise.all(agentIds.map((id) => agentHeaders(cluster, id, key)));
}
