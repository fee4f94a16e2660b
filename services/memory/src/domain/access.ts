import { actingAgent, isAdmin, isCoordinator, type AccessLevel, type Caller, type MemoryPolicy } from "@intentmesh/contracts";

/**
 * Who may read and write which memory entry (spec 4.8 rules 2-5 and 8), as pure decisions.
 * docs/memory.md lists the matrix; memory-query.ts writes the same rules as SQL for GET /memory.
 */

export type Access = "none" | "read" | "write";

/** The names a caller goes by: the acting agent and the key's principal. */
export const callerNames = (caller: Caller): string[] => [...new Set([actingAgent(caller), caller.principal])];

/** What memory needs of a task (the intents service's record). */
export interface TaskView {
  taskId: string;
  intentId: string;
  parentTaskId: string | null;
  createdBy: string;
  assignedAgent: string | null;
  previousAgents: string[];
  memoryPolicy: MemoryPolicy;
  ended: boolean;
}

/**
 * The coordinator managing a task: a key with the coordinator role that created it, or the agent
 * holding the live coordinator lease of the task's intent (`leaseIntents`: the intents whose lease
 * the caller's acting agent holds, asked of the intents service).
 */
export function coordinatesTask(caller: Caller, task: TaskView, leaseIntents: readonly string[] = []): boolean {
  return (isCoordinator(caller) && callerNames(caller).includes(task.createdBy)) || leaseIntents.includes(task.intentId);
}

export interface WorkingFacts {
  owner: string;
  /** The entry's task, when it has one. */
  task: TaskView | null;
  /** Sub-tasks of the entry's task held by the caller whose memory_policy inherits from the parent. */
  inheritingChildren: TaskView[];
  /** The intents whose live coordinator lease the caller holds (asked only when needed). */
  leaseIntents?: readonly string[];
}

/**
 * Working memory (rules 2, 3; 2.14 inherit_from_parent): the owner reads and writes; an admin,
 * the task's coordinator, the task's current holder when the owner held it before (reassignment),
 * and the holder of an inheriting sub-task read; nobody else.
 */
export function workingAccess(caller: Caller, facts: WorkingFacts): Access {
  const me = actingAgent(caller);
  if (me === facts.owner) return "write";
  if (isAdmin(caller)) return "read";
  const task = facts.task;
  if (!task) return "none";
  if (coordinatesTask(caller, task, facts.leaseIntents)) return "read";
  if (task.assignedAgent === me && task.previousAgents.includes(facts.owner)) return "read";
  if (facts.inheritingChildren.some((child) => child.assignedAgent === me && child.memoryPolicy.inherit_from_parent)) return "read";
  return "none";
}

export interface EpisodicFacts {
  owner: string;
  ownerRoleId: string | null;
  callerRoleId: string | null;
  /** Whether the caller coordinates (created) some task assigned to the owner. */
  coordinatesOwnersTask: boolean;
  /** Whether the caller holds the live coordinator lease of the intent of a task assigned to (or once held by) the owner. */
  holdsLeaseOfOwnersTask?: boolean;
}

/**
 * Episodic memory (rule 4): the owner reads and writes; agents with the owner's role_id
 * (replacements in the same pool) read and write; admins and the coordinators of tasks assigned
 * to the owner (the coordinator key that created one, or the coordinator lease holder of its
 * intent) read; nobody else.
 */
export function episodicAccess(caller: Caller, facts: EpisodicFacts): Access {
  const me = actingAgent(caller);
  if (me === facts.owner) return "write";
  if (facts.ownerRoleId && facts.callerRoleId && facts.ownerRoleId === facts.callerRoleId) return "write";
  if (isAdmin(caller)) return "read";
  if (isCoordinator(caller) && facts.coordinatesOwnersTask) return "read";
  if (facts.holdsLeaseOfOwnersTask) return "read";
  return "none";
}

const RANK: Record<AccessLevel, number> = { none: 0, read: 1, write: 2, admin: 3 };
export const atLeast = (level: AccessLevel, wanted: AccessLevel) => RANK[level] >= RANK[wanted];
const max = (a: AccessLevel, b: AccessLevel): AccessLevel => (RANK[a] >= RANK[b] ? a : b);

export interface NamespacePermissionObject {
  default: AccessLevel;
  allow: { agent: string; access: AccessLevel }[];
}
export const DEFAULT_NAMESPACE_PERMISSIONS: NamespacePermissionObject = { default: "read", allow: [] };

export interface Guardrails {
  max_working_memory_per_task?: number | null;
  max_episodic_memory_per_agent?: number | null;
  allowed_semantic_namespaces?: string[] | null;
  denied_semantic_namespaces?: string[] | null;
  memory_archive_required?: boolean | null;
}

/** A namespace pattern of the guardrails: exact, or a prefix with a trailing `*`. */
export const matchesPattern = (namespace: string, pattern: string) =>
  pattern.endsWith("*") ? namespace.startsWith(pattern.slice(0, -1)) : namespace === pattern;

/** Whether the coordinator guardrails let semantic memory use this namespace at all (admins excepted). */
export function guardrailsAllow(namespace: string, guardrails: Guardrails): boolean {
  if (guardrails.denied_semantic_namespaces?.some((p) => matchesPattern(namespace, p))) return false;
  if (guardrails.allowed_semantic_namespaces && !guardrails.allowed_semantic_namespaces.some((p) => matchesPattern(namespace, p))) return false;
  return true;
}

/**
 * The caller's memory.* permission on a semantic namespace (rule 5, part 5.6): the strongest of
 * its key's role (admin: memory.admin; coordinator: memory.write; operator: memory.read), the
 * namespace's default, and the `allow` entries naming its agent id or principal. The tier rule
 * on top: outside the guardrails' allowed namespaces, or inside denied ones, only admins have access.
 */
export function namespaceAccess(caller: Caller, namespace: string, permissions: NamespacePermissionObject, guardrails: Guardrails): AccessLevel {
  if (isAdmin(caller)) return "admin";
  if (!guardrailsAllow(namespace, guardrails)) return "none";
  let level: AccessLevel = permissions.default;
  if (isCoordinator(caller)) level = max(level, "write");
  if (caller.roles.includes("operator")) level = max(level, "read");
  const names = callerNames(caller);
  for (const grant of permissions.allow) if (names.includes(grant.agent)) level = max(level, grant.access);
  return level;
}
