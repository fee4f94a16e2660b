import { expect } from "vitest";
import type { TestCluster } from "./cluster";
import { TEST_KEYS } from "./cluster";

type KeyName = keyof typeof TEST_KEYS;
const registered = new WeakMap<TestCluster, Set<string>>();

/**
 * Registers `agentId` with `key` (once per cluster; an already active registration is fine) and
 * returns the headers that act as that agent: X-API-Key of the key it is bound to, and X-Agent-ID.
 */
export async function agentHeaders(cluster: TestCluster, agentId: string, key: KeyName = "agent"): Promise<Record<string, string>> {
  let known = registered.get(cluster);
  if (!known) registered.set(cluster, (known = new Set()));
  if (!known.has(`${key}:${agentId}`)) {
    const res = await cluster.api("/agents", { body: { agent_id: agentId }, key });
    expect([201, 409], JSON.stringify(res.body)).toContain(res.status);
    known.add(`${key}:${agentId}`);
  }
  return { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId };
}

/** Registers several agents with one key. */
export async function registerAgents(cluster: TestCluster, agentIds: string[], key: KeyName = "agent"): Promise<void> {
  await Promise.all(agentIds.map((id) => agentHeaders(cluster, id, key)));
}
