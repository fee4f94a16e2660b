import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { COMPLETION_MODES, composeGovernance, isAtLeastAsStrict, WRITE_SCOPES, type GovernancePolicy } from "./governance";

const agentIds = fc.constantFrom("a1", "a2", "a3", "a4", "a5");

const policyArb: fc.Arbitrary<GovernancePolicy> = fc.record(
  {
    completion_mode: fc.constantFrom(...COMPLETION_MODES),
    write_scope: fc.constantFrom(...WRITE_SCOPES),
    max_cost: fc.double({ min: 0, max: 1e6, noNaN: true }),
    quorum_threshold: fc.oneof(fc.integer({ min: 1, max: 10 }), fc.double({ min: 0, max: 1, noNaN: true })),
    allowed_agents: fc.array(agentIds, { maxLength: 5 }),
    require_status_reason: fc.boolean(),
  },
  { requiredKeys: [] },
);

describe("composeGovernance, by example", () => {
  it("takes the minimum of max_cost, the maximum of quorum_threshold and the OR of require_status_reason", () => {
    expect(
      composeGovernance([
        { max_cost: 100, quorum_threshold: 2, require_status_reason: false },
        { max_cost: 40, quorum_threshold: 3 },
        { require_status_reason: true },
      ]),
    ).toEqual({ max_cost: 40, quorum_threshold: 3, require_status_reason: true });
  });

  it("orders completion modes auto < quorum < require_approval", () => {
    expect(composeGovernance([{ completion_mode: "auto" }, { completion_mode: "quorum" }])).toEqual({ completion_mode: "quorum" });
    expect(composeGovernance([{ completion_mode: "require_approval" }, { completion_mode: "quorum" }])).toEqual({ completion_mode: "require_approval" });
  });

  it("prefers assigned_only to any", () => {
    expect(composeGovernance([{ write_scope: "any" }, { write_scope: "assigned_only" }])).toEqual({ write_scope: "assigned_only" });
  });

  it("intersects allowed agents, an absent list being unrestricted", () => {
    expect(composeGovernance([{ allowed_agents: ["b", "a", "c"] }, {}, { allowed_agents: ["c", "a", "d"] }])).toEqual({ allowed_agents: ["a", "c"] });
    expect(composeGovernance([{ allowed_agents: ["a"] }, { allowed_agents: ["b"] }])).toEqual({ allowed_agents: [] });
  });

  it("keeps a zero ceiling (zero is a limit, not an absence)", () => {
    expect(composeGovernance([{ max_cost: 0 }, { max_cost: 10 }])).toEqual({ max_cost: 0 });
  });

  it("is no governance for no policies", () => {
    expect(composeGovernance([])).toEqual({});
  });
});

describe("composeGovernance, by property", () => {
  it("is commutative", () => {
    fc.assert(fc.property(policyArb, policyArb, (a, b) => {
      expect(composeGovernance([a, b])).toEqual(composeGovernance([b, a]));
    }));
  });

  it("is associative", () => {
    fc.assert(fc.property(policyArb, policyArb, policyArb, (a, b, c) => {
      const left = composeGovernance([composeGovernance([a, b]), c]);
      const right = composeGovernance([a, composeGovernance([b, c])]);
      expect(left).toEqual(right);
      expect(composeGovernance([a, b, c])).toEqual(left);
    }));
  });

  it("is idempotent", () => {
    fc.assert(fc.property(policyArb, (a) => {
      const once = composeGovernance([a]);
      expect(composeGovernance([a, a])).toEqual(once);
      expect(composeGovernance([once, a])).toEqual(once);
    }));
  });

  it("has the empty policy as identity", () => {
    fc.assert(fc.property(policyArb, (a) => {
      expect(composeGovernance([a, {}])).toEqual(composeGovernance([a]));
    }));
  });

  it("is never less strict than any input", () => {
    fc.assert(fc.property(fc.array(policyArb, { minLength: 1, maxLength: 6 }), (policies) => {
      const composed = composeGovernance(policies);
      for (const policy of policies) expect(isAtLeastAsStrict(composed, policy)).toBe(true);
    }));
  });

  it("is the loosest such policy: anything at least as strict as every input is at least as strict as the composition", () => {
    fc.assert(fc.property(policyArb, policyArb, policyArb, (a, b, candidate) => {
      if (isAtLeastAsStrict(candidate, a) && isAtLeastAsStrict(candidate, b)) {
        expect(isAtLeastAsStrict(candidate, composeGovernance([a, b]))).toBe(true);
      }
    }));
  });
});

describe("isAtLeastAsStrict", () => {
  it("sees a looser field", () => {
    expect(isAtLeastAsStrict({ max_cost: 50 }, { max_cost: 40 })).toBe(false);
    expect(isAtLeastAsStrict({}, { require_status_reason: true })).toBe(false);
    expect(isAtLeastAsStrict({ allowed_agents: ["a", "b"] }, { allowed_agents: ["a"] })).toBe(false);
    expect(isAtLeastAsStrict({ completion_mode: "quorum" }, { completion_mode: "require_approval" })).toBe(false);
    expect(isAtLeastAsStrict({ quorum_threshold: 2 }, { quorum_threshold: 3 })).toBe(false);
    expect(isAtLeastAsStrict({ write_scope: "any" }, { write_scope: "assigned_only" })).toBe(false);
  });
});
