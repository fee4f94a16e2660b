import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { delegationScope, effectivePermissions, isWithin, narrowDelegation, narrowThroughChain, permits, type DelegationScope } from "./delegation";

const operation = fc.constantFrom("intent.read", "intent.update_state", "intent.complete", "task.create", "cost.record", "memory.read", "memory.write");

const scopeArb: fc.Arbitrary<DelegationScope> = fc
  .tuple(fc.array(operation, { maxLength: 7 }), fc.array(operation, { maxLength: 3 }), fc.integer({ min: 0, max: 5 }))
  .map(([permissions, denied, depth]) => delegationScope(permissions, denied, depth));

describe("narrowDelegation, by example", () => {
  const parent = delegationScope(["intent.read", "intent.update_state", "task.create"], ["cost.record"], 2);

  it("intersects permissions, unions denials and spends one level of depth", () => {
    const result = narrowDelegation(parent, delegationScope(["intent.read", "task.create", "memory.write"], ["task.create"], 5));
    expect(result).toEqual({
      ok: true,
      scope: { permissions: ["intent.read", "task.create"], denied_operations: ["cost.record", "task.create"], max_delegation_depth: 1 },
    });
    if (result.ok) {
      expect(permits(result.scope, "intent.read")).toBe(true);
      expect(permits(result.scope, "task.create")).toBe(false);
      expect(effectivePermissions(result.scope)).toEqual(["intent.read"]);
    }
  });

  it("never gives more depth than was asked for", () => {
    const result = narrowDelegation(parent, delegationScope(["intent.read"], [], 0));
    expect(result.ok && result.scope.max_delegation_depth).toBe(0);
  });

  it("refuses when the parent may not delegate further", () => {
    expect(narrowDelegation(delegationScope(["intent.read"], [], 0), delegationScope(["intent.read"], [], 3))).toMatchObject({
      ok: false,
      code: "DELEGATION_DEPTH_EXHAUSTED",
    });
  });

  it("stops a chain when depth runs out", () => {
    const root = delegationScope(["intent.read"], [], 2);
    const hop = delegationScope(["intent.read"], [], 9);
    expect(narrowThroughChain(root, [hop, hop]).ok).toBe(true);
    expect(narrowThroughChain(root, [hop, hop, hop])).toMatchObject({ ok: false, code: "DELEGATION_DEPTH_EXHAUSTED" });
  });
});

describe("narrowDelegation, by property", () => {
  it("never widens: the result lies within the parent and within the request", () => {
    fc.assert(fc.property(scopeArb, scopeArb, (parent, requested) => {
      const result = narrowDelegation(parent, requested);
      if (!result.ok) {
        expect(parent.max_delegation_depth).toBe(0);
        return;
      }
      expect(isWithin(result.scope, parent)).toBe(true);
      expect(isWithin(result.scope, requested)).toBe(true);
      expect(result.scope.max_delegation_depth).toBeLessThan(parent.max_delegation_depth);
      for (const op of effectivePermissions(result.scope)) {
        expect(permits(parent, op) && permits(requested, op)).toBe(true);
      }
    }));
  });

  it("is monotone through chains: every hop is within the one before, and a denial is never lifted", () => {
    fc.assert(fc.property(scopeArb, fc.array(scopeArb, { maxLength: 6 }), (root, hops) => {
      let previous = root;
      for (const hop of hops) {
        const result = narrowDelegation(previous, hop);
        if (!result.ok) break;
        expect(isWithin(result.scope, previous)).toBe(true);
        for (const denied of root.denied_operations) expect(permits(result.scope, denied)).toBe(false);
        previous = result.scope;
      }
    }));
  });

  it("ends any chain after at most the root's depth in hops", () => {
    fc.assert(fc.property(scopeArb, fc.array(scopeArb, { minLength: 6, maxLength: 8 }), (root, hops) => {
      expect(narrowThroughChain(root, hops.slice(0, root.max_delegation_depth + 1)).ok).toBe(false);
    }));
  });

  it("narrowing by the parent itself keeps the permissions and denials", () => {
    fc.assert(fc.property(scopeArb, (scope) => {
      const result = narrowDelegation(scope, scope);
      if (!result.ok) return;
      expect(result.scope.permissions).toEqual(scope.permissions);
      expect(result.scope.denied_operations).toEqual(scope.denied_operations);
    }));
  });
});
