import type { Intent } from "@intentmesh/contracts";
import type { Intentmesh } from "../client";
import { isApiError } from "../errors";
import { sleep } from "../client";
import type { BodyOf } from "../types";

export interface ConflictRetryOptions {
  /** Attempts in all (default 5). */
  attempts?: number;
  /** First wait after a conflict (default 20 ms), doubled each time, with jitter. */
  baseDelayMs?: number;
  signal?: AbortSignal;
}

/**
 * Read, change, write; again on a version conflict. `attempt` reads the current version and
 * writes with If-Match; a 409 VERSION_MISMATCH (someone wrote in between, nothing of ours was
 * applied) runs it again, up to `attempts` times, then the last conflict is thrown.
 *
 * Only a definite conflict is retried. When the answer to a write was lost (OUTCOME_UNKNOWN) the
 * change may already be in: it is thrown, never re-applied, so a non-idempotent change (append
 * to a list, add to a counter) is never applied twice.
 */
export async function retryOnConflict<T>(attempt: (attemptNumber: number) => Promise<T>, options: ConflictRetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 5;
  const base = options.baseDelayMs ?? 20;
  for (let n = 1; ; n += 1) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!isApiError(error, "VERSION_MISMATCH") || n >= attempts) throw error;
      const delay = base * 2 ** (n - 1);
      await sleep(delay / 2 + Math.random() * (delay / 2), options.signal);
    }
  }
}

export type StatePatches = Extract<NonNullable<BodyOf<"intentsPatchState">>, readonly unknown[]>;

/**
 * Patches an intent's state from its current value: `change` gets the intent and answers the
 * patches (null or [] for nothing to do). On a version conflict the intent is read again and
 * `change` asked again (see retryOnConflict).
 */
export async function updateIntentState(
  client: Intentmesh,
  intentId: string,
  change: (intent: Intent) => StatePatches | null | undefined | Promise<StatePatches | null | undefined>,
  options: ConflictRetryOptions & { agentId?: string } = {},
): Promise<Intent> {
  const call = { agentId: options.agentId, signal: options.signal };
  return retryOnConflict(async () => {
    const intent = await client.ops.intentsGet({ intent_id: intentId }, call);
    const patches = await change(intent);
    if (!patches?.length) return intent;
    return client.ops.intentsPatchState({ intent_id: intentId, ifMatch: intent.version, body: patches }, call);
  }, options);
}
