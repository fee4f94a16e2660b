import { describe, expect, it } from "vitest";
import type { Caller } from "@intentmesh/contracts";
import { episodicAccess, namespaceAccess, workingAccess, type TaskView } from "./access";
import { evictionOrder, workingCapacityViolation, workingLimits } from "./capacity";
import { addIsoDuration, expiryOf } from "./lifetime";
import { splitSnapshot } from "./archive";

const agent = (id: string): Caller => ({ principal: `key-of-${id}`, roles: ["agent"], actor: id, agent_id: id });
const coordinator: Caller = { principal: "coord", roles: ["coordinator"], actor: "coord", agent_id: null };
const admin: Caller = { principal: "root", roles: ["admin"], actor: "root", agent_id: null };
const task = (over: Partial<TaskView> = {}): TaskView => ({
  taskId: "t",
  intentId: "i",
  parentTaskId: null,
  createdBy: "coord",
  assignedAgent: "a",
  previousAgents: [],
  memoryPolicy: { archive_on_completion: true, inherit_from_parent: false },
  ended: false,
  ...over,
});

describe("working memory access (rules 2, 3)", () => {
  const facts = (t: TaskView | null, children: TaskView[] = []) => ({ owner: "a", task: t, inheritingChildren: children });
  it.each([
    ["owner", agent("a"), facts(task()), "write"],
    ["stranger", agent("x"), facts(task()), "none"],
    ["coordinator that created the task", coordinator, facts(task()), "read"],
    ["coordinator of another task", coordinator, facts(task({ createdBy: "other" })), "none"],
    ["admin", admin, facts(task()), "read"],
    ["new holder after reassignment", agent("b"), facts(task({ assignedAgent: "b", previousAgents: ["a"] })), "read"],
    ["holder whose predecessor was someone else", agent("b"), facts(task({ assignedAgent: "b", previousAgents: ["z"] })), "none"],
    ["holder of an inheriting sub-task", agent("c"), facts(task(), [task({ taskId: "c", assignedAgent: "c", memoryPolicy: { archive_on_completion: true, inherit_from_parent: true } })]), "read"],
    ["holder of a non-inheriting sub-task", agent("c"), facts(task(), [task({ taskId: "c", assignedAgent: "c" })]), "none"],
    ["anyone but the owner without a task", agent("x"), facts(null), "none"],
  ] as const)("%s: %s", (_name, caller, f, expected) => {
    expect(workingAccess(caller, f)).toBe(expected);
  });
});

describe("episodic memory access (rule 4)", () => {
  const f = (over = {}) => ({ owner: "a", ownerRoleId: "r", callerRoleId: null, coordinatesOwnersTask: false, ...over });
  it.each([
    ["owner", agent("a"), f(), "write"],
    ["same role_id (replacement)", agent("b"), f({ callerRoleId: "r" }), "write"],
    ["other role_id", agent("b"), f({ callerRoleId: "q" }), "none"],
    ["coordinator of a task assigned to the owner", coordinator, f({ coordinatesOwnersTask: true }), "read"],
    ["coordinator of no such task", coordinator, f(), "none"],
    ["admin", admin, f(), "read"],
    ["stranger", agent("x"), f(), "none"],
  ] as const)("%s", (_name, caller, facts, expected) => {
    expect(episodicAccess(caller, facts)).toBe(expected);
  });
});

describe("semantic namespace permissions (rule 5)", () => {
  const open = { default: "read" as const, allow: [] };
  it("derives memory.* from key roles, default and allow entries", () => {
    expect(namespaceAccess(agent("a"), "kb", open, {})).toBe("read");
    expect(namespaceAccess(coordinator, "kb", open, {})).toBe("write");
    expect(namespaceAccess(admin, "kb", { default: "none", allow: [] }, {})).toBe("admin");
    expect(namespaceAccess(agent("a"), "kb", { default: "none", allow: [{ agent: "a", access: "write" }] }, {})).toBe("write");
    expect(namespaceAccess(agent("b"), "kb", { default: "none", allow: [{ agent: "a", access: "write" }] }, {})).toBe("none");
  });
  it("guardrails deny namespaces to everyone but admins (the tier rule)", () => {
    const g = { denied_semantic_namespaces: ["secret.*"], allowed_semantic_namespaces: null };
    expect(namespaceAccess(coordinator, "secret.keys", open, g)).toBe("none");
    expect(namespaceAccess(admin, "secret.keys", open, g)).toBe("admin");
    expect(namespaceAccess(agent("a"), "other", open, { allowed_semantic_namespaces: ["kb.*"] })).toBe("none");
    expect(namespaceAccess(agent("a"), "kb.x", open, { allowed_semantic_namespaces: ["kb.*"] })).toBe("read");
  });
});

describe("eviction order and working capacity", () => {
  const at = (s: number) => new Date(s * 1000);
  it("evicts lower priority first, then least recently used, never pinned", () => {
    const order = evictionOrder([
      { id: "high-old", pinned: false, priority: 2, lastUsedAt: at(1) },
      { id: "pinned-low", pinned: true, priority: 0, lastUsedAt: at(0) },
      { id: "low-new", pinned: false, priority: 0, lastUsedAt: at(9) },
      { id: "low-old", pinned: false, priority: 0, lastUsedAt: at(2) },
      { id: "normal", pinned: false, priority: 1, lastUsedAt: at(0) },
    ]).map((c) => c.id);
    expect(order).toEqual(["low-old", "low-new", "normal", "high-old"]);
  });
  it("refuses growth past max_entries or max_total_size_kb; the guardrail tightens max_entries", () => {
    expect(workingCapacityViolation({ entries: 2, bytes: 0 }, 1, 10, { maxEntries: 2, maxTotalSizeKb: null })).toMatch(/limit is 2/);
    expect(workingCapacityViolation({ entries: 0, bytes: 1000 }, 1, 100, { maxEntries: null, maxTotalSizeKb: 1 })).toMatch(/KB/);
    expect(workingCapacityViolation({ entries: 1, bytes: 0 }, 1, 10, { maxEntries: 2, maxTotalSizeKb: 1 })).toBeNull();
    expect(workingLimits({ max_entries: 10 }, 3)).toEqual({ maxEntries: 3, maxTotalSizeKb: null });
  });
});

describe("ttl and expires_at (2.14)", () => {
  const now = new Date("2026-01-31T00:00:00.000Z");
  it("parses ISO 8601 durations", () => {
    expect(addIsoDuration(now, "PT1H")?.toISOString()).toBe("2026-01-31T01:00:00.000Z");
    expect(addIsoDuration(now, "P1DT30M")?.toISOString()).toBe("2026-02-01T00:30:00.000Z");
    expect(addIsoDuration(now, "P1W")?.toISOString()).toBe("2026-02-07T00:00:00.000Z");
    expect(addIsoDuration(now, "P")).toBeUndefined();
    expect(addIsoDuration(now, "PT")).toBeUndefined();
  });
  it("expires_at overrides ttl; task_lifetime needs a task", () => {
    expect(expiryOf(now, "duration:PT1H", "2026-05-01T00:00:00Z", null)).toEqual({ ok: true, expiresAt: new Date("2026-05-01T00:00:00Z") });
    expect(expiryOf(now, "task_lifetime", null, null).ok).toBe(false);
    expect(expiryOf(now, "task_lifetime", null, "t")).toEqual({ ok: true, expiresAt: null });
  });
});

describe("archive snapshots (3.7)", () => {
  it("keeps every entry, in order, in parts under the byte limit", () => {
    const items = Array.from({ length: 10 }, (_, i) => ({ namespace: "n", key: `k${i}`, value: { s: "x".repeat(100) }, tags: [] }));
    const parts = splitSnapshot(items, 400);
    expect(parts.flat()).toEqual(items);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(JSON.stringify(part).length).toBeLessThanOrEqual(400);
    expect(splitSnapshot(items, 1_000_000)).toEqual([items]);
    expect(splitSnapshot([], 10)).toEqual([]);
  });
});
