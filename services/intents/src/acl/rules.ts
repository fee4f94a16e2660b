import { appError, type AccessPolicy, type Caller, type IntentPermission, type PrincipalType } from "@intentmesh/contracts";

/**
 * The access decision of RFC-0011 (docs/access-control.md), as pure functions of values: the one
 * place that says what permission a caller holds on an intent. Every check of the intents
 * service, and every check other services ask of it (acl.check_many), ends here.
 */

/** Cumulative levels: each includes the ones below it. */
const RANK: Record<IntentPermission, number> = { read: 1, write: 2, admin: 3 };

export const atLeast = (held: IntentPermission | null, needed: IntentPermission): boolean => held !== null && RANK[held] >= RANK[needed];
export const higher = (a: IntentPermission | null, b: IntentPermission | null): IntentPermission | null => (a === null ? b : b === null ? a : RANK[a] >= RANK[b] ? a : b);

/** The ACL as the intent's row holds it; policy null: the intent has no ACL. */
export interface AclHead {
  policy: AccessPolicy | null;
  defaultPermission: IntentPermission | null;
  owner: string | null;
}

/** An entry's facts that matter to a decision. */
export interface EntryFacts {
  principalType: PrincipalType;
  principalId: string;
  permission: IntentPermission;
  expiresAt: Date | null;
}

/**
 * Whether an entry names the caller: `user` the key's principal (the gateway authenticated it),
 * `agent` the acting agent (X-Agent-ID bound by the gateway, else the principal), `group` one of
 * the key's roles.
 */
export function entryNamesCaller(entry: Pick<EntryFacts, "principalType" | "principalId">, caller: Caller): boolean {
  switch (entry.principalType) {
    case "user":
      return entry.principalId === caller.principal;
    case "agent":
      return entry.principalId === caller.actor;
    case "group":
      return (caller.roles as readonly string[]).includes(entry.principalId);
  }
}

/** An entry grants nothing from its expires_at on, whether or not the sweeper has removed it. */
export const entryIsLive = (entry: Pick<EntryFacts, "expiresAt">, now: Date): boolean => entry.expiresAt === null || entry.expiresAt.getTime() > now.getTime();

/**
 * Admin keys are the deployment's operators: the ACL does not bind them (otherwise an intent whose
 * last admin entry expired would have nobody to fix it). Every change they make is still an event
 * with them as actor.
 */
export const bypassesAcl = (caller: Caller): boolean => caller.roles.includes("admin");

/**
 * The highest permission the caller holds on the intent; null for none.
 * - no ACL: admin (everything, as before RFC-0011; backward compatible);
 * - an admin key: admin;
 * - the ACL's owner (the principal that created it): admin;
 * - else the highest of its live entries, and under an open policy at least the default permission.
 */
export function permissionOf(head: AclHead, entries: readonly EntryFacts[], caller: Caller, now: Date): IntentPermission | null {
  if (head.policy === null || bypassesAcl(caller)) return "admin";
  if (head.owner !== null && head.owner === caller.principal) return "admin";
  let held: IntentPermission | null = head.policy === "open" ? (head.defaultPermission ?? "read") : null;
  for (const entry of entries) if (entryNamesCaller(entry, caller) && entryIsLive(entry, now)) held = higher(held, entry.permission);
  return held;
}

/** 403 INTENT_ACCESS_DENIED unless the caller holds `needed`; answers what it holds. */
export function assertPermission(intentId: string, head: AclHead, entries: readonly EntryFacts[], caller: Caller, needed: IntentPermission, now: Date): IntentPermission {
  const held = permissionOf(head, entries, caller, now);
  if (atLeast(held, needed)) return held!;
  throw appError(
    "INTENT_ACCESS_DENIED",
    held === null
      ? `${caller.actor} has no access to intent ${intentId}; ask for it with POST /intents/${intentId}/access-requests`
      : `${caller.actor} holds ${held} on intent ${intentId}, and this needs ${needed}`,
    { intent_id: intentId, needed, held },
  );
}

/**
 * An access request is asked by the principal it names (RFC-0011: "an agent requested access"):
 * a request in someone else's name would let its approval be mistaken for theirs.
 */
export function assertRequestsForItself(caller: Caller, principalType: PrincipalType, principalId: string): void {
  if (entryNamesCaller({ principalType, principalId }, caller)) return;
  throw appError("FORBIDDEN", `an access request is sent by the principal it names; ${caller.actor} may not ask for ${principalType} ${principalId}`, {
    principal_type: principalType,
    principal_id: principalId,
  });
}

/** An expiry in the past would grant nothing: refused rather than stored. */
export function assertExpiryAhead(expiresAt: Date | null, now: Date): void {
  if (expiresAt !== null && expiresAt.getTime() <= now.getTime()) {
    throw appError("VALIDATION_FAILED", `expires_at ${expiresAt.toISOString()} is not in the future`, { expires_at: expiresAt.toISOString() });
  }
}
