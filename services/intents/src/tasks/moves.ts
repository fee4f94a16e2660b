import { appError } from "@intentmesh/contracts";
import { eq, inArray } from "drizzle-orm";
import { errors, INTENT_SUSPENDED, isoTimestamp, type Caller, type CommandDef, type JsonObject, type Task, type TaskRetryPolicy, type TaskStatus } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { tasks } from "../db/schema-tasks";
import { retryPolicies } from "../db/schema-records";
import { appendToLog, type NewEvent } from "../kernel/event-log";
import { TERMINAL_STATUSES } from "../intents/status";
import { assertDependenciesDone, assertTaskTransition, DEPENDENCY_DONE_STATUSES } from "./task-status";
import { assertPlanLetsTaskStart, planEffectsOfTaskChange } from "../plans/effects";
import { coordinatorEffectsOfTaskChange } from "../coordinators/holder-guard";
import { readyDependents } from "./dependents";
import { checkCompletionOutputs, claimInputs } from "../workflows/effects";
import { decideAfterFailure, type RetryRules } from "../failures/retry-delay";
import { agentWorkRefusal } from "../agents/agent-status";
import { taskEvent, toTask, unblocked, unblockEvent, updateTask, type TaskChange, type TaskRow } from "./store";
import { holdClaimingAgent, lockIntentOfTask, readTaskUnderLock } from "./locked-reads";

/**
 * How a task changes status: planTransition is the one place each target's fields and event are
 * decided (after the transition table's check); changeTask runs a change in its transaction, in
 * the service's lock order.
 */

/** What one transition writes: the task's new fields and its event. */
export interface Move {
  change: TaskChange;
  event: (updated: TaskRow) => NewEvent;
}

interface TransitionContext {
  task: TaskRow;
  intentStatus: string;
  caller: Caller;
  now: Date;
  tx: Tx;
  /** Extra fields sent with the move (PATCH or the action's body). */
  output?: JsonObject | null | undefined;
  error?: string | null | undefined;
  errorCode?: string | undefined;
  blockedReason?: string | null | undefined;
  assignedAgent?: string | null | undefined;
  reason?: string | undefined;
  /** The fail action applies the retry policy; PATCH status failed does not. */
  applyRetryPolicy?: boolean;
  /** The agent whose status changeTask already checked (and holds) for this claim. */
  checkedAgent?: string | null;
}

/**
 * The one place a task changes status: the table's check, the fields each target sets and the
 * catalogue event it writes. The actions and PATCH both come here.
 */
export async function planTransition(to: TaskStatus, t: TransitionContext): Promise<Move> {
  const { task, caller, now } = t;
  const from = task.status as TaskStatus;
  // A task waiting on unfinished dependencies says so first (RFC 0012 1.2), naming them.
  if ((to === "ready" || to === "claimed" || to === "running") && waitsOnDependencies(task)) await assertDependenciesMet(t.tx, task);
  assertTaskTransition(task.id, from, to);
  const agentOf = (row: TaskRow) => row.assignedAgent;
  const base = (row: TaskRow) => ({ task_id: row.id, status: row.status as TaskStatus, version: row.version });
  if (from === "blocked" && task.blockedReason === INTENT_SUSPENDED && to !== "cancelled" && to !== "failed") {
    throw appError("TASK_SUSPENDED", `task ${task.id} is blocked because intent ${task.suspendedIntentId} is suspended; it unblocks when the intent resumes`, {
      task_id: task.id,
      suspended_intent_id: task.suspendedIntentId,
    });
  }
  if (to === "claimed" || to === "running") {
    // A paused plan's tasks are neither claimed nor started; work already running goes on.
    if (from === "pending" || from === "ready" || from === "claimed") await assertPlanLetsTaskStart(t.tx, task);
    if (t.intentStatus === "suspended_awaiting_input") {
      throw appError("INTENT_SUSPENDED", `intent ${task.intentId} is suspended awaiting input; its tasks are not claimed or started until it resumes`, {
        intent_id: task.intentId,
      });
    }
    if (TERMINAL_STATUSES.includes(t.intentStatus as never)) {
      throw appError("INTENT_CLOSED", `intent ${task.intentId} is ${t.intentStatus}; its tasks take no more work`, { status: t.intentStatus });
    }
  }
  switch (to) {
    case "claimed": {
      const agent = t.assignedAgent ?? task.assignedAgent ?? caller.actor;
      // changeTask checked and holds (FOR SHARE) the claiming agent's status before the intent
      // lock, in the order lease grants take too; another agent named here is checked now.
      if (agent !== t.checkedAgent) {
        const refusal = await agentWorkRefusal(t.tx, agent);
        if (refusal) throw refusal;
      }
      // A workflow phase's inputs resolve now, or the claim is refused (RFC 0024 3.1).
      // (A task unblocked back to the claim it held resolved them when it was claimed.)
      const heldBefore = from === "blocked" && (task.blockedFrom === "claimed" || task.blockedFrom === "running");
      const input = heldBefore ? null : await claimInputs(t.tx, task);
      return {
        change: { status: to, assignedAgent: agent, claimedAt: now, ...(from === "blocked" ? unblocked : {}), ...(input ? { input } : {}) },
        event: (row) => (from === "blocked" ? unblockEvent(row, from, caller.actor, t.reason ?? "unblocked") : taskEvent("claimed", caller.actor, { ...base(row), agent_id: agentOf(row) })),
      };
    }
    case "running":
      if (from === "blocked") return { change: { status: to, ...unblocked }, event: (row) => unblockEvent(row, from, caller.actor, t.reason ?? "unblocked") };
      return {
        change: { status: to, attempt: task.attempt + 1, startedAt: now },
        event: (row) => taskEvent("started", caller.actor, { ...base(row), agent_id: agentOf(row), attempt: row.attempt }),
      };
    case "completed":
      // A workflow phase's declared outputs are checked before it completes (RFC 0024 3.3).
      await checkCompletionOutputs(t.tx, task, (t.output !== undefined ? t.output : task.output) ?? null);
      return {
        change: { status: to, completedAt: now, ...(t.output !== undefined ? { output: t.output } : {}) },
        event: (row) => taskEvent("completed", caller.actor, { ...base(row), agent_id: agentOf(row), memory_policy: row.memoryPolicy }),
      };
    case "failed": {
      const error = t.error === undefined ? task.error : t.error;
      if (t.applyRetryPolicy) {
        const retry = await retryDecision(t.tx, task, t.errorCode ?? "TASK_FAILED", now);
        if (retry) {
          // Retries left: back to ready for its agent to claim again, after retry_at.
          return {
            change: { status: "ready", error, ...unblocked },
            event: (row) =>
              taskEvent("retrying", caller.actor, { ...base(row), from, reason: "failed", previous_agent: null, attempt: row.attempt, retry_at: retry.retryAt ? isoTimestamp(retry.retryAt) : null }),
          };
        }
      }
      return {
        change: { status: to, error, completedAt: now, ...unblocked },
        event: (row) => taskEvent("failed", caller.actor, { ...base(row), agent_id: agentOf(row), error: row.error, error_code: t.errorCode ?? null, memory_policy: row.memoryPolicy }),
      };
    }
    case "blocked": {
      const reason = t.blockedReason ?? task.blockedReason ?? "blocked";
      return {
        change: { status: to, blockedFrom: from, blockedReason: reason, suspendedIntentId: null },
        event: (row) => taskEvent("blocked", caller.actor, { ...base(row), from, blocked_reason: reason, suspended_intent_id: null }),
      };
    }
    case "cancelled":
    case "skipped":
      return {
        change: { status: to, completedAt: now, ...unblocked },
        event: (row) =>
          to === "skipped"
            ? taskEvent("skipped", caller.actor, { ...base(row), from, reason: t.reason ?? null })
            : taskEvent("cancelled", caller.actor, { ...base(row), from, reason: t.reason ?? null, memory_policy: row.memoryPolicy }),
      };
    case "ready":
      if (from === "blocked" || from === "pending") {
        return { change: { status: to, ...unblocked }, event: (row) => unblockEvent(row, from, caller.actor, t.reason ?? (from === "pending" ? "released" : "unblocked")) };
      }
      // claimed or running given back, or a failed task retried: the holder is recorded as previous agent.
      return {
        change: {
          status: to,
          ...(from === "failed" ? { completedAt: null } : { assignedAgent: null, previousAgents: task.assignedAgent ? [...task.previousAgents, task.assignedAgent] : task.previousAgents }),
        },
        event: (row) =>
          taskEvent("retrying", caller.actor, { ...base(row), from, reason: t.reason ?? (from === "failed" ? "retry" : "released"), previous_agent: from === "failed" ? null : task.assignedAgent, attempt: row.attempt, retry_at: null }),
      };
    case "pending":
      return { change: { status: to, ...unblocked }, event: (row) => unblockEvent(row, from, caller.actor, t.reason ?? "unblocked") };
  }
}

/** A task that has not been ready yet: pending, or blocked while pending. */
export const waitsOnDependencies = (task: TaskRow) => task.dependsOn.length > 0 && (task.status === "pending" || (task.status === "blocked" && task.blockedFrom === "pending"));

/** RFC 0012 1.2: TASK_DEPENDENCIES_PENDING (409) unless every dependency of the task is completed or skipped. */
export async function assertDependenciesMet(tx: Tx, task: TaskRow): Promise<void> {
  if (!task.dependsOn.length) return;
  const rows = await tx.select({ id: tasks.id, status: tasks.status }).from(tasks).where(inArray(tasks.id, task.dependsOn));
  const statusOf = new Map(rows.map((r) => [r.id, r.status as TaskStatus]));
  // In the order the task lists them; one deleted meanwhile counts as unfinished.
  assertDependenciesDone(task.id, task.dependsOn.map((id) => ({ id, status: statusOf.get(id) ?? "cancelled" })));
}

/**
 * The retry policy that governs a task: its own, else its intent's (spec 2.8). Returns when the
 * next attempt may run if one is left, else null. Without any policy a failure is final.
 */
async function retryDecision(tx: Tx, task: TaskRow, errorCode: string, now: Date): Promise<{ retryAt: Date | null } | null> {
  const policy = await effectiveRetryPolicy(tx, task);
  if (!policy) return null;
  const decision = decideAfterFailure({ policy, attemptNumber: Math.max(task.attempt, 1), errorCode, unresolvedFailures: 0 });
  if (!decision.retryAllowed) return null;
  return { retryAt: decision.delayMs === null ? null : new Date(now.getTime() + decision.delayMs) };
}

/** The task's retry policy when it has one, else its intent's, else null. */
export async function effectiveRetryPolicy(tx: Tx, task: Pick<TaskRow, "retryPolicy" | "intentId">): Promise<(RetryRules & { fallback_agent_id: string | null }) | null> {
  if (task.retryPolicy) return task.retryPolicy as TaskRetryPolicy;
  const [row] = await tx.select().from(retryPolicies).where(eq(retryPolicies.intentId, task.intentId));
  if (!row) return null;
  return {
    strategy: row.strategy as RetryRules["strategy"],
    max_retries: row.maxRetries,
    base_delay_ms: row.baseDelayMs,
    max_delay_ms: row.maxDelayMs,
    failure_threshold: row.failureThreshold,
    fallback_agent_id: row.fallbackAgentId,
  };
}

/** A claim's agent as the request names it (null: the task's assigned agent, else the caller); see holdClaimingAgent. */
export interface Claiming {
  named: string | null;
}

/**
 * Runs one change of a task in one transaction, in the service's lock order: a claim holds its
 * agent's status row, then the intent's row is locked, and the task is read under that lock with
 * the caller's access facts (locked-reads.ts). Then `command`'s access rule (when the guard did
 * not check it before the handler), If-Match, `decide`, the conditional UPDATE and the events.
 * Nothing is written before the access decision. When the task reaches completed or skipped,
 * dependents whose dependencies are now all done become ready.
 */
export async function changeTask(
  ctx: IntentsContext,
  taskId: string,
  ifMatch: number | null,
  caller: Caller,
  command: CommandDef | null,
  decide: (task: TaskRow, intentStatus: string, tx: Tx, checkedAgent: string | null) => Promise<{ change: TaskChange; events: (updated: TaskRow) => NewEvent[] }>,
  claiming?: Claiming,
): Promise<Task> {
  const now = ctx.clock.now();
  const updated = await ctx.db.transaction(async (tx) => {
    // A claim holds the agent's status row first, as lease grants do (agent, then intent), so an
    // agent's death being projected waits for it and then releases the task too.
    const claim = claiming ? await holdClaimingAgent(tx, taskId, claiming.named, caller) : null;
    const intent = await lockIntentOfTask(tx, taskId);
    const { task, access, coordinated, awaitedByOthers } = await readTaskUnderLock(tx, taskId, caller);
    if (command) ctx.access.assertAllowed(command, access, caller);
    if (claim?.refusal) throw claim.refusal;
    if (ifMatch !== null && task.version !== ifMatch) throw errors.versionMismatch("task", taskId, task.version, ifMatch);
    const plan = await decide(task, intent.status, tx, claim?.agent ?? null);
    const row = await updateTask(tx, task, plan.change, now);
    const newEvents = plan.events(row);
    const moved = row.status !== task.status;
    if (moved && awaitedByOthers && DEPENDENCY_DONE_STATUSES.includes(row.status as TaskStatus)) newEvents.push(...(await readyDependents(tx, row, now)));
    // Its plan follows in the same transaction (completed when all its tasks are done, on_failure on a failure).
    if (moved) newEvents.push(...(await planEffectsOfTaskChange(tx, row, now)));
    // The intent's coordinator counts consecutive failures (auto_escalate_after_failures).
    if (moved && coordinated) newEvents.push(...(await coordinatorEffectsOfTaskChange(tx, intent.id, row.id, row.status)));
    if (newEvents.length) await appendToLog(tx, intent.id, newEvents, now);
    return row;
  });
  ctx.published();
  return toTask(updated);
}
