import { intersect, isSubset, toNameSet, union, type NameSet } from "./sorted-set";

/**
 * Delegation scope (SPEC 4.11, 5.7): what a server lets the next server do on its behalf.
 * A scope only ever narrows as it travels: each hop keeps the permissions both sides name,
 * keeps every denial either side names, and spends one level of depth.
 *
 * - `permissions`: operation names granted (e.g. "intent.read", "intent.update_state",
 *   "task.create"). Exact names; no wildcards, so intersection needs no pattern algebra.
 * - `denied_operations`: operation names refused whatever `permissions` says. A denial is kept
 *   at every later hop, so an operation denied once stays denied down the chain.
 * - `max_delegation_depth`: how many further hops may re-delegate. 0 means the holder may act
 *   within the scope but may not pass it on.
 */
export interface DelegationScope {
  readonly permissions: NameSet;
  readonly denied_operations: NameSet;
  readonly max_delegation_depth: number;
}

export type NarrowingResult =
  | { readonly ok: true; readonly scope: DelegationScope }
  | { readonly ok: false; readonly code: "DELEGATION_DEPTH_EXHAUSTED"; readonly message: string };

export function delegationScope(permissions: Iterable<string>, denied: Iterable<string> = [], maxDepth = 0): DelegationScope {
  return { permissions: toNameSet(permissions), denied_operations: toNameSet(denied), max_delegation_depth: maxDepth };
}

/**
 * The scope the next hop receives when `parent` is delegated with the scope `requested`.
 * Refused when the parent may not delegate any more (depth 0). Depth: the receiver gets one
 * level less than its parent had, and never more than it asked for.
 */
export function narrowDelegation(parent: DelegationScope, requested: DelegationScope): NarrowingResult {
  if (!Number.isInteger(parent.max_delegation_depth) || parent.max_delegation_depth <= 0) {
    return { ok: false, code: "DELEGATION_DEPTH_EXHAUSTED", message: "the delegation scope may not be delegated further (depth 0)" };
  }
  return {
    ok: true,
    scope: {
      permissions: intersect(parent.permissions, requested.permissions),
      denied_operations: union(parent.denied_operations, requested.denied_operations),
      max_delegation_depth: Math.max(0, Math.min(parent.max_delegation_depth - 1, Math.trunc(requested.max_delegation_depth))),
    },
  };
}

/** Narrows through a chain of hops; stops at the first refusal. */
export function narrowThroughChain(root: DelegationScope, hops: readonly DelegationScope[]): NarrowingResult {
  let current: NarrowingResult = { ok: true, scope: root };
  for (const hop of hops) {
    if (!current.ok) return current;
    current = narrowDelegation(current.scope, hop);
  }
  return current;
}

/** Whether the holder of `scope` may perform `operation`: granted and not denied. */
export function permits(scope: DelegationScope, operation: string): boolean {
  return scope.permissions.includes(operation) && !scope.denied_operations.includes(operation);
}

/** The operations the holder may actually perform. */
export function effectivePermissions(scope: DelegationScope): NameSet {
  const denied = new Set(scope.denied_operations);
  return scope.permissions.filter((p) => !denied.has(p));
}

/** True when `inner` allows nothing `outer` does not: the meaning of "narrower or equal". */
export function isWithin(inner: DelegationScope, outer: DelegationScope): boolean {
  return (
    isSubset(inner.permissions, outer.permissions) &&
    isSubset(outer.denied_operations, inner.denied_operations) &&
    inner.max_delegation_depth <= outer.max_delegation_depth
  );
}
