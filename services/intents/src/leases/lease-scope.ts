import { formatPointer, parsePointer } from "../kernel/json-pointer";

/**
 * A lease scope names the part of an intent an agent owns: `*` is the whole intent, any other
 * scope is a state path ("research" or "/research") owning that subtree. Two scopes overlap, and
 * a state write touches a scope, when either path is a prefix of the other (writing /research
 * overwrites /research/notes).
 *
 * Scopes compare through a key: the escaped pointer with a trailing slash ("/research/"), `*`
 * being "/". Overlap is then "one key starts with the other", which SQL checks with starts_with.
 */
export const WHOLE_INTENT_SCOPE = "*";

export function scopeKey(scopeOrPath: string): string {
  if (scopeOrPath === WHOLE_INTENT_SCOPE) return "/";
  return `${formatPointer(parsePointer(scopeOrPath))}/`;
}

export function keysOverlap(a: string, b: string): boolean {
  return a.startsWith(b) || b.startsWith(a);
}

export type LeaseState = "ACTIVE" | "RELEASED" | "EXPIRED";

/** Spec 2.4: RELEASED when released_at is set, EXPIRED when expires_at has passed, else ACTIVE. */
export function leaseState(lease: { releasedAt: Date | null; expiresAt: Date }, now: Date): LeaseState {
  if (lease.releasedAt) return "RELEASED";
  if (lease.expiresAt.getTime() <= now.getTime()) return "EXPIRED";
  return "ACTIVE";
}
