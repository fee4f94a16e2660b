import { and, inArray, ne, sql } from "drizzle-orm";
import { errors, type Caller } from "@intentmesh/contracts";
import { Sweeper } from "@intentmesh/service";
import { isAdmin, type VaultContext } from "../context";
import { credentials } from "../db/schema";
import { KeyUnavailableError } from "../crypto/envelope";

/**
 * Key-encryption key rotation without downtime (docs/vaults.md): add the new key to VAULT_KEK as
 * primary and keep the old one; new material is wrapped under the new key at once, old rows
 * still open with theirs; the re-wrap moves every row's data key under the primary (the material
 * itself is not re-encrypted); when none remains under the old key, remove it from configuration.
 * Rows are claimed with FOR UPDATE SKIP LOCKED, so replicas and the command never collide.
 */
export async function rewrapBatch(ctx: VaultContext, limit: number): Promise<{ rewrapped: number; remaining: number; primary_key_id: string }> {
  const primary = ctx.keys.primaryId;
  const rewrapped = await ctx.db.transaction(async (tx) => {
    const rows = await tx
      .select({ id: credentials.id, kekId: credentials.kekId, wrappedKey: credentials.wrappedKey, material: credentials.material })
      .from(credentials)
      .where(and(ne(credentials.kekId, primary), inArray(credentials.kekId, ctx.keys.ids)))
      .limit(limit)
      .for("update", { skipLocked: true });
    for (const row of rows) {
      const next = ctx.keys.rewrap(row.id, row);
      await tx.update(credentials).set(next).where(sql`${credentials.id} = ${row.id}`);
    }
    return rows.length;
  });
  const [left] = await ctx.db.select({ n: sql<number>`count(*)::int` }).from(credentials).where(ne(credentials.kekId, primary));
  const remaining = Number(left?.n ?? 0);
  if (rewrapped) ctx.logger.info({ rewrapped, remaining, primary_key_id: primary }, "credential data keys re-wrapped under the primary key-encryption key");
  return { rewrapped, remaining, primary_key_id: primary };
}

/** POST /vault/keys/rewrap: the command form, admins only; `limit` rows per call. */
export async function rewrapCommand(ctx: VaultContext, limit: number | undefined, caller: Caller) {
  if (!isAdmin(caller)) throw errors.forbidden("only admins re-wrap credential keys", { roles: caller.roles });
  return rewrapBatch(ctx, limit ?? 1000);
}

/** The job form: every tick, a batch, until nothing is left under an older key. */
export class RewrapSweeper extends Sweeper {
  constructor(
    private readonly ctx: VaultContext,
    intervalMs: number,
  ) {
    super(intervalMs, ctx.logger, "vault key re-wrap");
  }

  async sweep(): Promise<number> {
    try {
      return (await rewrapBatch(this.ctx, 200)).rewrapped;
    } catch (error) {
      if (error instanceof KeyUnavailableError) this.ctx.logger.warn({ kek_id: error.kekId }, "a credential is sealed under a key-encryption key that is not configured");
      throw error;
    }
  }
}
