import { describe, expect, it } from "vitest";
import { AppError } from "@intentmesh/contracts";
import { evaluate, namedTasks, parseExpression, truthy, type ExpressionScope } from "./expression";

const scope: ExpressionScope = {
  tasks: {
    audit: { id: "a1", title: "audit", status: "completed", output: { issues_found: 3, tags: ["pii", "sla"], summary: "two issues in billing" } },
    clean: { id: "c1", title: "clean", status: "skipped", output: null },
  },
  intent: { status: "active", state: { region: "eu", approved: true, count: 0 } },
  plan: { metadata: { tier: "gold" } },
};
const run = (source: string) => evaluate(parseExpression(source), scope);
const refusal = (source: string): AppError => {
  try {
    parseExpression(source);
  } catch (err) {
    return err as AppError;
  }
  throw new Error(`${source} parsed`);
};

describe("plan condition expressions (RFC 0012 2.4, docs/plans.md)", () => {
  it("evaluates the RFC's example and comparisons over task outputs, the intent and the plan", () => {
    expect(run("tasks['audit_task'].output.issues_found > 0")).toBe(false);
    expect(run("tasks['audit'].output.issues_found > 0")).toBe(true);
    expect(run('tasks["audit"].output.issues_found >= 3 and intent.state.region == "eu"')).toBe(true);
    expect(run("tasks.audit.status == 'completed' && tasks.clean.status == 'skipped'")).toBe(true);
    expect(run("not intent.state.approved or plan.metadata.tier != 'gold'")).toBe(false);
    expect(run("!(intent.state.count > 0)")).toBe(true);
    expect(run("'pii' in tasks.audit.output.tags")).toBe(true);
    expect(run("'billing' in tasks.audit.output.summary")).toBe(true);
    expect(run("'region' in intent.state")).toBe(true);
    expect(run("tasks.audit.output.tags[0] == 'pii' and tasks.audit.output.tags[-1] == 'sla'")).toBe(true);
    expect(run("intent.state.approved == True and tasks.clean.output == None")).toBe(true);
    expect(run("-1 < intent.state.count")).toBe(true);
    expect(run("true")).toBe(true);
  });

  it("never throws on data it does not expect: a missing path is null, mixed comparisons are false", () => {
    expect(run("tasks.nope.output.x > 1")).toBe(false);
    expect(run("tasks.nope.output.x == null")).toBe(true);
    expect(run("intent.state.region > 3")).toBe(false);
    expect(run("'x' in intent.state.count")).toBe(false);
    expect(run("intent.state.constructor == null")).toBe(true);
    expect(run("tasks.__proto__ == null")).toBe(true);
  });

  it("truthiness is Python's", () => {
    for (const falsy of [null, undefined, false, 0, "", [], {}]) expect(truthy(falsy)).toBe(false);
    for (const value of [true, 1, "x", [0], { a: 1 }]) expect(truthy(value)).toBe(true);
  });

  it("names the tasks it reads (by id or title), which decide when it is evaluated", () => {
    expect(namedTasks(parseExpression("tasks['audit'].output.n > 0 and tasks.clean.status == 'done' or tasks['audit'].status == 'x'"))).toEqual(["audit", "clean"]);
    expect(namedTasks(parseExpression("intent.state.go"))).toEqual([]);
  });

  it("refuses anything outside the subset with 400 VALIDATION_FAILED: no calls, no other names, no arithmetic", () => {
    for (const bad of [
      "",
      "process.exit(1)",
      "require('fs')",
      "tasks['a'].output.n + 1 > 2",
      "constructor.constructor('x')()",
      "tasks['a'",
      "'unclosed",
      "a == 1",
      "tasks.a == 1 1",
      "tasks[x]",
      "`t`",
      "(".repeat(100) + "true" + ")".repeat(100),
    ]) {
      const err = refusal(bad);
      expect(err).toBeInstanceOf(AppError);
      expect(err.code).toBe("VALIDATION_FAILED");
    }
  });
});
