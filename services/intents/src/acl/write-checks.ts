import { AppError, errors, type Caller, type GovernedWriteKind, type IntentPermission, type IntentWriteCheck, type WriteAllowed, type WriteVerdicts } from "@intentmesh/contracts";
import type { IntentsContext } from "../kernel/context";
import { assertVerdictsFit, enforceGovernance } from "../governance/handlers";
import { assertPermission } from "./rules";
import { readManyWriteFacts, readWriteFacts, type WriteFacts } from "./statements";

/**
 * acl.check_write: acl.check and governance.check of one write, decided by the same rules on
 * facts read in one statement when the request is served (nothing cached, as each alone).
 */
export async function checkWrite(ctx: IntentsContext, intentId: string, permission: IntentPermission, kind: GovernedWriteKind, caller: Caller): Promise<WriteAllowed> {
  return decide(ctx, intentId, await readWriteFacts(ctx.query, intentId, caller), permission, kind, caller, ctx.clock.now());
}

/** acl.check_write_many: every check read in one statement, each decided as acl.check_write; a refusal is that check's answer. */
export async function checkWriteMany(ctx: IntentsContext, checks: IntentWriteCheck[]): Promise<WriteVerdicts> {
  const facts = await readManyWriteFacts(
    ctx.query,
    checks.map((check) => ({ intentId: check.intent_id, caller: check.caller })),
  );
  const now = ctx.clock.now();
  const results = await Promise.all(
    checks.map(async (check, i) => {
      try {
        return await decide(ctx, check.intent_id, facts[i], check.permission, check.kind, check.caller, now);
      } catch (error) {
        if (error instanceof AppError) return { error: error.toWire() };
        throw error;
      }
    }),
  );
  // Governance refusals carry their policy's details (up to 1,000 allowed_agents), as in governance.check_many.
  assertVerdictsFit(results, results.some((result) => "error" in result || "error" in result.governance));
  return { results };
}

/** Access first (its refusal is the answer); the governance verdict beside it, only for a caller who may write. */
async function decide(ctx: IntentsContext, intentId: string, facts: WriteFacts | undefined, permission: IntentPermission, kind: GovernedWriteKind, caller: Caller, now: Date): Promise<WriteAllowed> {
  if (!facts) throw errors.notFound("intent", intentId);
  const held = assertPermission(intentId, facts.head, facts.entries, caller, permission, now);
  try {
    // The policy is the one just read with the ACL: enforceGovernance reads more only for a rule that needs facts (write_scope).
    await enforceGovernance(ctx, intentId, facts.governancePolicy, { kind }, caller);
    return { allowed: true, permission: held, governance: { allowed: true } };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { allowed: true, permission: held, governance: { error: error.toWire() } };
  }
}
