import { AWAITING_CHECKPOINT, isoTimestamp, type CheckpointStatus, type PlanCheckpoint, type PlanCondition, type PlanFailureAction, type PlanState, type TaskStatus } from "@intentmesh/contracts";
import { evaluate, namedTasks, parseExpression, truthy } from "./expression";
import { planAfterTaskChange } from "./rules";

/**
 * What an active plan does after one of its tasks changed (or it was activated, resumed, or its
 * conditions changed), as a pure decision (RFC 0012 2.3, 2.4, docs/plans.md):
 * 1. conditions whose named tasks are all done are evaluated; a false one skips its task (while
 *    that task is still pending or ready), which may make further conditions evaluable;
 * 2. pending checkpoints whose task is done are reached: with requires_approval they await
 *    approval (due after timeout_hours) and the plan pauses; without, they pass;
 * 3. otherwise the plan completes when every task is completed or skipped, or follows on_failure
 *    for a task that failed for good.
 */

const DONE: readonly TaskStatus[] = ["completed", "skipped"];
const SKIPPABLE: readonly TaskStatus[] = ["pending", "ready"];

export interface FollowTask {
  id: string;
  title: string;
  status: TaskStatus;
  output: unknown;
}

export interface FollowInput {
  plan: { id: string; state: PlanState; title: string | null; metadata: unknown; onFailure: PlanFailureAction; checkpoints: readonly PlanCheckpoint[]; conditions: readonly PlanCondition[] };
  tasks: readonly FollowTask[];
  intent: { id: string; status: string; title: string; state: unknown };
  /** The task whose change prompted this, when one did (on_failure reads it). */
  changed: { id: string; status: TaskStatus } | null;
  now: Date;
}

export interface FollowOutcome {
  checkpoints: PlanCheckpoint[];
  conditions: PlanCondition[];
  /** Conditions evaluated now, in order. */
  evaluated: { conditionId: string; taskId: string; result: boolean; skipped: boolean }[];
  /** Tasks to skip (their condition was false). */
  skip: string[];
  /** Checkpoints reached now. */
  reached: { checkpointId: string; taskId: string; requiresApproval: boolean; dueAt: Date | null }[];
  to: { state: PlanState; reason: string; taskId: string | null; checkpointId: string | null } | null;
}

/** A task of the plan by id or by title (conditions and checkpoints may name either). */
export function taskResolver(tasks: readonly FollowTask[]): (ref: string | undefined) => FollowTask | undefined {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const byTitle = new Map<string, FollowTask>();
  for (const t of tasks) if (!byTitle.has(t.title)) byTitle.set(t.title, t);
  return (ref) => (ref === undefined ? undefined : (byId.get(ref.toLowerCase()) ?? byTitle.get(ref)));
}

export const awaitsApproval = (cp: Pick<PlanCheckpoint, "status">) => AWAITING_CHECKPOINT.includes(cp.status as CheckpointStatus);

/** The earliest deadline among checkpoints awaiting approval that have not timed out yet: what the sweeper looks for. */
export function checkpointDueAt(checkpoints: readonly PlanCheckpoint[]): Date | null {
  const due = checkpoints.filter((cp) => cp.status === "reached" && cp.due_at).map((cp) => new Date(cp.due_at!).getTime());
  return due.length ? new Date(Math.min(...due)) : null;
}

/** A task with a condition not evaluated yet: it may not be claimed or started (409 TASK_CONDITION_PENDING). */
export function pendingConditionOf(taskId: string, tasks: readonly FollowTask[], conditions: readonly PlanCondition[]): PlanCondition | undefined {
  const resolve = taskResolver(tasks);
  return conditions.find((c) => (c.result === undefined || c.result === null) && resolve(c.task_id)?.id === taskId);
}

export function followPlan(input: FollowInput): FollowOutcome {
  const status = new Map(input.tasks.map((t) => [t.id, t.status]));
  const resolve = taskResolver(input.tasks);
  const conditions = input.plan.conditions.map((c) => ({ ...c }));
  const out: FollowOutcome = { checkpoints: input.plan.checkpoints.map((cp) => ({ ...cp })), conditions, evaluated: [], skip: [], reached: [], to: null };
  if (input.plan.state !== "active") return out;
  const now = isoTimestamp(input.now);

  // 1. Conditions, until a pass changes nothing (a skip may complete what another names).
  for (let changed = true; changed; ) {
    changed = false;
    for (const [n, condition] of conditions.entries()) {
      if (condition.result !== undefined && condition.result !== null) continue;
      const target = resolve(condition.task_id);
      if (!target || !SKIPPABLE.includes(status.get(target.id)!)) continue;
      const expression = parseExpression(condition.when);
      const named = namedTasks(expression).map(resolve);
      if (named.some((t) => !t || !DONE.includes(status.get(t.id)!))) continue;
      const result = truthy(evaluate(expression, scope(input, status)));
      const skipped = !result && condition.otherwise === "skip";
      conditions[n] = { ...condition, result, evaluated_at: now };
      out.evaluated.push({ conditionId: condition.id!, taskId: target.id, result, skipped });
      if (skipped) {
        status.set(target.id, "skipped");
        out.skip.push(target.id);
      }
      changed = true;
    }
  }

  // 2. Checkpoints whose task is done.
  for (const cp of out.checkpoints) {
    if (cp.status !== "pending") continue;
    const task = resolve(cp.after_task);
    if (!task || !DONE.includes(status.get(task.id)!)) continue;
    const dueAt = cp.requires_approval && cp.timeout_hours != null ? new Date(input.now.getTime() + cp.timeout_hours * 3_600_000) : null;
    cp.status = cp.requires_approval ? "reached" : "passed";
    cp.reached_at = now;
    cp.due_at = dueAt ? isoTimestamp(dueAt) : null;
    out.reached.push({ checkpointId: cp.id!, taskId: task.id, requiresApproval: cp.requires_approval, dueAt });
  }
  const gate = out.checkpoints.find(awaitsApproval);
  if (gate) {
    out.to = { state: "paused", reason: "checkpoint", taskId: resolve(gate.after_task)?.id ?? null, checkpointId: gate.id! };
    return out;
  }

  // 3. Completion, or the failure action.
  // A task skipped just now is not the change that prompted this: on_failure reads the prompt only.
  const next = planAfterTaskChange(input.plan, { status: input.changed?.status ?? "ready" }, [...status.values()]);
  if (next) out.to = { state: next.to, reason: next.reason, taskId: next.reason === "task_failed" ? input.changed!.id : null, checkpointId: null };
  return out;
}

/** What `when` reads: tasks by id and by title ({id, title, status, output}), the intent, the plan. */
function scope(input: FollowInput, status: ReadonlyMap<string, TaskStatus>) {
  // No prototype: a title such as "__proto__" is a key like any other.
  const tasks = Object.create(null) as Record<string, unknown>;
  const view = (t: FollowTask) => ({ id: t.id, title: t.title, status: status.get(t.id), output: t.output ?? null });
  // Titles first, the first task of a title winning; ids last, so an id always names its task.
  for (const t of [...input.tasks].reverse()) tasks[t.title] = view(t);
  for (const t of input.tasks) tasks[t.id] = view(t);
  return {
    tasks,
    intent: { id: input.intent.id, status: input.intent.status, title: input.intent.title, state: input.intent.state },
    plan: { id: input.plan.id, title: input.plan.title, metadata: input.plan.metadata },
  };
}
