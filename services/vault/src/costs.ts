import { and, eq, lt } from "drizzle-orm";
import { costsCommands, isAppError, type Caller } from "@intentmesh/contracts";
import { Sweeper } from "@intentmesh/service";
import type { VaultContext } from "./context";
import { invocations } from "./db/schema";
import type { InvocationRow } from "./mapping";

/**
 * RFC-0014 §7.1: a tool's cost goes into the intent's cost ledger (spec 2.6), through the intents
 * service's costs command: cost_type api_call, unit cents, provider the service, metadata naming
 * the invocation. The invocation row says where the cost stands (cost_state): `pending` until the
 * intents service has it, then `recorded`, or `failed` when it refused it for good (no such
 * intent, a governance rule); a pending cost whose request could not be made (intents down) is
 * retried by CostRetrySweeper. docs/vaults.md explains the one case that can count a cost twice.
 */

/** The vault speaks for the agent that invoked: the intents service records the cost as that agent's. */
const costCaller = (agentId: string): Caller => ({ principal: "service:vault", roles: ["admin"], actor: agentId, agent_id: agentId });

export async function recordInvocationCost(ctx: VaultContext, row: InvocationRow): Promise<InvocationRow> {
  const cents = row.reported ? centsOfReportedCost(row.cost) : typeof row.cost?.amount_cents === "number" ? row.cost.amount_cents : null;
  if (cents === null || !row.intentId) return row;
  let state: "recorded" | "failed" | "pending";
  try {
    await ctx.client.request(costsCommands.record, costCaller(row.agentId), {
      intent_id: row.intentId,
      body: {
        agent_id: row.agentId,
        cost_type: "api_call",
        amount: cents,
        unit: "cents",
        provider: row.service,
        metadata: { category: "external_tool", invocation_id: row.id, grant_id: row.grantId, tool: row.tool },
      },
    });
    state = "recorded";
  } catch (error) {
    const permanent = isAppError(error) && error.status < 500;
    state = permanent ? "failed" : "pending";
    ctx.logger.warn({ invocation_id: row.id, intent_id: row.intentId, code: isAppError(error) ? error.code : undefined }, permanent ? "the intents service refused a tool's cost" : "a tool's cost could not be recorded yet; it is retried");
  }
  const [updated] = await ctx.db
    .update(invocations)
    .set({ costState: state })
    .where(and(eq(invocations.id, row.id), eq(invocations.costState, "pending")))
    .returning();
  return updated ?? row;
}

/** Retries pending costs older than `graceMs` (a crash or an intents outage between the invocation and its cost). */
export class CostRetrySweeper extends Sweeper {
  constructor(
    private readonly ctx: VaultContext,
    intervalMs: number,
    private readonly graceMs = 30_000,
  ) {
    super(intervalMs, ctx.logger, "vault cost retry");
  }

  async sweep(): Promise<number> {
    const before = new Date(this.ctx.clock.now().getTime() - this.graceMs);
    // Claimed one at a time under SKIP LOCKED, so replicas never send the same cost together.
    let done = 0;
    for (let i = 0; i < 100; i++) {
      const claimed = await this.ctx.db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(invocations)
          .where(and(eq(invocations.costState, "pending"), lt(invocations.createdAt, before)))
          .limit(1)
          .for("update", { skipLocked: true });
        if (!row) return null;
        const sent = await recordInvocationCost({ ...this.ctx, db: tx as unknown as VaultContext["db"] }, row);
        return sent;
      });
      if (!claimed) break;
      done += 1;
      if (claimed.costState === "pending") break; // intents still unreachable: next tick
    }
    return done;
  }
}

/** A reported cost in cents: `amount_cents`, or `estimated_cost_usd` (RFC §3.3) times 100. */
export function centsOfReportedCost(cost: Record<string, unknown> | null): number | null {
  if (!cost) return null;
  if (typeof cost.amount_cents === "number" && cost.amount_cents >= 0) return cost.amount_cents;
  if (typeof cost.estimated_cost_usd === "number" && cost.estimated_cost_usd >= 0) return Math.round(cost.estimated_cost_usd * 100 * 1e6) / 1e6;
  return null;
}

