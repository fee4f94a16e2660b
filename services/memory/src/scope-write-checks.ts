import { AppError, type Caller } from "@intentmesh/contracts";
import type { WriteVerdict } from "@intentmesh/service";
import type { MemoryContext } from "./context";
import type { TaskView } from "./domain/access";
import { loadTask } from "./task-views";

type Scope = { task_id?: string | null; intent_id?: string | null } | null | undefined;

/** The verdicts of the write checks of a request, applied by its handler where its rules put them. */
export interface IntentWriteVerdicts {
  /** Throws 404 INTENT_NOT_FOUND where the write check found no such intent (the answer of intents.get). */
  assertIntentExists(intentId: string): void;
  /** Throws the governance refusal of the write on the intent (spec 2.11), as governance.check would have answered it. */
  assertGovernance(intentId: string | null): Promise<void>;
}

/** What a create's scope answered when checked: its task, and the verdict of each intent it touches. */
export interface ScopeWriteChecks extends IntentWriteVerdicts {
  /** The scope's task as read for the check (null: no such task; undefined: the scope names none), so the create reads it once. */
  task: TaskView | null | undefined;
}

/**
 * The ACL (write, RFC-0011) and the governance policy (spec 2.11) of every intent a create's
 * scope touches (the intent it names, its task's intent), asked of the intents service in one
 * request per intent (IntentWriteChecks, acl.check_write) instead of three (acl.check,
 * intents.get, governance.check), and nothing cached. Rejects with an access refusal, as the ACL
 * wrapper (IntentAccessChecks.wrap) did before the handler ran; an intent that does not exist
 * protects nothing here, and its 404 and the governance verdict are applied by the create where
 * it applied them (prepareCreate), so every refusal keeps its order and code.
 */
export async function checkScopeWrites(ctx: MemoryContext, caller: Caller, scope: Scope): Promise<ScopeWriteChecks> {
  const task = scope?.task_id ? await loadTask(ctx, scope.task_id) : undefined;
  // The ACL checks only read principal, actor and roles, which the create's acting agent (creatingCaller) leaves as they are.
  return { task, ...(await checkIntentWrites(ctx, caller, [scope?.intent_id, task?.intentId])) };
}

/**
 * The write checks of the intents a request writes on (null: none), one request per intent:
 * rejects with the first access refusal; an intent that does not exist protects nothing (as the
 * ACL wrapper), and answers its 404 where the handler asks for its existence or its governance.
 */
export async function checkIntentWrites(ctx: MemoryContext, caller: Caller, intents: (string | null | undefined)[]): Promise<IntentWriteVerdicts> {
  const intentIds = [...new Set(intents.filter((id): id is string => Boolean(id)))];
  const verdicts = new Map<string, WriteVerdict | AppError>();
  await Promise.all(
    intentIds.map(async (intentId) => {
      try {
        verdicts.set(intentId, await ctx.writes.check(caller, intentId, "write", "memory"));
      } catch (error) {
        if (!(error instanceof AppError && error.code === "INTENT_NOT_FOUND")) throw error;
        verdicts.set(intentId, error);
      }
    }),
  );
  return {
    assertIntentExists(intentId) {
      const verdict = verdicts.get(intentId);
      if (verdict instanceof AppError) throw verdict;
    },
    async assertGovernance(intentId) {
      if (!intentId) return;
      const verdict = verdicts.get(intentId);
      if (verdict instanceof AppError) throw verdict;
      if (verdict) verdict.assertGovernance();
      // Not checked above (cannot happen: the write's intent is one it checked): asked alone.
      else await ctx.governance.assertAllowed(caller, intentId, "memory");
    },
  };
}
