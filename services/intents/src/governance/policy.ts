import { agentOf, appError, AppError, type Caller, type EffectiveGovernancePolicy, effectivePolicy, type GovernancePolicy, type IntentStatus } from "@intentmesh/contracts";

/** A change the governance policy of its intent may refuse. */
export type GovernedMutation =
  | { kind: "state" | "event" | "lease" | "attachment" | "failure" | "unassignment" }
  /** Writes of other services scoped to the intent (governance.check). */
  | { kind: "memory" | "channel" }
  | { kind: "assignment"; agent_id: string }
  | { kind: "status"; to: IntentStatus; reason: string | null }
  | { kind: "cost"; amount: number };

/** The facts a check may need, read only when the policy asks for them. */
export interface GovernanceFacts {
  assigned?: boolean;
  assignedCount?: number;
  costTotal?: number;
  grantedCompletions?: number;
}

export function violation(rule: string, message: string, compared: Record<string, unknown>): AppError {
  return appError("GOVERNANCE_VIOLATION", message, { rule, ...compared }, { error: "governance_violation", rule });
}

/**
 * The agent a request acts as, for write_scope and allowed_agents: X-Agent-ID, else the
 * principal of an agent key. Operators, coordinators and admins acting as themselves are people,
 * not agents: those two rules do not bind them (the others do).
 */
export const governedAgent = (caller: Caller): string | null => agentOf(caller);

/** Which facts `check` will need for this mutation under this policy. */
export function factsNeeded(policy: EffectiveGovernancePolicy, mutation: GovernedMutation, caller: Caller) {
  return {
    assigned: policy.write_scope === "assigned_only" && governedAgent(caller) !== null,
    costTotal: mutation.kind === "cost" && policy.max_cost !== null,
    approvals: mutation.kind === "status" && mutation.to === "completed" && policy.completion_mode !== "auto",
    assignedCount: mutation.kind === "status" && mutation.to === "completed" && policy.completion_mode === "quorum",
  };
}

/** Approvals a quorum needs: at least quorum_threshold of the assigned agents, and at least one. */
export const quorumRequired = (assigned: number, threshold: number) => Math.max(1, Math.ceil(assigned * threshold - 1e-9));

/**
 * Spec 2.11 against one mutation: throws 403 GOVERNANCE_VIOLATION naming the rule and the values
 * compared, before anything is written.
 */
export function checkGovernance(policy: GovernancePolicy, mutation: GovernedMutation, caller: Caller, facts: GovernanceFacts): void {
  const p = effectivePolicy(policy);
  const agent = governedAgent(caller);
  if (agent !== null && p.allowed_agents && !p.allowed_agents.includes(agent)) {
    throw violation("allowed_agents", `agent ${agent} is not among the allowed_agents of this intent`, { agent_id: agent, allowed_agents: p.allowed_agents });
  }
  if (mutation.kind === "assignment" && p.allowed_agents && !p.allowed_agents.includes(mutation.agent_id)) {
    throw violation("allowed_agents", `agent ${mutation.agent_id} may not be assigned: it is not among the allowed_agents`, { agent_id: mutation.agent_id, allowed_agents: p.allowed_agents });
  }
  if (agent !== null && p.write_scope === "assigned_only" && facts.assigned === false) {
    throw violation("write_scope", `write_scope is assigned_only and agent ${agent} is not assigned to this intent`, { agent_id: agent, write_scope: "assigned_only" });
  }
  if (mutation.kind === "status") {
    if (p.require_status_reason && !mutation.reason?.trim()) {
      throw violation("require_status_reason", "a status change on this intent needs a reason", { require_status_reason: true, reason: mutation.reason ?? null });
    }
    if (mutation.to === "completed" && p.completion_mode === "require_approval" && (facts.grantedCompletions ?? 0) < 1) {
      throw violation("completion_mode", "completion needs a granted approval of action complete", { completion_mode: "require_approval", granted_approvals: facts.grantedCompletions ?? 0, required: 1 });
    }
    if (mutation.to === "completed" && p.completion_mode === "quorum") {
      const required = quorumRequired(facts.assignedCount ?? 0, p.quorum_threshold);
      if ((facts.grantedCompletions ?? 0) < required) {
        throw violation("completion_mode", `completion needs ${required} granted approvals of action complete (quorum ${p.quorum_threshold} of ${facts.assignedCount ?? 0} assigned agents)`, {
          completion_mode: "quorum",
          quorum_threshold: p.quorum_threshold,
          assigned_agents: facts.assignedCount ?? 0,
          granted_approvals: facts.grantedCompletions ?? 0,
          required,
        });
      }
    }
  }
  if (mutation.kind === "cost" && p.max_cost !== null && (facts.costTotal ?? 0) + mutation.amount > p.max_cost) {
    throw violation("max_cost", `this cost would bring the intent's total to ${(facts.costTotal ?? 0) + mutation.amount}, past max_cost ${p.max_cost}`, {
      max_cost: p.max_cost,
      current_total: facts.costTotal ?? 0,
      amount: mutation.amount,
    });
  }
}
