import type { TaskIoContract } from "../db/schema-tasks";
import { appError, TASK_STATUSES, type PlanFailureAction, type PlanProgress, type PlanState, type PlanStep, type TaskStatus } from "@intentmesh/contracts";

/**
 * The pure rules of plans (RFC 0012 2, docs/plans.md): the state machine, progress from task
 * states, what a task's end does to its plan, MCP steps resolved into tasks, and the
 * decomposition of a task description into subtasks.
 */

/**
 * RFC 0012 2.2. draft -> active (activate); active <-> paused (pause, resume); completed once
 * every task is completed or skipped; failed and cancelled from any unfinished state.
 */
export const PLAN_TRANSITIONS: Readonly<Record<PlanState, readonly PlanState[]>> = {
  draft: ["active", "cancelled"],
  active: ["paused", "completed", "failed", "cancelled"],
  paused: ["active", "completed", "failed", "cancelled"],
  completed: [],
  failed: [],
  cancelled: [],
};

export const PLAN_FINAL_STATES: readonly PlanState[] = ["completed", "failed", "cancelled"];
const DONE: readonly TaskStatus[] = ["completed", "skipped"];

/** Throws INVALID_PLAN_TRANSITION (409) unless the table allows the move, and completed only when every task is done. */
export function assertPlanTransition(planId: string, from: PlanState, to: PlanState, taskStatuses: readonly TaskStatus[]): void {
  const allowed = PLAN_TRANSITIONS[from];
  if (!allowed.includes(to)) {
    const options = allowed.length ? `it may move to ${allowed.join(", ")}` : "it is final and may not move";
    throw appError("INVALID_PLAN_TRANSITION", `plan ${planId} cannot move from ${from} to ${to}; ${options}`, { plan_id: planId, from, to, allowed: [...allowed] });
  }
  if (to === "completed") {
    const open = taskStatuses.filter((s) => !DONE.includes(s)).length;
    if (open) {
      throw appError("INVALID_PLAN_TRANSITION", `plan ${planId} cannot be completed: ${open} of its ${taskStatuses.length} tasks are neither completed nor skipped`, {
        plan_id: planId,
        from,
        to,
        allowed: [...allowed],
        open_tasks: open,
      });
    }
  }
}

/** The event key of a state change. */
export function planEventOf(from: PlanState, to: PlanState): "activated" | "paused" | "resumed" | "completed" | "failed" | "cancelled" {
  if (to === "active") return from === "paused" ? "resumed" : "activated";
  return to as "paused" | "completed" | "failed" | "cancelled";
}

export interface ProgressTask {
  id: string;
  status: TaskStatus;
  blockedReason: string | null;
  suspendedIntentId: string | null;
  intentId: string;
  suspendedSince: string | null;
  expiresAt: string | null;
}

/**
 * Progress from the tasks' current states (RFC 0012 9): counts by status, done = completed +
 * skipped, the percentage, and suspended_tasks: the tasks blocked because an intent is
 * suspended awaiting input, with when it was suspended and when the suspension expires.
 */
export function computeProgress(tasks: readonly ProgressTask[]): PlanProgress {
  const byStatus = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
  for (const task of tasks) byStatus[task.status] += 1;
  const done = byStatus.completed + byStatus.skipped;
  return {
    total: tasks.length,
    by_status: byStatus,
    done,
    percent_complete: tasks.length ? Math.round((done / tasks.length) * 10_000) / 100 : 0,
    suspended_tasks: tasks
      .filter((t) => t.status === "blocked" && t.blockedReason === "intent_suspended")
      .map((t) => ({ task_id: t.id, intent_id: t.suspendedIntentId ?? t.intentId, suspended_since: t.suspendedSince, expires_at: t.expiresAt })),
  };
}

/**
 * What a change of one of its tasks does to an active plan: completed when every task is
 * completed or skipped; on a task failed for good, the plan's on_failure decides (fail: failed;
 * pause_and_escalate: paused; notify: nothing). Null: the plan stays as it is.
 */
export function planAfterTaskChange(
  plan: { state: PlanState; onFailure: PlanFailureAction },
  changed: { status: TaskStatus },
  statuses: readonly TaskStatus[],
): { to: PlanState; reason: string } | null {
  if (plan.state !== "active") return null;
  if (statuses.length && statuses.every((s) => DONE.includes(s))) return { to: "completed", reason: "all_tasks_done" };
  if (changed.status === "failed") {
    if (plan.onFailure === "fail") return { to: "failed", reason: "task_failed" };
    if (plan.onFailure === "pause_and_escalate") return { to: "paused", reason: "task_failed" };
  }
  return null;
}

/** A new task of a plan: its own id, title, description, dependencies (ids) and parent. */
export interface NewPlanTask {
  id: string;
  title: string;
  description: string | null;
  dependsOn: string[];
  parentTaskId: string | null;
  /** A workflow phase's task: its agent, its input (static inputs resolved) and its I/O contract. */
  assignedAgent?: string | null;
  input?: Record<string, unknown>;
  ioContract?: TaskIoContract | null;
}

/**
 * The MCP server's steps as tasks, in order. A step's depends_on names an earlier step of the
 * same plan by title (the first step of that title), or an existing task of the intent by id.
 * Anything else (a later step, an unknown name) is 422 UNKNOWN_TASK_REFERENCE naming it.
 */
export function resolveSteps(steps: readonly PlanStep[], ids: readonly string[], existingTaskIds: ReadonlySet<string>): NewPlanTask[] {
  const byTitle = new Map<string, string>();
  const unknown: string[] = [];
  const tasks = steps.map((step, n) => {
    const dependsOn: string[] = [];
    for (const ref of step.depends_on) {
      const id = byTitle.get(ref) ?? (existingTaskIds.has(ref.toLowerCase()) ? ref.toLowerCase() : undefined);
      if (id === undefined) unknown.push(ref);
      else if (!dependsOn.includes(id)) dependsOn.push(id);
    }
    if (!byTitle.has(step.title)) byTitle.set(step.title, ids[n]!);
    return { id: ids[n]!, title: step.title, description: step.description ?? null, dependsOn, parentTaskId: null };
  });
  if (unknown.length) {
    throw appError(
      "UNKNOWN_TASK_REFERENCE",
      `a step's depends_on must name an earlier step of the plan by title, or a task of the intent by id; ${unknown.map((u) => JSON.stringify(u)).join(", ")} is not one`,
      { missing: unknown },
    );
  }
  return tasks;
}

/** One item of a decomposed description, with its subitems. */
export interface DecomposedItem {
  title: string;
  description: string | null;
  children: DecomposedItem[];
}

const LIST_MARKER = /^(\s*)(?:[-*+•]|\d+[.)]|[a-zA-Z][.)])\s+(.*)$/;
const MAX_TITLE = 500;
export const MAX_DECOMPOSED_TASKS = 200;

/**
 * Decomposes a task description into items, deterministically (no model is consulted,
 * docs/plans.md): list items (`-`, `*`, `1.`, `a)`) are steps, nested by indentation; a line
 * that is not a list item before the first one is the heading (the root's title). Without a
 * list, the sentences (split at `.`, `;` or `then`) are the steps. Items deeper than max_depth
 * fold into their ancestor at max_depth (their text joins its description). The root is the
 * whole task; its children are the steps.
 */
export function decomposeDescription(text: string, maxDepth: number): DecomposedItem {
  const lines = text.split(/\r?\n/).filter((line) => line.trim().length > 0);
  const listed = lines.filter((line) => LIST_MARKER.test(line));
  const root: DecomposedItem = { title: clip(firstLine(text)), description: text.trim(), children: [] };
  if (listed.length) {
    const heading = lines.find((line) => !LIST_MARKER.test(line));
    if (heading && lines.indexOf(heading) < lines.findIndex((line) => LIST_MARKER.test(line))) root.title = clip(heading.trim());
    // A stack of (indent, item, depth): an item belongs under the nearest less-indented one.
    const stack: { indent: number; item: DecomposedItem; depth: number }[] = [{ indent: -1, item: root, depth: 0 }];
    for (const line of lines) {
      const match = LIST_MARKER.exec(line);
      if (!match) continue;
      const indent = match[1]!.replace(/\t/g, "    ").length;
      const body = match[2]!.trim();
      while (stack.length > 1 && stack.at(-1)!.indent >= indent) stack.pop();
      const parent = stack.at(-1)!;
      if (parent.depth >= maxDepth) {
        parent.item.description = parent.item.description ? `${parent.item.description}\n${body}` : body;
        // Deeper lines still fold into the same ancestor: keep the stack pointing at it.
        continue;
      }
      const item: DecomposedItem = { title: clip(body), description: body.length > MAX_TITLE ? body : null, children: [] };
      parent.item.children.push(item);
      stack.push({ indent, item, depth: parent.depth + 1 });
    }
  } else {
    const sentences = text
      .split(/(?:[.;!?]\s+|\n|\s+then\s+|,\s*then\s+)/i)
      .map((s) => s.trim().replace(/^then\s+/i, "").replace(/[.;!?]+$/, ""))
      .filter((s) => s.length > 0);
    if (sentences.length > 1) root.children = sentences.map((s) => ({ title: clip(s), description: s.length > MAX_TITLE ? s : null, children: [] }));
  }
  return root;
}

const firstLine = (text: string) => text.trim().split(/\r?\n/)[0]!.trim();
const clip = (text: string) => (text.length > MAX_TITLE ? `${text.slice(0, MAX_TITLE - 1)}…` : text);

/**
 * The tasks of a decomposition, parents before children: each item is a task; a child names
 * its parent (parent_task_id) and depends on its previous sibling (steps run in order); a parent
 * depends on its children (it is done when its subtasks are). The root is the decomposed task
 * itself. At most MAX_DECOMPOSED_TASKS tasks (the rest of the list folds into its parent).
 */
export function decompositionTasks(root: DecomposedItem, newId: () => string): NewPlanTask[] {
  const out: NewPlanTask[] = [];
  const visit = (item: DecomposedItem, parentTaskId: string | null, previous: string | null): string => {
    const id = newId();
    const task: NewPlanTask = { id, title: item.title, description: item.description, dependsOn: previous ? [previous] : [], parentTaskId };
    out.push(task);
    let last: string | null = null;
    for (const child of item.children) {
      if (out.length >= MAX_DECOMPOSED_TASKS) {
        task.description = [task.description, child.title].filter(Boolean).join("\n");
        continue;
      }
      last = visit(child, id, last);
      task.dependsOn.push(last);
    }
    return id;
  };
  visit(root, null, null);
  return out;
}
