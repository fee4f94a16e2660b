import { describe, expect, it } from "vitest";
import { aggregateStatus, fullCounts, suspensionEdge } from "./portfolio-status";

describe("aggregateStatus", () => {
  it("is suspended_awaiting_input when any member is suspended, whatever the others are", () => {
    expect(aggregateStatus({ suspended_awaiting_input: 1 })).toBe("suspended_awaiting_input");
    expect(aggregateStatus({ suspended_awaiting_input: 1, blocked: 3, active: 5, completed: 2, draft: 1, abandoned: 1 })).toBe(
      "suspended_awaiting_input",
    );
  });

  it("is blocked when a member is blocked and none is suspended", () => {
    expect(aggregateStatus({ blocked: 1, active: 4, completed: 1 })).toBe("blocked");
  });

  it("is active when a member is active and none is suspended or blocked", () => {
    expect(aggregateStatus({ active: 1, draft: 2, completed: 3, abandoned: 1 })).toBe("active");
  });

  it("is draft with no members or only drafts", () => {
    expect(aggregateStatus({})).toBe("draft");
    expect(aggregateStatus(fullCounts({}))).toBe("draft");
    expect(aggregateStatus({ draft: 3 })).toBe("draft");
  });

  it("is active when drafts remain beside finished members", () => {
    expect(aggregateStatus({ draft: 1, completed: 1 })).toBe("active");
    expect(aggregateStatus({ draft: 1, abandoned: 2 })).toBe("active");
  });

  it("is completed when every member is finished and at least one completed", () => {
    expect(aggregateStatus({ completed: 3 })).toBe("completed");
    expect(aggregateStatus({ completed: 1, abandoned: 4 })).toBe("completed");
  });

  it("is abandoned when every member was abandoned", () => {
    expect(aggregateStatus({ abandoned: 2 })).toBe("abandoned");
  });

  it("ignores statuses counted zero", () => {
    expect(aggregateStatus({ suspended_awaiting_input: 0, blocked: 0, active: 0, completed: 2 })).toBe("completed");
  });
});

describe("fullCounts", () => {
  it("names every status, zero where no member is in it", () => {
    expect(fullCounts({ active: 2 })).toEqual({ draft: 0, active: 2, blocked: 0, completed: 0, abandoned: 0, suspended_awaiting_input: 0 });
  });
});

describe("suspensionEdge", () => {
  it("is suspended when a member enters suspended_awaiting_input and resumed when it leaves", () => {
    expect(suspensionEdge("active", "suspended_awaiting_input")).toBe("suspended");
    expect(suspensionEdge("suspended_awaiting_input", "active")).toBe("resumed");
    expect(suspensionEdge("suspended_awaiting_input", "abandoned")).toBe("resumed");
  });

  it("is nothing for other moves or no move", () => {
    expect(suspensionEdge("active", "blocked")).toBeNull();
    expect(suspensionEdge("suspended_awaiting_input", "suspended_awaiting_input")).toBeNull();
  });
});
