import { describe, expect, it } from "vitest";
import { CreateIntentBody, EventType, IntentStatus, StatePatchBody } from "./intents";

describe("StatePatchBody", () => {
  const patch = { op: "set", path: "/a", value: 1 };

  it("accepts a bare array of patches", () => {
    const parsed = StatePatchBody.safeParse([patch, { op: "remove", path: "/b" }]);
    expect(parsed.success).toBe(true);
    expect(parsed.data).toEqual([patch, { op: "remove", path: "/b" }]);
  });

  it("accepts {patches: [...]} and yields the same list", () => {
    const parsed = StatePatchBody.safeParse({ patches: [patch, { op: "append", path: "l", value: "x" }] });
    expect(parsed.success).toBe(true);
    expect(parsed.data).toEqual([patch, { op: "append", path: "l", value: "x" }]);
  });

  it("rejects an empty list in either form", () => {
    expect(StatePatchBody.safeParse([]).success).toBe(false);
    expect(StatePatchBody.safeParse({ patches: [] }).success).toBe(false);
  });

  it.each(["add", "replace", "move", "SET", ""])("rejects the unknown op %j", (op) => {
    expect(StatePatchBody.safeParse([{ op, path: "/a", value: 1 }]).success).toBe(false);
    expect(StatePatchBody.safeParse({ patches: [{ op, path: "/a", value: 1 }] }).success).toBe(false);
  });

  it("rejects a patch without a path, and unknown fields", () => {
    expect(StatePatchBody.safeParse([{ op: "set", value: 1 }]).success).toBe(false);
    expect(StatePatchBody.safeParse([{ op: "set", path: "/a", value: 1, from: "/b" }]).success).toBe(false);
    expect(StatePatchBody.safeParse({ patches: [patch], extra: true }).success).toBe(false);
  });

  it("rejects a single patch object that is not in a list", () => {
    expect(StatePatchBody.safeParse(patch).success).toBe(false);
  });
});

describe("CreateIntentBody", () => {
  it("requires a title", () => {
    expect(CreateIntentBody.safeParse({}).success).toBe(false);
  });

  it.each(["", "   ", "\t\n"])("rejects the empty title %j", (title) => {
    expect(CreateIntentBody.safeParse({ title }).success).toBe(false);
  });

  it("defaults status to draft (table 3.1), and constraints, state and confidence", () => {
    const parsed = CreateIntentBody.parse({ title: "Plan" });
    expect(parsed.status).toBe("draft");
    expect(parsed.constraints).toEqual({});
    expect(parsed.state).toEqual({});
    expect(parsed.confidence).toBe(0);
    expect(parsed.title).toBe("Plan");
  });

  it("accepts draft as the initial status but not a later one", () => {
    expect(CreateIntentBody.parse({ title: "t", status: "draft" }).status).toBe("draft");
    expect(CreateIntentBody.safeParse({ title: "t", status: "completed" }).success).toBe(false);
  });

  it("accepts confidence 0 to 100 and rejects outside", () => {
    expect(CreateIntentBody.parse({ title: "t", confidence: 100 }).confidence).toBe(100);
    expect(CreateIntentBody.parse({ title: "t", confidence: 0 }).confidence).toBe(0);
    expect(CreateIntentBody.safeParse({ title: "t", confidence: 100.5 }).success).toBe(false);
    expect(CreateIntentBody.safeParse({ title: "t", confidence: 101 }).success).toBe(false);
    expect(CreateIntentBody.safeParse({ title: "t", confidence: -1 }).success).toBe(false);
  });

  it("requires constraints to be an object, not a list (spec 2.1)", () => {
    expect(CreateIntentBody.safeParse({ title: "t", constraints: [] }).success).toBe(false);
    expect(CreateIntentBody.parse({ title: "t", constraints: { budget: { max_total_cents: 5 } } }).constraints).toEqual({
      budget: { max_total_cents: 5 },
    });
  });

  it("rejects unknown fields", () => {
    expect(CreateIntentBody.safeParse({ title: "t", bogus: 1 }).success).toBe(false);
  });
});

describe("IntentStatus", () => {
  it("holds the six statuses of spec 2.1", () => {
    expect([...IntentStatus.options].sort()).toEqual(
      ["abandoned", "active", "blocked", "completed", "draft", "suspended_awaiting_input"].sort(),
    );
  });
});

describe("EventType", () => {
  it.each(["budget_alert", "intent.suspended", "engagement.decision", "note", "a-b.c_d.9"])("accepts %j", (type) => {
    expect(EventType.safeParse(type).success).toBe(true);
  });

  it.each(["a..b", "a b", "a.*", ">", "", ".a", "a.", "a.>", "a/b", "ä"])("rejects %j", (type) => {
    expect(EventType.safeParse(type).success).toBe(false);
  });

  it("rejects more than 100 characters", () => {
    expect(EventType.safeParse("a".repeat(100)).success).toBe(true);
    expect(EventType.safeParse("a".repeat(101)).success).toBe(false);
  });
});
