import { appError } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { isoTimestamp, type PutRetryPolicyBody, type RetryPolicy, type RetryStrategy } from "@intentmesh/contracts";
import type { IntentsContext } from "../kernel/context";
import { retryPolicies } from "../db/schema-records";
import { assertIntentExists, lockIntentRow } from "../kernel/event-log";

type RetryPolicyRow = typeof retryPolicies.$inferSelect;

export function toRetryPolicy(row: RetryPolicyRow): RetryPolicy {
  return {
    id: row.id,
    intent_id: row.intentId,
    strategy: row.strategy as RetryStrategy,
    max_retries: row.maxRetries,
    base_delay_ms: row.baseDelayMs,
    max_delay_ms: row.maxDelayMs,
    fallback_agent_id: row.fallbackAgentId,
    failure_threshold: row.failureThreshold,
    created_at: isoTimestamp(row.createdAt),
    updated_at: isoTimestamp(row.updatedAt),
  };
}

/**
 * PUT /intents/{id}/retry-policy: creates the intent's policy or replaces it whole (fields left
 * out take their defaults, not their previous values). The policy keeps its id and created_at
 * across replacements. The intent row is locked first, so a failure being recorded meanwhile
 * sees either the old policy or the new one, never a mix.
 */
export async function putRetryPolicy(ctx: IntentsContext, intentId: string, ifMatch: number | null, body: PutRetryPolicyBody): Promise<RetryPolicy> {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (tx) => {
    await lockIntentRow(tx, intentId, ifMatch);
    const values = {
      strategy: body.strategy,
      maxRetries: body.max_retries,
      baseDelayMs: body.base_delay_ms,
      maxDelayMs: body.max_delay_ms,
      fallbackAgentId: body.fallback_agent_id,
      failureThreshold: body.failure_threshold,
      updatedAt: now,
    };
    const [row] = await tx
      .insert(retryPolicies)
      .values({ id: randomUUID(), intentId, createdAt: now, ...values })
      .onConflictDoUpdate({ target: retryPolicies.intentId, set: values })
      .returning();
    return toRetryPolicy(row!);
  });
}

/** GET /intents/{id}/retry-policy: 404 RETRY_POLICY_NOT_FOUND when the intent has none. */
export async function getRetryPolicy(ctx: IntentsContext, intentId: string): Promise<RetryPolicy> {
  const [row] = await ctx.db.select().from(retryPolicies).where(eq(retryPolicies.intentId, intentId));
  if (row) return toRetryPolicy(row);
  await assertIntentExists(ctx.db, intentId);
  throw appError("RETRY_POLICY_NOT_FOUND", `intent ${intentId} has no retry policy; PUT one first`, { resource: "retry_policy", intent_id: intentId });
}
