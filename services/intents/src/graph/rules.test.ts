import { describe, expect, it } from "vitest";
import { AppError, MAX_DEPENDENCIES } from "@intentmesh/contracts";
import { aggregateStatus, assertDependencyAddable, assertGraphComplete, assertParentOpen, assertSameParent, graphEdges, isBlocked, isReady } from "./rules";

const A = "00000000-0000-4000-8000-00000000000a";
const B = "00000000-0000-4000-8000-00000000000b";
const C = "00000000-0000-4000-8000-00000000000c";

const codeOf = (fn: () => void): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    return (error as AppError).code;
  }
};

describe("intent graph rules (RFC-0002)", () => {
  it("refuses a dependency on itself as a cycle, a dependency held twice, and one past the limit", () => {
    expect(codeOf(() => assertDependencyAddable(A, A, []))).toBe("DEPENDENCY_CYCLE");
    expect(codeOf(() => assertDependencyAddable(A, B, [B]))).toBe("DEPENDENCY_EXISTS");
    expect(codeOf(() => assertDependencyAddable(A, B, Array.from({ length: MAX_DEPENDENCIES }, () => C)))).toBe("DEPENDENCY_LIMIT");
    expect(codeOf(() => assertDependencyAddable(A, B, [C]))).toBeUndefined();
  });

  it("takes the parent from the path; a body naming another parent is refused", () => {
    expect(codeOf(() => assertSameParent(A, undefined))).toBeUndefined();
    expect(codeOf(() => assertSameParent(A, A))).toBeUndefined();
    expect(codeOf(() => assertSameParent(A, B))).toBe("PARENT_MISMATCH");
  });

  it("puts no child under a completed or abandoned parent", () => {
    expect(codeOf(() => assertParentOpen(A, "completed"))).toBe("PARENT_CLOSED");
    expect(codeOf(() => assertParentOpen(A, "abandoned"))).toBe("PARENT_CLOSED");
    for (const open of ["draft", "active", "blocked", "suspended_awaiting_input"]) expect(codeOf(() => assertParentOpen(A, open))).toBeUndefined();
  });

  it("completes an intent only when its dependencies are completed and its children closed, naming what is missing", () => {
    expect(codeOf(() => assertGraphComplete(A, [], []))).toBeUndefined();
    let error: AppError | undefined;
    try {
      assertGraphComplete(A, [B], [C]);
    } catch (e) {
      error = e as AppError;
    }
    expect(error?.code).toBe("GRAPH_INCOMPLETE");
    expect(error?.status).toBe(409);
    expect(error?.details).toEqual({ intent_id: A, incomplete_dependencies: [B], open_children: [C] });
    expect(codeOf(() => assertGraphComplete(A, [B], []))).toBe("GRAPH_INCOMPLETE");
    expect(codeOf(() => assertGraphComplete(A, [], [C]))).toBe("GRAPH_INCOMPLETE");
  });

  it("reads ready and blocked from openness and unmet dependencies", () => {
    expect(isReady({ id: A, status: "active", unmet: false })).toBe(true);
    expect(isReady({ id: A, status: "active", unmet: true })).toBe(false);
    expect(isReady({ id: A, status: "completed", unmet: false })).toBe(false);
    expect(isBlocked({ id: A, status: "draft", unmet: true })).toBe(true);
    expect(isBlocked({ id: A, status: "abandoned", unmet: true })).toBe(false);
  });

  it("aggregates the children's statuses as the RFC shows (a suspended child does not count as complete)", () => {
    const agg = aggregateStatus([
      { id: A, status: "completed", unmet: false },
      { id: B, status: "suspended_awaiting_input", unmet: false },
      { id: C, status: "draft", unmet: true },
    ]);
    expect(agg).toEqual({
      total: 3,
      by_status: { draft: 1, active: 0, blocked: 0, completed: 1, abandoned: 0, suspended_awaiting_input: 1 },
      completion_percentage: 33,
      blocking_intents: [C],
      ready_intents: [B],
    });
    expect(aggregateStatus([]).completion_percentage).toBe(0);
  });

  it("draws parent and dependency edges only between nodes shown", () => {
    const edges = graphEdges([
      { id: A, parent_intent_id: null, depends_on: [] },
      { id: B, parent_intent_id: A, depends_on: [] },
      { id: C, parent_intent_id: A, depends_on: [B, "00000000-0000-4000-8000-0000000000ff"] },
    ]);
    expect(edges).toEqual([
      { from: A, to: B, type: "parent" },
      { from: A, to: C, type: "parent" },
      { from: B, to: C, type: "dependency" },
    ]);
  });
});
