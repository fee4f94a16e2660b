import { intersect, isSubset, toNameSet, type NameSet } from "./sorted-set";

/**
 * Governance across servers (SPEC 2.11, 4.11): when an intent crosses servers, every server's
 * policy applies at once, so the effective policy is the strictest of them, field by field.
 * An absent field places no constraint, and an empty list of policies is "no governance".
 */

export const COMPLETION_MODES = ["auto", "quorum", "require_approval"] as const;
export type CompletionMode = (typeof COMPLETION_MODES)[number];

export const WRITE_SCOPES = ["any", "assigned_only"] as const;
export type WriteScope = (typeof WRITE_SCOPES)[number];

export interface GovernancePolicy {
  readonly completion_mode?: CompletionMode;
  readonly write_scope?: WriteScope;
  /** Spending ceiling; finite and non-negative (validated where it enters). */
  readonly max_cost?: number;
  /** Votes (or the share of votes) needed under quorum; finite and non-negative. */
  readonly quorum_threshold?: number;
  /** Agents that may act; absent means any agent, an empty list means none. */
  readonly allowed_agents?: readonly string[];
  readonly require_status_reason?: boolean;
}

/**
 * Strictness of completion modes, loosest first. `auto` completes on its own. `quorum` waits
 * for enough votes but then completes without anyone in particular. `require_approval` waits for
 * an explicit approval through an approval gate (SPEC 3.6), which no count of votes replaces, so
 * it is the strictest. The quorum threshold is kept in the composed policy even when the mode
 * becomes require_approval, so a service may enforce both.
 */
const COMPLETION_RANK: Readonly<Record<CompletionMode, number>> = { auto: 0, quorum: 1, require_approval: 2 };

/** `assigned_only` admits a subset of the writers `any` admits. */
const WRITE_SCOPE_RANK: Readonly<Record<WriteScope, number>> = { any: 0, assigned_only: 1 };

function stricterOf<T extends string>(rank: Readonly<Record<T, number>>, a: T | undefined, b: T | undefined): T | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return rank[a] >= rank[b] ? a : b;
}

function defined<T>(a: T | undefined, b: T | undefined, pick: (x: T, y: T) => T): T | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return pick(a, b);
}

/** Drops absent fields and puts allowed_agents in set form, so equal policies are equal values. */
function normalise(policy: GovernancePolicy): GovernancePolicy {
  const out: { -readonly [K in keyof GovernancePolicy]: GovernancePolicy[K] } = {};
  if (policy.completion_mode !== undefined) out.completion_mode = policy.completion_mode;
  if (policy.write_scope !== undefined) out.write_scope = policy.write_scope;
  if (policy.max_cost !== undefined) out.max_cost = policy.max_cost;
  if (policy.quorum_threshold !== undefined) out.quorum_threshold = policy.quorum_threshold;
  if (policy.allowed_agents !== undefined) out.allowed_agents = toNameSet(policy.allowed_agents);
  if (policy.require_status_reason !== undefined) out.require_status_reason = policy.require_status_reason;
  return out;
}

function composePair(a: GovernancePolicy, b: GovernancePolicy): GovernancePolicy {
  return normalise({
    completion_mode: stricterOf(COMPLETION_RANK, a.completion_mode, b.completion_mode),
    write_scope: stricterOf(WRITE_SCOPE_RANK, a.write_scope, b.write_scope),
    // A lower ceiling allows less spending.
    max_cost: defined(a.max_cost, b.max_cost, Math.min),
    // A higher threshold needs more votes.
    quorum_threshold: defined(a.quorum_threshold, b.quorum_threshold, Math.max),
    // An agent may act only if every server allows it.
    allowed_agents: defined<NameSet>(a.allowed_agents, b.allowed_agents, intersect),
    // Any server asking for a reason is enough.
    require_status_reason: defined(a.require_status_reason, b.require_status_reason, (x, y) => x || y),
  });
}

/**
 * The strictest policy of several servers: commutative, associative and idempotent, never
 * looser than any input. `composeGovernance([])` is the empty policy (no governance).
 */
export function composeGovernance(policies: readonly GovernancePolicy[]): GovernancePolicy {
  return policies.reduce<GovernancePolicy>((acc, policy) => composePair(acc, policy), {});
}

/** True when `candidate` forbids at least everything `reference` forbids. */
export function isAtLeastAsStrict(candidate: GovernancePolicy, reference: GovernancePolicy): boolean {
  const c = candidate;
  const r = reference;
  if (r.completion_mode !== undefined && (c.completion_mode === undefined || COMPLETION_RANK[c.completion_mode] < COMPLETION_RANK[r.completion_mode])) return false;
  if (r.write_scope !== undefined && (c.write_scope === undefined || WRITE_SCOPE_RANK[c.write_scope] < WRITE_SCOPE_RANK[r.write_scope])) return false;
  if (r.max_cost !== undefined && (c.max_cost === undefined || c.max_cost > r.max_cost)) return false;
  if (r.quorum_threshold !== undefined && (c.quorum_threshold === undefined || c.quorum_threshold < r.quorum_threshold)) return false;
  if (r.allowed_agents !== undefined && (c.allowed_agents === undefined || !isSubset(c.allowed_agents, r.allowed_agents))) return false;
  if (r.require_status_reason === true && c.require_status_reason !== true) return false;
  return true;
}
