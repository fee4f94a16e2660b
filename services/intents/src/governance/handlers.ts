import { sql } from "drizzle-orm";
import {
  AppError,
  appError,
  effectivePolicy,
  errors,
  governanceCommands,
  governanceEvents,
  type Caller,
  type GovernancePolicy,
  type GovernanceVerdicts,
  type GovernedWriteKind,
  type Intent,
} from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import { rowsOf, type Queryable } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { INTENT_COLUMNS, rawToIntent, type RawIntent } from "../kernel/statements";
import { appendToLog, missingOrStale, rememberLogHead } from "../kernel/event-log";
import { checkGovernance, factsNeeded, type GovernanceFacts, type GovernedMutation } from "./policy";


/**
 * PUT / DELETE /intents/{id}/governance: the policy in the intent's own row, If-Match required
 * (428, 409), version + 1, governance.policy_set {governance_policy, version} or
 * governance.policy_removed {version}, one transaction. Operators, coordinators and admins only (the routes' roles).
 */
async function writePolicy(ctx: IntentsContext, intentId: string, ifMatch: number | null, policy: GovernancePolicy | null, caller: Caller): Promise<Intent> {
  if (ifMatch === null) throw errors.preconditionRequired("intent governance policy");
  const now = ctx.clock.now();
  const intent = await ctx.db.transaction(async (tx) => {
    const [current] = rowsOf<{ version: number; event_seq: string | number; chain_seq: string | number; chain_head: string | null }>(
      await tx.execute(sql`select version, event_seq, chain_seq, chain_head from intents.intents where id = ${intentId} for no key update`),
    );
    if (!current) throw errors.notFound("intent", intentId);
    if (current.version !== ifMatch) throw await missingOrStale(tx, intentId, ifMatch);
    rememberLogHead(tx, intentId, { eventSeq: current.event_seq, chainSeq: current.chain_seq, chainHead: current.chain_head });
    const version = ifMatch + 1;
    const [row] = rowsOf<RawIntent>(
      await tx.execute(sql`
        update intents.intents set governance_policy = ${policy === null ? null : JSON.stringify(policy)}::jsonb, version = ${version}, updated_at = ${now}
        where id = ${intentId} returning ${sql.raw(INTENT_COLUMNS)}`),
    );
    const event =
      policy === null
        ? newEvent(governanceEvents.policyRemoved, caller.actor, { version })
        : newEvent(governanceEvents.policySet, caller.actor, { governance_policy: policy, version });
    await appendToLog(tx, intentId, [event], now);
    return rawToIntent(row!);
  });
  ctx.published();
  return intent;
}

/**
 * PUT answers one body for two readers (docs/governance.md): the intent at its new version with
 * `governance_policy` (the official Python client reads an Intent) and the policy's 2.11 fields,
 * effective values, at the top level (spec 4.6 answers the policy).
 */
export const setGovernancePolicy = async (ctx: IntentsContext, intentId: string, ifMatch: number | null, policy: GovernancePolicy, caller: Caller) => {
  const intent = await writePolicy(ctx, intentId, ifMatch, policy, caller);
  return { ...intent, governance_policy: policy, ...effectivePolicy(policy) };
};
export const removeGovernancePolicy = (ctx: IntentsContext, intentId: string, ifMatch: number | null, caller: Caller) => writePolicy(ctx, intentId, ifMatch, null, caller);

/** GET /intents/{id}/governance: the stored policy (null when none) and the effective one, defaults filled in. */
export async function getGovernancePolicy(ctx: IntentsContext, intentId: string) {
  const policy = await readPolicy(ctx, intentId);
  if (policy === undefined) throw errors.notFound("intent", intentId);
  return { intent_id: intentId, governance_policy: policy, effective_policy: effectivePolicy(policy) };
}

/** The stored policy: null when none, undefined when the intent does not exist. */
async function readPolicy(ctx: IntentsContext, intentId: string): Promise<GovernancePolicy | null | undefined> {
  const rows = await ctx.query<{ governance_policy: GovernancePolicy | null }>("intents_governance_policy", "select governance_policy from intents.intents where id = $1", [intentId]);
  return rows[0] ? rows[0].governance_policy : undefined;
}

/**
 * Enforcement (spec 2.11, 4.6) before a mutation writes anything. `policy` is what the handler
 * already read with the intent row (state, status), or undefined to read it here. With no policy
 * this costs nothing more; the facts a rule needs are read only when the policy has that rule.
 * Approvals are asked of the governance service only when a completion needs them: they only
 * ever go from pending to decided, so a grant that answered is seen.
 */
export async function enforceGovernance(
  ctx: IntentsContext,
  intentId: string,
  policy: GovernancePolicy | null | undefined,
  mutation: GovernedMutation,
  caller: Caller,
  /** The caller's open transaction, when it holds one: the facts are read on it, never on a second pooled connection. */
  db: Queryable = ctx.db,
): Promise<void> {
  const stored = policy === undefined ? await readPolicy(ctx, intentId) : policy;
  if (!stored) return;
  const needed = factsNeeded(effectivePolicy(stored), mutation, caller);
  const facts: GovernanceFacts = {};
  if (needed.assigned || needed.assignedCount) {
    const agent = caller.agent_id ?? caller.actor;
    const [row] = rowsOf<{ assigned: boolean; n: number }>(
      await db.execute(sql`
        select exists(select 1 from intents.assignments where intent_id = ${intentId} and agent_id = ${agent}) as assigned,
               (select count(*)::int from intents.assignments where intent_id = ${intentId}) as n`),
    );
    facts.assigned = row!.assigned;
    facts.assignedCount = Number(row!.n);
  }
  if (needed.costTotal) {
    const [row] = rowsOf<{ amount: string | number | null }>(await db.execute(sql`select amount from intents.cost_totals where intent_id = ${intentId}`));
    facts.costTotal = row?.amount === undefined || row.amount === null ? 0 : Number(row.amount);
  }
  if (needed.approvals) {
    if (!ctx.client) throw errors.unavailable("the governance service is needed to check approvals");
    const reply = await ctx.client.request(governanceCommands.grantedApprovals, caller, { intent_id: intentId, action: "complete" });
    facts.grantedCompletions = reply.granted;
  }
  checkGovernance(stored, mutation, caller, facts);
}

/** governance.check: another service's write scoped to the intent, against the intent's policy. */
export async function checkGovernanceFor(ctx: IntentsContext, intentId: string, kind: GovernedWriteKind, caller: Caller): Promise<{ allowed: true }> {
  await enforceGovernance(ctx, intentId, undefined, { kind }, caller);
  return { allowed: true };
}

/**
 * governance.check_many: the same for many writes at once, their policies read in one statement.
 * A refusal is that check's answer; a failure to read (the database down) fails the request whole.
 */
export async function checkGovernanceMany(
  ctx: IntentsContext,
  checks: Array<{ intent_id: string; kind: GovernedWriteKind; caller: Caller }>,
): Promise<GovernanceVerdicts> {
  const ids = [...new Set(checks.map((check) => check.intent_id))];
  const rows = await ctx.query<{ id: string; governance_policy: GovernancePolicy | null }>(
    "intents_governance_policies",
    "select id, governance_policy from intents.intents where id = any($1::uuid[])",
    [ids],
  );
  const policies = new Map(rows.map((row) => [row.id, row.governance_policy]));
  const results = await Promise.all(
    checks.map(async ({ intent_id, kind, caller }) => {
      try {
        // An intent that does not exist has no policy to enforce (as the single check).
        await enforceGovernance(ctx, intent_id, policies.get(intent_id) ?? null, { kind }, caller);
        return { allowed: true as const };
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        return { error: error.toWire() };
      }
    }),
  );
  assertVerdictsFit(results, results.some((result) => "error" in result));
  return { results };
}

/**
 * A refusal carries its policy's details (up to 1,000 allowed_agents): many in one answer could
 * pass what the bus carries. Said plainly, the asker sends those checks one by one instead.
 * `refused`: whether any verdict is a refusal (answers of allowances alone are always small).
 */
export function assertVerdictsFit(results: readonly unknown[], refused: boolean): void {
  if (!refused) return;
  const bytes = Buffer.byteLength(JSON.stringify(results));
  if (bytes > CHECK_MANY_REPLY_BUDGET) {
    throw appError("REPLY_TOO_LARGE", `the verdicts of these ${results.length} checks take ${bytes} bytes, more than one answer carries; ask them one by one`, {
      bytes,
      limit_bytes: CHECK_MANY_REPLY_BUDGET,
    });
  }
}

/** The most bytes of verdicts one governance.check_many answer carries: well under NATS's default 1 MiB max_payload. */
export const CHECK_MANY_REPLY_BUDGET = 512 * 1024;
