import { and, eq, ne, sql } from "drizzle-orm";
import { agentEvents, vaultEvents } from "@intentmesh/contracts";
import { eventOn, subscribe, type Bus } from "@intentmesh/bus";
import { rowsOf, withParams, type Tx } from "@intentmesh/db";
import type { VaultContext } from "./context";
import { agentStatuses, grants, inbox } from "./db/schema";
import { vaultEvent, writeVaultEvents } from "./events";

/**
 * Spec 4.9 heartbeat rule 6: grants are tied to agent_id and persist across re-registration; for
 * a deregistered agent they stay dormant. The vault projects the registry's agent.lifecycle
 * events (never its tables): the last status of each agent. A grant whose agent is deregistered
 * refuses every use (GRANT_DORMANT) and reads `suspended` with dormant true; the agent's next
 * registration (new_status active) wakes it, untouched. grant.dormant / grant.awake announce it.
 * Idempotent: the inbox row commits with the effects. Events apply in stream order (the
 * registry's commit order); the record version is not an order, a re-registration resets it.
 */
export async function startAgentProjection(bus: Bus, ctx: VaultContext) {
  return subscribe(bus, eventOn(agentEvents.lifecycle, "agent"), {
    db: ctx.db,
    inbox,
    logger: ctx.logger,
    afterCommit: () => ctx.published(),
    durable: "vault-agent-lifecycle",
    handle: async (tx, event) => applyLifecycle(ctx, tx, event.agent_id, event.payload.new_status, event.payload.version),
  });
}

/**
 * The projection's read and upsert of the agent's status as SQL text made once: every
 * agent.lifecycle event, each registration among them, ran them through the query builder,
 * which cost more CPU to build than to run (docs/benchmarks.md, register_agent).
 */
const LOCK_STATUS = `select s.status from vault.agent_statuses s where s.agent_id = $1 for update`;
const UPSERT_STATUS = `insert into vault.agent_statuses as s (agent_id, status, version, updated_at) values ($1, $2, $3, $4)
  on conflict (agent_id) do update set status = excluded.status, version = excluded.version, updated_at = excluded.updated_at`;

export async function applyLifecycle(ctx: VaultContext, tx: Tx, agentId: string, status: string, version: number): Promise<void> {
  const now = ctx.clock.now();
  const [previous] = rowsOf<{ status: string }>(await tx.execute(withParams(LOCK_STATUS, [agentId])));
  await tx.execute(withParams(UPSERT_STATUS, [agentId, status, version, agentStatuses.updatedAt.mapToDriverValue(now)]));
  const wasDormant = previous?.status === "deregistered";
  const isDormant = status === "deregistered";
  if (wasDormant === isDormant) return;
  const affected = await tx
    .select({ id: grants.id })
    .from(grants)
    .where(and(eq(grants.agentId, agentId), ne(grants.status, "revoked"), sql`(${grants.expiresAt} is null or ${grants.expiresAt} > ${now.toISOString()}::timestamptz)`))
    .limit(1000);
  await writeVaultEvents(
    tx,
    affected.map((grant) =>
      vaultEvent(isDormant ? vaultEvents.grantDormant : vaultEvents.grantAwake, {
        key: grant.id,
        actor: "system:vault",
        agentId,
        payload: { grant_id: grant.id, agent_id: agentId, reason: isDormant ? "agent_deregistered" : "agent_registered" },
      }),
    ),
    now,
  );
}
