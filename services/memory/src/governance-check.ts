import type { Caller } from "@intentmesh/contracts";
import type { MemoryContext } from "./context";

/**
 * Spec 2.11 binds "every mutation of the intent", memory writes scoped to it included. The
 * policy lives in the intent's own row (docs/governance.md), so the intents service answers: 403
 * GOVERNANCE_VIOLATION when allowed_agents or write_scope refuse the acting agent. Asked before
 * the write, outside its transaction; a policy whose PUT has answered is in the row by then.
 */
export async function assertGovernanceAllows(ctx: MemoryContext, caller: Caller, intentId: string | null): Promise<void> {
  if (!intentId) return;
  await ctx.governance.assertAllowed(caller, intentId, "memory");
}
