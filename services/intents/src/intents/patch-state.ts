import { errors, intentsCommands, type Caller, type Intent, type StatePatch, intentEvents } from "@intentmesh/contracts";
import { newEvent, type RawJson } from "@intentmesh/bus";
import { assertStateWithinLimit } from "../kernel/state-size";
import type { IntentsContext } from "../kernel/context";
import { commitChangeStatement, selectIntentForWrite } from "../kernel/statements";
import { applyStatePatches } from "./state-patch";
import { assertIoTypes } from "../workflows/rules";
import { assertLeasesAllowWrite } from "../leases/rules";
import { assertAgentMayWork } from "../costs/budget";
import { adoptSuspension } from "../suspension/handlers";
import { enforceGovernance } from "../governance/handlers";

/** How often a write re-checks when only the leases changed under it (its version still holds). */
const LEASE_RACE_ATTEMPTS = 5;

/**
 * POST /intents/{id}/state. Requires If-Match. The patches apply to the state read at that
 * version, after the leases read with it allow the write; the write is one statement
 * conditional on that version (a concurrent writer makes this one a 409, never an overwrite)
 * and on the lease epoch (a lease granted meanwhile sends the write back to be checked again).
 * All patches apply or none does. The written intent is answered as PostgreSQL writes it
 * (commitChangeStatement): its callers only send it on.
 */
export async function patchState(ctx: IntentsContext, intentId: string, ifMatch: number | null, patches: StatePatch[], caller: Caller): Promise<Intent | RawJson<Intent>> {
  if (ifMatch === null) throw errors.preconditionRequired("intent state");
  // The official clients' suspension record arrives as one `set _suspension` patch (CLIENTS.md §1).
  const only = patches.length === 1 ? patches[0]! : undefined;
  if (only?.op === "set" && (only.path === "_suspension" || only.path === "/_suspension")) {
    await ctx.access.check(intentsCommands.patchState, intentId, caller);
    await enforceGovernance(ctx, intentId, undefined, { kind: "state" }, caller);
    return adoptSuspension(ctx, intentId, ifMatch, only.value, caller);
  }
  for (let attempt = 1; ; attempt++) {
    const now = ctx.clock.now();
    const read = await selectIntentForWrite(ctx.query, intentId, caller.actor);
    if (!read) throw errors.notFound("intent", intentId);
    const { intent, leases } = read;
    await ctx.access.afterRead(intentsCommands.patchState, intentId, intent.acl_policy, caller);
    assertAgentMayWork(intentId, intent, caller, "write its state");
    if (intent.version !== ifMatch) throw errors.versionMismatch("intent", intentId, intent.version, ifMatch);
    // The policy was read with the row at this version: a policy change bumps the version, so the
    // conditional write below cannot commit under a policy older than the one checked.
    if (intent.governance_policy) await enforceGovernance(ctx, intentId, intent.governance_policy, { kind: "state" }, caller);
    assertLeasesAllowWrite(leases, intent.status, caller.actor, patches.map((p) => p.path), now);
    const state = applyStatePatches(intent.state, patches);
    // state._io_types holds named workflow types (spec 2.1, RFC 0024): checked when a write changes it.
    if (JSON.stringify(state._io_types) !== JSON.stringify(intent.state._io_types)) assertIoTypes(state);
    assertStateWithinLimit(intentId, state);
    const written = await commitChangeStatement(
      ctx.query,
      intentId,
      { version: ifMatch, leaseEpoch: intent.lease_epoch },
      { state },
      newEvent(intentEvents.statePatched, caller.actor, { patches, version: ifMatch + 1 }),
      now,
    );
    if (written) {
      ctx.published();
      return written;
    }
    if (attempt >= LEASE_RACE_ATTEMPTS) throw errors.unavailable(`intent ${intentId} is too busy to write; try again`);
  }
}
