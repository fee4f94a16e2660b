import { and, eq, lte } from "drizzle-orm";
import { AppError, LIMITS, memoryEvents, taskCommands, taskEvents } from "@intentmesh/contracts";
import { eventFamilyOn, subscribe, type Bus } from "@intentmesh/bus";
import { rowsOf, tableSql, withParams, type Queryable, type Tx } from "@intentmesh/db";
import { entries, inbox, tasks } from "./db/schema";
import { SERVICE_CALLER, type MemoryContext } from "./context";
import { entryEvent, memoryEvent, writeMemoryEvents, type NewMemoryEvent } from "./events";
import { upsertTask } from "./task-views";
import { splitSnapshot } from "./domain/archive";

/** The ends of a task: the only task events with effects to apply in a transaction. */
const ENDINGS: ReadonlySet<string> = new Set([taskEvents.completed.name, taskEvents.failed.name, taskEvents.cancelled.name]);

/**
 * The task events whose change to the fields memory keeps is all in their payload, given the
 * record's version before them: a claim names its holder (previous agents unchanged) and a start
 * names its holder (a PATCH may reassign with it; previous agents unchanged). Any other change of
 * the task bumps its version, so a record at exactly version - 1 has missed nothing.
 */
const HOLDER_MOVES: ReadonlySet<string> = new Set([taskEvents.claimed.name, taskEvents.started.name]);

/**
 * Follows the intents service's task events (one durable consumer on im.evt.intent.*.task.>, so
 * a task's events arrive in order; inbox in memory's schema, so each end applies once):
 * - every event newer than the local task record brings it to that version (or newer): a claim or
 *   a start that follows the record's version from its payload, anything else from
 *   im.intents.tasks.get (events do not carry every field memory needs, such as previous agents).
 *   That is idempotent by version, so once the record is there the event is acknowledged without a
 *   transaction or an inbox row (the consumer's `skip`; when the record cannot be brought there now,
 *   the event takes the inbox path and is refreshed after its commit, as every event did before).
 *   Every write to the record is guarded by its version, so the order in which a batch's events
 *   reach it does not change the result;
 * - task.completed / failed / cancelled end the task's working memory (3.7): archived in
 *   memory.archived events (snapshot of namespace, key, value, tags) when archive_on_completion
 *   (or the guardrail memory_archive_required), then deleted, with entries of ttl task_lifetime.
 */
export async function startTaskConsumer(bus: Bus, ctx: MemoryContext, afterCommit?: () => void) {
  return subscribe(bus, eventFamilyOn(taskEvents, "intent", "task."), {
    durable: "memory-task-events",
    db: ctx.db,
    inbox,
    logger: ctx.logger,
    skip: async (event) => !ENDINGS.has(event.event_type) && (await followTask(ctx, event)),
    handle: async (tx, event) => {
      if (event.event_type !== taskEvents.completed.name && event.event_type !== taskEvents.failed.name && event.event_type !== taskEvents.cancelled.name) return;
      const { task_id: taskId, memory_policy: policy, status, version } = event.payload;
      // The end carries its version: a refresh answered before the end (an older version) cannot
      // mark the task running again, and a record already past the end (a later version, fetched
      // first) is not taken back to it.
      await tx
        .update(tasks)
        .set({ ended: true, status, version })
        .where(and(eq(tasks.taskId, taskId), lte(tasks.version, version)));
      await endTaskMemory(ctx, tx, taskId, event.intent_id, policy.archive_on_completion !== false || Boolean(ctx.guardrails.memory_archive_required), event.actor);
    },
    // The task record is refreshed after the commit, never inside the transaction: a bus request
    // there would hold a connection (the only one, on an embedded database) while the intents
    // service answers. Best effort: a refresh that fails leaves the older record, and reads that
    // it denies ask the intents service again (entry-access.ts).
    afterCommit: async (msg) => {
      ctx.published();
      afterCommit?.();
      await refreshAfter(ctx, msg.json<{ payload?: { task_id?: unknown; version?: unknown } }>());
    },
  });
}

/**
 * A task event other than an end: the local record follows it, from its payload where it can.
 * Whether the record is now at the event's version or newer (or the task is gone); when it could
 * not be brought there (the database or the intents service did not answer) the event takes the
 * consumer's usual path, inbox transaction and refresh after it, as before this shortcut.
 */
async function followTask(ctx: MemoryContext, event: { event_type: string; payload: { task_id: string; status: string; version: number; agent_id?: string | null } }): Promise<boolean> {
  const { task_id: taskId, status, version, agent_id: holder } = event.payload;
  try {
    if (HOLDER_MOVES.has(event.event_type) && holder !== undefined) {
      const moved = await ctx.db
        .update(tasks)
        .set({ assignedAgent: holder, status, ended: false, version })
        .where(and(eq(tasks.taskId, taskId), eq(tasks.version, version - 1)))
        .returning({ version: tasks.version });
      if (moved.length) return true;
    }
    await refreshIfOlder(ctx, taskId, version);
    return true;
  } catch (err) {
    ctx.logger.debug({ err, taskId }, "could not follow a task event on the local record; applying it the usual way");
    return false;
  }
}

async function refreshAfter(ctx: MemoryContext, event: { payload?: { task_id?: unknown; version?: unknown } }): Promise<void> {
  const taskId = typeof event.payload?.task_id === "string" ? event.payload.task_id : undefined;
  if (!taskId) return;
  try {
    await refreshIfOlder(ctx, taskId, Number(event.payload?.version ?? 0));
  } catch (err) {
    ctx.logger.warn({ err, taskId }, "could not refresh a task record from the intents service; reads will ask again");
  }
}

/** Asks the intents service for the task unless the local record is at `version` or newer. */
async function refreshIfOlder(ctx: MemoryContext, taskId: string, version: number): Promise<void> {
  const [known] = await ctx.db.select({ version: tasks.version }).from(tasks).where(eq(tasks.taskId, taskId));
  if (known && known.version >= version) return;
  await refresh(ctx, ctx.db, taskId);
}

async function refresh(ctx: MemoryContext, db: Queryable, taskId: string): Promise<void> {
  try {
    await upsertTask(db, await ctx.client.request(taskCommands.get, SERVICE_CALLER, { task_id: taskId }));
  } catch (error) {
    if (error instanceof AppError && error.status === 404) return;
    throw error; // the intents service did not answer: the event is redelivered
  }
}

// Every end of a task runs this (as text made once: libs/db table-sql.ts), most often deleting nothing.
const entrySql = tableSql(entries);
const END_OF_TASK = `delete from ${entrySql.name} e where e.task_id = $1 and (e.memory_type = 'working' or e.ttl = 'task_lifetime') returning ${entrySql.columnList("e")}`;

/**
 * Archives (when asked) and deletes a task's working memory, and its entries of ttl
 * task_lifetime, in the consumer's transaction. A snapshot larger than LIMITS.pageBytes is
 * written as several memory.archived events (data.part, data.parts).
 */
export async function endTaskMemory(ctx: MemoryContext, tx: Tx, taskId: string, intentId: string, archive: boolean, actor: string): Promise<number> {
  const rows = rowsOf<Record<string, unknown>>(await tx.execute(withParams(END_OF_TASK, [taskId]))).map(entrySql.rowOf);
  if (!rows.length) return 0;
  const working = rows.filter((r) => r.memoryType === "working").sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
  const others = rows.filter((r) => r.memoryType !== "working");
  const events: NewMemoryEvent[] = [];
  if (archive && working.length) {
    const parts = splitSnapshot(
      working.map((r) => ({ namespace: r.namespace, key: r.key, value: r.value, tags: r.tags })),
      LIMITS.pageBytes,
    );
    // The archive speaks for the task, not one agent: agent_id is the task's last holder among the owners.
    const owner = working[working.length - 1]!.agentId;
    parts.forEach((snapshot, i) =>
      events.push(
        memoryEvent(memoryEvents.archived, {
          agentId: owner,
          intentId,
          taskId,
          data: { entries_archived: snapshot.length, snapshot, ...(parts.length > 1 ? { part: i + 1, parts: parts.length } : {}) },
          actor,
        }),
      ),
    );
  } else {
    for (const row of working) events.push(entryEvent(memoryEvents.deleted, row, row.version, actor));
  }
  for (const row of others) events.push(entryEvent(memoryEvents.expired, row, row.version, actor));
  await writeMemoryEvents(tx, events, ctx.clock.now());
  return rows.length;
}
