import { errors, type Caller, type Intent, type IntentStatus, type StatusTransitionBody, intentEvents } from "@intentmesh/contracts";
import { newEvent, type RawJson } from "@intentmesh/bus";
import type { IntentsContext } from "../kernel/context";
import { commitChangeStatement, selectIntent } from "../kernel/statements";
import { missingOrStale } from "../kernel/event-log";
import { assertTransition } from "./status";
import { assertAgentMayWork } from "../costs/budget";
import { cancelByAbandon, suspendByStatus } from "../suspension/handlers";
import { enforceGovernance } from "../governance/handlers";
import { activateInGraph, completeInGraph } from "../graph/handlers";

/**
 * POST /intents/{id}/status: table 3.1, If-Match required, version + 1, status_changed. A plain
 * change is answered as PostgreSQL writes the intent (commitChangeStatement): its callers only
 * send it on.
 */
export async function transitionStatus(ctx: IntentsContext, intentId: string, ifMatch: number | null, body: StatusTransitionBody, caller: Caller): Promise<Intent | RawJson<Intent>> {
  if (ifMatch === null) throw errors.preconditionRequired("intent status");
  const now = ctx.clock.now();
  const current = await selectIntent(ctx.query, intentId);
  if (!current) throw errors.notFound("intent", intentId);
  if (current.version !== ifMatch) throw errors.versionMismatch("intent", intentId, current.version, ifMatch);
  const from = current.status as IntentStatus;
  // Only an operator lifts a block the budget put on the intent.
  if (body.status === "active") assertAgentMayWork(intentId, current, caller, "return it to active");
  await enforceGovernance(ctx, intentId, current.governance_policy ?? null, { kind: "status", to: body.status, reason: body.reason ?? null }, caller);
  // The official clients suspend through this endpoint (CLIENTS.md §1), and abandoning a
  // suspended intent cancels its suspension (spec 3.5): both are suspension moves (suspension.ts).
  if (body.status === "suspended_awaiting_input" && from === "active") return suspendByStatus(ctx, intentId, ifMatch, body.reason ?? null, caller);
  if (body.status === "abandoned" && from === "suspended_awaiting_input") return cancelByAbandon(ctx, intentId, ifMatch, body.reason ?? null, caller);
  assertTransition(from, body.status);
  // RFC-0002: dependencies completed and children closed first (graph/rules.ts), decided with the write.
  if (body.status === "completed") {
    const completed = await completeInGraph(ctx, intentId, ifMatch, from, body.reason ?? null, caller);
    ctx.published();
    return completed;
  }
  // RFC-0002: an intent with dependencies not completed is blocked instead of active.
  if (body.status === "active" && current.depends_on?.length) {
    const activated = await activateInGraph(ctx, intentId, ifMatch, from, body.reason ?? null, caller);
    ctx.published();
    return activated;
  }
  // Conditional on the version read: a concurrent change turns this into a 409.
  const written = await commitChangeStatement(
    ctx.query,
    intentId,
    { version: ifMatch, leaseEpoch: null },
    { status: body.status },
    newEvent(intentEvents.statusChanged, caller.actor, { from, to: body.status, reason: body.reason ?? null, version: ifMatch + 1 }),
    now,
  );
  if (!written) throw await missingOrStale(ctx.db, intentId, ifMatch);
  ctx.published();
  return written;
}
