import { eq } from "drizzle-orm";
import { type AccessLevel, actingAgent, appError, type Caller, isAdmin, type MemoryType } from "@intentmesh/contracts";
import type { Queryable } from "@intentmesh/db";
import { namespaces } from "./db/schema";
import type { MemoryContext } from "./context";
import {
  DEFAULT_NAMESPACE_PERMISSIONS,
  callerNames,
  episodicAccess,
  namespaceAccess,
  workingAccess,
  type Access,
  type NamespacePermissionObject,
  type TaskView,
} from "./domain/access";
import { childrenHeldBy, coordinatesTaskOf, fetchTask, loadTask, ownersTaskInIntents, roleIdOf } from "./task-views";
import { intentsCoordinatedBy } from "./coordinator-leases";

/** The part of an entry access depends on. */
export interface EntryKeyFacts {
  agentId: string;
  memoryType: MemoryType;
  namespace: string;
  taskId: string | null;
}

export async function namespacePermissions(db: Queryable, namespace: string): Promise<NamespacePermissionObject> {
  const [row] = await db.select().from(namespaces).where(eq(namespaces.namespace, namespace));
  return (row?.permissions as NamespacePermissionObject | undefined) ?? DEFAULT_NAMESPACE_PERMISSIONS;
}

export async function semanticLevel(ctx: MemoryContext, caller: Caller, namespace: string): Promise<AccessLevel> {
  return namespaceAccess(caller, namespace, await namespacePermissions(ctx.db, namespace), ctx.guardrails);
}

/**
 * The caller's access to an entry (or an entry about to be written), gathering the facts its
 * tier needs: the task from the intents service, role ids from the registry, the namespace's
 * permission object. A working entry denied on the projection's task record is decided again on
 * the intents service's current record, so a reassignment made a moment ago already counts.
 */
export async function accessTo(ctx: MemoryContext, caller: Caller, entry: EntryKeyFacts): Promise<Access> {
  const me = actingAgent(caller);
  if (entry.memoryType !== "semantic" && me === entry.agentId) return "write";
  if (entry.memoryType === "working") return workingAccessOf(ctx, caller, entry);
  if (entry.memoryType === "episodic") return episodicAccessOf(ctx, caller, entry);
  return semanticAccessOf(ctx, caller, entry);
}

async function workingAccessOf(ctx: MemoryContext, caller: Caller, entry: EntryKeyFacts): Promise<Access> {
  if (isAdmin(caller)) return "read";
  if (!entry.taskId) return "none";
  const decide = async (task: TaskView | null, leaseIntents?: string[]) =>
    workingAccess(caller, { owner: entry.agentId, task, inheritingChildren: await childrenHeldBy(ctx.db, entry.taskId!, actingAgent(caller)), leaseIntents });
  const first = await decide(await loadTask(ctx, entry.taskId));
  if (first !== "none") return first;
  // Denied on what memory knows: the current task record, and the coordinator leases the caller holds now.
  const task = await fetchTask(ctx, entry.taskId);
  return decide(task, task ? await intentsCoordinatedBy(ctx, actingAgent(caller)) : undefined);
}

export async function episodicAccessOf(ctx: MemoryContext, caller: Caller, entry: EntryKeyFacts): Promise<Access> {
  const [ownerRoleId, callerRoleId, coordinatesOwnersTask] = await Promise.all([
    roleIdOf(ctx, entry.agentId),
    roleIdOf(ctx, actingAgent(caller)),
    coordinatesTaskOf(ctx.db, callerNames(caller), entry.agentId),
  ]);
  const facts = { owner: entry.agentId, ownerRoleId, callerRoleId, coordinatesOwnersTask };
  const first = episodicAccess(caller, facts);
  if (first !== "none") return first;
  const leaseIntents = await intentsCoordinatedBy(ctx, actingAgent(caller));
  const holdsLeaseOfOwnersTask = leaseIntents.length > 0 && (await ownersTaskInIntents(ctx.db, entry.agentId, leaseIntents));
  return episodicAccess(caller, { ...facts, holdsLeaseOfOwnersTask });
}

async function semanticAccessOf(ctx: MemoryContext, caller: Caller, entry: EntryKeyFacts): Promise<Access> {
  const level = await semanticLevel(ctx, caller, entry.namespace);
  return level === "admin" || level === "write" ? "write" : level === "read" ? "read" : "none";
}

export const accessDenied = (what: string, details: Record<string, unknown> = {}) =>
  appError("ACCESS_DENIED", `you may not ${what}`, details);

/** Throws 403 ACCESS_DENIED unless the caller has at least `wanted` on the entry. */
export async function assertAccess(ctx: MemoryContext, caller: Caller, entry: EntryKeyFacts & { id?: string }, wanted: "read" | "write"): Promise<Access> {
  const access = await accessTo(ctx, caller, entry);
  if (access === "write" || (access === "read" && wanted === "read")) return access;
  const verb = wanted === "read" ? "read" : "write";
  throw accessDenied(
    `${verb} ${entry.memoryType} memory ${entry.id ? `entry ${entry.id}` : `of agent ${entry.agentId} in namespace ${entry.namespace}`}` +
      (access === "read" ? " (you may only read it)" : ""),
    { entry_id: entry.id ?? null, memory_type: entry.memoryType, access },
  );
}
