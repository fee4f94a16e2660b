import { eq, sql } from "drizzle-orm";
import { errors, isoTimestamp, type AccessLevel, type Caller, type PatchNamespaceBody } from "@intentmesh/contracts";
import { entries, namespaces } from "../db/schema";
import type { MemoryContext } from "../context";
import { DEFAULT_NAMESPACE_PERMISSIONS, atLeast, namespaceAccess, type NamespacePermissionObject } from "../domain/access";
import { accessDenied } from "../entry-access";

export interface NamespaceView {
  namespace: string;
  permissions: NamespacePermissionObject;
  /** The caller's own permission: none, read (memory.read), write (memory.write) or admin (memory.admin). */
  access: AccessLevel;
  configured: boolean;
  entry_count: number;
  version: number;
  updated_at: string | null;
}

/** Every namespace known to semantic memory: those with a permission object and those holding entries. */
async function allNamespaces(ctx: MemoryContext): Promise<Map<string, { permissions: NamespacePermissionObject; version: number; updatedAt: Date | null; count: number; configured: boolean }>> {
  const [configured, used] = await Promise.all([
    ctx.db.select().from(namespaces),
    ctx.db
      .select({ namespace: entries.namespace, count: sql<number>`count(*)::int` })
      .from(entries)
      .where(sql`${entries.memoryType} = 'semantic'`)
      .groupBy(entries.namespace),
  ]);
  const all = new Map<string, { permissions: NamespacePermissionObject; version: number; updatedAt: Date | null; count: number; configured: boolean }>();
  for (const n of used) all.set(n.namespace, { permissions: DEFAULT_NAMESPACE_PERMISSIONS, version: 0, updatedAt: null, count: n.count, configured: false });
  for (const n of configured) {
    all.set(n.namespace, { permissions: n.permissions as NamespacePermissionObject, version: n.version, updatedAt: n.updatedAt, count: all.get(n.namespace)?.count ?? 0, configured: true });
  }
  return all;
}

/** The semantic namespaces `caller` may read, sorted by name. */
export async function accessibleNamespaces(ctx: MemoryContext, caller: Caller): Promise<NamespaceView[]> {
  const views: NamespaceView[] = [];
  for (const [namespace, n] of await allNamespaces(ctx)) {
    const access = namespaceAccess(caller, namespace, n.permissions, ctx.guardrails);
    if (!atLeast(access, "read")) continue;
    views.push({ namespace, permissions: n.permissions, access, configured: n.configured, entry_count: n.count, version: n.version, updated_at: n.updatedAt ? isoTimestamp(n.updatedAt) : null });
  }
  return views.sort((a, b) => a.namespace.localeCompare(b.namespace));
}

/** GET /memory/namespaces. */
export async function listNamespaces(ctx: MemoryContext, caller: Caller): Promise<{ namespaces: NamespaceView[] }> {
  return { namespaces: await accessibleNamespaces(ctx, caller) };
}

/** GET /memory/namespaces/{ns}: details and permissions, for a caller with at least memory.read on it. */
export async function getNamespace(ctx: MemoryContext, namespace: string, caller: Caller): Promise<NamespaceView> {
  const [row] = await ctx.db.select().from(namespaces).where(eq(namespaces.namespace, namespace));
  const permissions = (row?.permissions as NamespacePermissionObject | undefined) ?? DEFAULT_NAMESPACE_PERMISSIONS;
  const access = namespaceAccess(caller, namespace, permissions, ctx.guardrails);
  if (!atLeast(access, "read")) throw accessDenied(`read namespace ${namespace} (memory.read is needed)`, { namespace, access });
  const [counted] = await ctx.db
    .select({ count: sql<number>`count(*)::int` })
    .from(entries)
    .where(sql`${entries.memoryType} = 'semantic' and ${entries.namespace} = ${namespace}`);
  return { namespace, permissions, access, configured: Boolean(row), entry_count: counted?.count ?? 0, version: row?.version ?? 0, updated_at: row ? isoTimestamp(row.updatedAt) : null };
}

/** PATCH /memory/namespaces/{ns}: sets the permission object; memory.admin on the namespace only. */
export async function patchNamespace(ctx: MemoryContext, namespace: string, body: PatchNamespaceBody, caller: Caller): Promise<NamespaceView> {
  if (body.namespace !== undefined && body.namespace !== namespace) throw errors.validation(`the body names namespace ${body.namespace}, the path ${namespace}`);
  const current = await ctx.db.select().from(namespaces).where(eq(namespaces.namespace, namespace));
  const permissions = (current[0]?.permissions as NamespacePermissionObject | undefined) ?? DEFAULT_NAMESPACE_PERMISSIONS;
  const access = namespaceAccess(caller, namespace, permissions, ctx.guardrails);
  if (access !== "admin") throw accessDenied(`change the permissions of namespace ${namespace} (memory.admin is needed)`, { namespace, access });
  const now = ctx.clock.now();
  const next = body.permissions as NamespacePermissionObject;
  await ctx.db
    .insert(namespaces)
    .values({ namespace, permissions: next, version: 1, updatedBy: caller.actor, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: namespaces.namespace, set: { permissions: next, version: sql`${namespaces.version} + 1`, updatedBy: caller.actor, updatedAt: now } });
  return getNamespace(ctx, namespace, { ...caller, roles: ["admin"] }).then((view) => ({ ...view, access }));
}
