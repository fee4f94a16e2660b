import type { Task } from "@intentmesh/contracts";
import type { Intentmesh } from "../client";
import { sleep } from "../client";
import { OutcomeUnknownError, abortError, isApiError } from "../errors";
import { TASK_EVENT_PREFIX } from "../generated/event-names";

/** Throw this from a task handler to name the failure's code (spec 2.8: RATE_LIMIT, TIMEOUT, PERMISSION_DENIED...), which decides the retry. */
export class TaskFailure extends Error {
  override readonly name = "TaskFailure";
  constructor(
    message: string,
    readonly errorCode: string,
  ) {
    super(message);
  }
}

export interface TaskContext {
  /** The client acting as the agent. */
  client: Intentmesh;
  intentId: string;
  agentId: string | undefined;
  /** Aborts when the loop is stopped (its `signal`); a drain lets the running task finish. */
  signal: AbortSignal;
}

export interface TaskLoopOptions {
  intentId: string;
  /** The work. Answers the task's output (a JSON object) or nothing; throwing fails the task (TaskFailure names the code). */
  handler: (task: Task, context: TaskContext) => Promise<Record<string, unknown> | void>;
  /** The acting agent (X-Agent-ID), else the client's. */
  agentId?: string;
  /** Stops the loop (the running handler sees it in its context). */
  signal?: AbortSignal;
  /** Once aborted, nothing new is claimed and the loop ends when its current task is done (AgentSession.draining). */
  draining?: AbortSignal;
  /** `idle`: end when no ready task is left for this agent (and no retry is due); `stopped` (default): run until signal or draining. */
  until?: "idle" | "stopped";
  /** A scan at least this often, besides the wake-ups of the intent's stream (default 10000 ms). */
  pollIntervalMs?: number;
  /** Observes each step. */
  onStep?: (step: { task: Task; step: "claimed" | "started" | "completed" | "failed" | "retrying" | "skipped" }) => void;
}

export interface TaskLoopSummary {
  completed: number;
  failed: number;
  retried: number;
}

/**
 * The task loop of docs/tasks.md: claim a ready task (unassigned, or assigned to this agent),
 * start it, run the handler, complete it with the handler's output, or fail it with the error
 * and let the server apply the retry policy (the task's, else the intent's): a retry returns the
 * task to `ready`, and the loop claims it again once its `retry_at` has come. A claim lost to
 * another agent (409) is skipped. Every action carries the task's version in If-Match, so a replay
 * after a lost answer can never apply it twice. The intent's stream wakes the loop when a task
 * becomes ready; a poll is the backstop.
 */
export async function runTaskLoop(client: Intentmesh, options: TaskLoopOptions): Promise<TaskLoopSummary> {
  const { intentId } = options;
  const agentId = options.agentId ?? client.options.agentId;
  const call = { agentId, signal: options.signal, replayable: true };
  const summary: TaskLoopSummary = { completed: 0, failed: 0, retried: 0 };
  /** Tasks whose retry is not due yet: id -> epoch ms. */
  const notBefore = new Map<string, number>();
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  options.draining?.addEventListener("abort", onAbort, { once: true });

  let wake: (() => void) | undefined;
  const woken = () => new Promise<void>((resolve) => (wake = resolve));
  // Task events wake the loop at once.
  const watching = (async () => {
    try {
      for await (const event of client.subscribe("intents", intentId, { signal: stop.signal, agentId })) {
        if (event.event.startsWith(TASK_EVENT_PREFIX)) wake?.();
      }
    } catch {
      /* the poll goes on */
    }
  })();

  const step = (task: Task, name: Parameters<NonNullable<TaskLoopOptions["onStep"]>>[0]["step"]) => options.onStep?.({ task, step: name });

  /** One action on a task; after a lost answer, a read says whether it took. */
  const act = async (task: Task, action: () => Promise<Task>, tookEffect: (fresh: Task) => boolean): Promise<Task | undefined> => {
    try {
      return await action();
    } catch (error) {
      if (error instanceof OutcomeUnknownError) {
        const fresh = await client.ops.tasksGet({ task_id: task.id }, call);
        if (tookEffect(fresh)) return fresh;
        return undefined;
      }
      if (isApiError(error) && (error.status === 409 || error.status === 403 || error.status === 404)) return undefined;
      throw error;
    }
  };

  const work = async (ready: Task): Promise<void> => {
    const claimed = await act(ready, () => client.ops.tasksClaim({ task_id: ready.id, ifMatch: ready.version }, call), (t) => t.assigned_agent === agentId && t.status === "claimed");
    if (!claimed) return step(ready, "skipped");
    step(claimed, "claimed");
    const started = await act(claimed, () => client.ops.tasksStart({ task_id: claimed.id, ifMatch: claimed.version }, call), (t) => t.status === "running" && t.attempt > claimed.attempt);
    if (!started) return step(claimed, "skipped");
    step(started, "started");
    let output: Record<string, unknown> | void;
    try {
      output = await options.handler(started, { client: agentId ? client.as(agentId) : client, intentId, agentId, signal: options.signal ?? new AbortController().signal });
    } catch (error) {
      // The task may have moved while the handler ran (blocked and unblocked by a suspension): act on its current version.
      const current = await client.ops.tasksGet({ task_id: started.id }, call);
      const message = error instanceof Error ? error.message : String(error);
      const failed = await act(
        current,
        () => client.ops.tasksFail({ task_id: current.id, ifMatch: current.version, body: { error: message.slice(0, 10_000), ...(error instanceof TaskFailure ? { error_code: error.errorCode } : {}) } }, call),
        (t) => t.version > current.version && (t.status === "failed" || t.status === "ready"),
      );
      if (!failed) return step(current, "skipped");
      if (failed.status === "ready") {
        summary.retried += 1;
        notBefore.set(failed.id, await retryAt(failed));
        return step(failed, "retrying");
      }
      summary.failed += 1;
      return step(failed, "failed");
    }
    const current = await client.ops.tasksGet({ task_id: started.id }, call);
    const completed = await act(
      current,
      () => client.ops.tasksComplete({ task_id: current.id, ifMatch: current.version, body: output ? { output } : {} }, call),
      (t) => t.status === "completed",
    );
    if (!completed) return step(current, "skipped");
    summary.completed += 1;
    notBefore.delete(completed.id);
    step(completed, "completed");
  };

  /** When the server said the retry may start (task.retrying's retry_at), else now. */
  const retryAt = async (task: Task): Promise<number> => {
    const page = await client.ops.intentsListEvents({ intent_id: intentId, query: { event_type: "task.retrying", tail: "true", limit: 50 } }, call);
    const event = page.events.reverse().find((e) => (e.payload as { task_id?: string }).task_id === task.id);
    const at = Date.parse(String((event?.payload as { retry_at?: string } | undefined)?.retry_at ?? ""));
    return Number.isFinite(at) ? at : Date.now();
  };

  try {
    while (!stop.signal.aborted) {
      const nextWake = woken();
      const page = await client.ops.tasksList({ intent_id: intentId, query: { status: "ready", limit: 100 } }, call);
      // With `offset` the list is a bare array (the clients' paging); without it a page.
      const ready = Array.isArray(page) ? page : page.tasks;
      const mine = ready.filter((t) => t.assigned_agent === null || t.assigned_agent === agentId);
      const due = mine.filter((t) => (notBefore.get(t.id) ?? 0) <= Date.now());
      for (const task of due) {
        if (stop.signal.aborted) break;
        await work(task);
      }
      if (due.length) continue; // scan again: work may have made more tasks ready
      const waiting = mine.filter((t) => notBefore.has(t.id)).map((t) => notBefore.get(t.id)! - Date.now());
      if (options.until === "idle" && !waiting.length) break;
      const pause = Math.min(options.pollIntervalMs ?? 10_000, ...waiting.map((ms) => Math.max(0, ms)));
      await Promise.race([nextWake, sleep(pause, stop.signal).catch(() => undefined)]);
    }
    if (options.signal?.aborted) throw abortError(options.signal);
    return summary;
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    options.draining?.removeEventListener("abort", onAbort);
    stop.abort();
    await watching;
  }
}
