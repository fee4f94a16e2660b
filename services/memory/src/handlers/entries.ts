import { randomUUID } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { appError, AppError, type Caller, type CreateMemoryBody, errors, intentsCommands, jsonBytes, type MemoryEntry, memoryEvents, type PatchMemoryBody } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { entries, tasks } from "../db/schema";
import type { MemoryContext } from "../context";
import { actingAgent } from "@intentmesh/contracts";
import { PRIORITY_RANK } from "../domain/capacity";
import { expiryOf } from "../domain/lifetime";
import { assertAccess } from "../entry-access";
import { entryEvent, memoryEventMessages, writeMemoryEvents, type NewMemoryEvent } from "../events";
import { createInOneStatement } from "../db/create-statement";
import { lockEntry, selectEntry, touchEntry, updateEntryStatement } from "../db/entry-sql";
import { toEntry, type EntryRow } from "../mapping";
import { loadLocalTask, loadTask } from "../task-views";
import { makeRoomForEpisodic, assertWorkingRoom } from "../capacity-store";
import { assertGovernanceAllows } from "../governance-check";
import { checkIntentWrites, checkScopeWrites, type ScopeWriteChecks } from "../scope-write-checks";

export const entryNotFound = (id: string) => appError("ENTRY_NOT_FOUND", `memory entry ${id} was not found`, { entry_id: id });

const taskEnded = (taskId: string) =>
  appError("TASK_ENDED", `task ${taskId} has ended: its working memory was archived and no new entry may join it`, { task_id: taskId });

const episodicOnly = (field: string, memoryType: string) =>
  appError("FIELD_NOT_ALLOWED", `${field} applies to episodic memory only, not to ${memoryType} entries`, { field, memory_type: memoryType });

/** A create, checked and resolved outside the transaction (task, intent, expiry). */
export interface PreparedCreate {
  row: EntryRow;
  task: { maxEntries: number | null | undefined; maxTotalSizeKb: number | null | undefined } | null;
}

/**
 * Checks a create (tier fields, scope, ttl, access) and builds its row; nothing is written.
 * scope.task_id must name a task that has not ended (its working memory would never be archived);
 * scope.intent_id must name an intent the caller can read, and agree with the task's.
 */
export async function prepareCreate(ctx: MemoryContext, body: CreateMemoryBody, callerIn: Caller, now: Date, checked?: ScopeWriteChecks): Promise<PreparedCreate> {
  const caller = creatingCaller(callerIn, body);
  const type = body.memory_type;
  if (type !== "episodic") {
    if (body.pinned !== undefined) throw episodicOnly("pinned", type);
    if (body.priority !== undefined) throw episodicOnly("priority", type);
  }
  const owner = body.agent_id ?? actingAgent(caller);
  let taskId = body.scope?.task_id ?? null;
  let intentId = body.scope?.intent_id ?? null;
  let taskLimits: PreparedCreate["task"] = null;
  if (taskId) {
    const task = checked ? checked.task : await loadTask(ctx, taskId);
    if (!task) throw appError("TASK_NOT_FOUND", `scope.task_id ${taskId} names no task`, { task_id: taskId });
    if (intentId && intentId !== task.intentId) {
      throw errors.validation(`scope.intent_id ${intentId} is not the intent of task ${taskId} (${task.intentId})`);
    }
    intentId = task.intentId;
    if (type === "working" && task.ended) throw taskEnded(taskId);
    if (type === "working") taskLimits = { maxEntries: task.memoryPolicy.max_entries, maxTotalSizeKb: task.memoryPolicy.max_total_size_kb };
  } else if (intentId) {
    // The caller must be able to read the intent whose log will carry the entry's events: its
    // write check already said so (write includes read), or that the intent does not exist.
    if (checked) checked.assertIntentExists(intentId);
    else await ctx.client.request(intentsCommands.get, caller, { intent_id: intentId });
  }
  const expiry = expiryOf(now, body.ttl, body.expires_at, taskId);
  if (!expiry.ok) throw errors.validation(expiry.reason);
  await assertAccess(ctx, caller, { agentId: owner, memoryType: type, namespace: body.namespace, taskId }, "write");
  if (checked) await checked.assertGovernance(intentId);
  else await assertGovernanceAllows(ctx, caller, intentId);
  const row: EntryRow = {
    id: randomUUID(),
    agentId: owner,
    namespace: body.namespace,
    key: body.key,
    value: body.value,
    valueBytes: jsonBytes(body.value),
    memoryType: type,
    taskId,
    intentId,
    tags: [...new Set(body.tags)],
    ttl: body.ttl ?? null,
    version: 1,
    createdAt: now,
    updatedAt: now,
    lastUsedAt: now,
    expiresAt: expiry.expiresAt,
    pinned: type === "episodic" ? (body.pinned ?? false) : null,
    priority: type === "episodic" ? PRIORITY_RANK[body.priority ?? "normal"] : null,
    curatedBy: body.curated_by ?? (type === "semantic" ? actingAgent(caller) : null),
    sensitivity: body.sensitivity ?? null,
  };
  return { row, task: taskLimits };
}

/** Without X-Agent-ID, the body's agent_id (checked by the gateway as bound to the key) is the acting agent. */
export const creatingCaller = (callerIn: Caller, body: CreateMemoryBody): Caller =>
  callerIn.agent_id === null && body.agent_id ? { ...callerIn, agent_id: body.agent_id } : callerIn;

/**
 * Whether a create is checked inside its transaction: episodic entries make room (capacity
 * eviction), working entries of a task see the task's end and its limits (insertPrepared).
 * Every other create needs no check and may be written in one statement (createInOneStatement).
 */
export const createNeedsChecks = (row: EntryRow): boolean => row.memoryType === "episodic" || (row.memoryType === "working" && row.taskId !== null);

/** Inserts a prepared entry in the caller's transaction: capacity first, then the row and its event. */
export async function insertPrepared(ctx: MemoryContext, tx: Tx, prepared: PreparedCreate, caller: Caller, events: NewMemoryEvent[]): Promise<EntryRow> {
  const { row } = prepared;
  if (createNeedsChecks(row)) await checkCreate(ctx, tx, prepared, caller, events);
  const [inserted] = await tx.insert(entries).values(row).onConflictDoNothing().returning();
  if (!inserted) throw await entryExists(tx, row);
  events.push(entryEvent(memoryEvents.created, inserted, null, actingAgent(caller)));
  return inserted;
}

/** The checks of createNeedsChecks, in the create's transaction; evictions add their events. */
async function checkCreate(ctx: MemoryContext, tx: Tx, prepared: PreparedCreate, caller: Caller, events: NewMemoryEvent[]): Promise<void> {
  const { row } = prepared;
  if (row.memoryType === "working" && row.taskId) {
    // Under a share lock on the task record: the task-end consumer marks it ended (a row lock)
    // before deleting the task's working memory, so an entry either commits before that delete
    // (and is archived with the rest) or sees the end here.
    const [task] = await tx.select({ ended: tasks.ended }).from(tasks).where(eq(tasks.taskId, row.taskId)).for("share");
    if (task?.ended) throw taskEnded(row.taskId);
  }
  if (row.memoryType === "episodic") events.push(...(await makeRoomForEpisodic(ctx, tx, row.agentId, actingAgent(caller))));
  if (row.memoryType === "working" && row.taskId && prepared.task) await assertWorkingRoom(ctx, tx, row.taskId, prepared.task, 1, row.valueBytes);
}

/** 409 ENTRY_EXISTS for a create whose key is taken (2.14 uniqueness), naming the entry that holds it. */
async function entryExists(db: Pick<Tx, "select">, row: EntryRow): Promise<AppError> {
  const where =
    row.memoryType === "semantic"
      ? sql`${entries.memoryType} = 'semantic' and ${entries.namespace} = ${row.namespace} and ${entries.key} = ${row.key}`
      : sql`${entries.memoryType} <> 'semantic' and ${entries.agentId} = ${row.agentId} and ${entries.namespace} = ${row.namespace} and ${entries.key} = ${row.key}`;
  const [existing] = await db.select({ id: entries.id, memoryType: entries.memoryType, version: entries.version }).from(entries).where(where);
  return appError("ENTRY_EXISTS", `an entry with namespace ${row.namespace} and key ${row.key} already exists${row.memoryType === "semantic" ? "" : ` for agent ${row.agentId}`}; update it with PATCH /memory/{id}`,
    { entry_id: existing?.id ?? null, memory_type: existing?.memoryType ?? null },
    { entry_id: existing?.id ?? null, current_version: existing?.version ?? null },
  );
}

/**
 * POST /memory. Its intent's ACL and governance policy are asked in one request before the
 * create's own rules (checkScopeWrites, where the ACL wrapper asked the ACL), each verdict
 * applied where it was applied when asked apart.
 */
export async function createEntry(ctx: MemoryContext, body: CreateMemoryBody, caller: Caller): Promise<MemoryEntry> {
  const now = ctx.clock.now();
  const checked = await checkScopeWrites(ctx, creatingCaller(caller, body), body.scope);
  const prepared = await prepareCreate(ctx, body, caller, now, checked);
  if (!createNeedsChecks(prepared.row)) {
    const { row } = prepared;
    const [event] = memoryEventMessages([entryEvent(memoryEvents.created, row, null, actingAgent(caller))], now);
    if (!(await createInOneStatement(ctx.query, row, event!))) throw await entryExists(ctx.db, row);
    ctx.published();
    return toEntry(row);
  }
  const row = await ctx.db.transaction(async (tx) => {
    const events: NewMemoryEvent[] = [];
    const inserted = await insertPrepared(ctx, tx, prepared, caller, events);
    await writeMemoryEvents(tx, events, now);
    return inserted;
  });
  ctx.published();
  return toEntry(row);
}

export async function findEntry(ctx: MemoryContext, id: string): Promise<EntryRow> {
  const row = await selectEntry(ctx.db, id);
  if (!row) throw entryNotFound(id);
  return row;
}

const factsOf = (row: EntryRow) => ({ id: row.id, agentId: row.agentId, memoryType: row.memoryType as "working", namespace: row.namespace, taskId: row.taskId });

/** GET /memory/{id}. A read by an agent that may write the entry counts as a use (episodic LRU). */
export async function getEntry(ctx: MemoryContext, id: string, caller: Caller): Promise<MemoryEntry> {
  const row = await findEntry(ctx, id);
  const access = await assertAccess(ctx, caller, factsOf(row), "read");
  if (access === "write" && row.memoryType === "episodic") {
    await touchEntry(ctx.db, id, ctx.clock.now());
  }
  return toEntry(row);
}

/** The 409 of rule 1: the body carries the current entry (its fields at the top level) and current_version. */
export function versionMismatch(current: EntryRow, expected: number): AppError {
  const entry = toEntry(current);
  return appError("VERSION_MISMATCH", `memory entry ${current.id} is at version ${current.version}, not ${expected}`,
    { resource: "memory entry", id: current.id, current_version: current.version, expected_version: expected },
    { ...entry, current_version: current.version },
  );
}

/**
 * Applies an update to a locked, access-checked row: conditional on the version, version + 1,
 * expiry recomputed when ttl or expires_at change, working capacity checked on growth.
 */
export async function applyUpdate(ctx: MemoryContext, tx: Tx, current: EntryRow, expected: number, body: PatchMemoryBody, caller: Caller, now: Date, events: NewMemoryEvent[]): Promise<EntryRow> {
  if (current.version !== expected) throw versionMismatch(current, expected);
  if (current.memoryType !== "episodic") {
    if (body.pinned !== undefined) throw episodicOnly("pinned", current.memoryType);
    if (body.priority !== undefined) throw episodicOnly("priority", current.memoryType);
  }
  const changes: Partial<EntryRow> = { updatedAt: now, lastUsedAt: now };
  if (body.value !== undefined) {
    changes.value = body.value;
    changes.valueBytes = jsonBytes(body.value);
  }
  if (body.tags !== undefined) changes.tags = [...new Set(body.tags)];
  if (body.pinned !== undefined) changes.pinned = body.pinned;
  if (body.priority !== undefined) changes.priority = PRIORITY_RANK[body.priority];
  if (body.sensitivity !== undefined) changes.sensitivity = body.sensitivity;
  if (body.ttl !== undefined || body.expires_at !== undefined) {
    const ttl = body.ttl === undefined ? current.ttl : body.ttl;
    const expiry = expiryOf(now, ttl, body.expires_at ?? null, current.taskId);
    if (!expiry.ok) throw errors.validation(expiry.reason);
    changes.ttl = ttl;
    changes.expiresAt = expiry.expiresAt;
  }
  if (current.memoryType === "working" && current.taskId && changes.valueBytes !== undefined && changes.valueBytes > current.valueBytes) {
    // The local record only: no bus request inside the transaction (the create already fetched it).
    const task = await loadLocalTask(tx, current.taskId);
    if (task) {
      await assertWorkingRoom(ctx, tx, current.taskId, { maxEntries: task.memoryPolicy.max_entries, maxTotalSizeKb: task.memoryPolicy.max_total_size_kb }, 0, changes.valueBytes - current.valueBytes);
    }
  }
  const row = await updateEntryStatement(tx, current.id, expected, changes);
  if (!row) throw versionMismatch(current, expected);
  events.push(entryEvent(memoryEvents.updated, row, current.version, actingAgent(caller)));
  return row;
}

/**
 * PATCH /memory/{id}: If-Match required (428), 409 VERSION_MISMATCH with the current entry. The
 * entry's intent's ACL and governance policy in one request, after the entry's one read (the ACL
 * wrapper read its intent apart), each verdict applied where it was when asked apart.
 */
export async function patchEntry(ctx: MemoryContext, id: string, ifMatch: number | null, body: PatchMemoryBody, caller: Caller): Promise<MemoryEntry> {
  const existing = await findEntry(ctx, id);
  const checked = await checkIntentWrites(ctx, caller, [existing.intentId]);
  await assertAccess(ctx, caller, factsOf(existing), "write");
  if (ifMatch === null) throw errors.preconditionRequired("memory entry");
  await checked.assertGovernance(existing.intentId);
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    const current = await lockEntry(tx, id);
    if (!current) throw entryNotFound(id);
    const events: NewMemoryEvent[] = [];
    const updated = await applyUpdate(ctx, tx, current, ifMatch, body, caller, now, events);
    await writeMemoryEvents(tx, events, now);
    return updated;
  });
  ctx.published();
  return toEntry(row);
}

/** DELETE /memory/{id}: immediate and irreversible; memory.deleted. Checked as a PATCH. */
export async function deleteEntry(ctx: MemoryContext, id: string, caller: Caller): Promise<{ status: "deleted"; entry_id: string }> {
  const existing = await findEntry(ctx, id);
  const checked = await checkIntentWrites(ctx, caller, [existing.intentId]);
  await assertAccess(ctx, caller, factsOf(existing), "write");
  await checked.assertGovernance(existing.intentId);
  const now = ctx.clock.now();
  await ctx.db.transaction(async (tx) => {
    const [row] = await tx.delete(entries).where(eq(entries.id, id)).returning();
    if (!row) throw entryNotFound(id);
    await writeMemoryEvents(tx, [entryEvent(memoryEvents.deleted, row, row.version, actingAgent(caller))], now);
  });
  ctx.published();
  return { status: "deleted", entry_id: id };
}
