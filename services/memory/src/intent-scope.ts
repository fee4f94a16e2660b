import { and, eq, inArray } from "drizzle-orm";
import type { memoryCommands, ParsedInput } from "@intentmesh/contracts";
import type { MemoryContext } from "./context";
import { entries } from "./db/schema";
import { loadTask } from "./task-views";

type Commands = typeof memoryCommands;
type Scope = { task_id?: string | null; intent_id?: string | null } | null | undefined;

/**
 * The intents a memory request touches (RFC-0011 with spec 5.6: memory scoped to an intent is
 * the intent's), for the ACL check made before the request runs (service.ts): the scope it
 * writes or filters on (a task's scope is its task's intent), and the scope of every existing
 * entry it names. An entry or a task that does not exist touches nothing: its handler answers 404.
 * Requests about no intent (an agent's own entries without a scope, semantic namespaces) touch none.
 */
export async function intentsTouched(ctx: MemoryContext, command: keyof Commands, input: unknown): Promise<string[]> {
  switch (command) {
    // create, patch and delete check their own writes in one request (scope-write-checks.ts).
    case "get":
      return entryIntents(ctx, [(input as { entry_id: string }).entry_id]);
    case "query": {
      const query = (input as ParsedInput<Commands["query"]>).query;
      return scopeIntents(ctx, { intent_id: query["scope.intent_id"], task_id: query["scope.task_id"] });
    }
    case "batch": {
      const items = (input as ParsedInput<Commands["batch"]>).body.entries;
      const named = items.flatMap((item) => ("id" in item && typeof item.id === "string" ? [item.id] : []));
      const scoped = await Promise.all(items.map((item) => ("scope" in item ? scopeIntents(ctx, item.scope as Scope) : Promise.resolve([]))));
      return [...(await entryIntents(ctx, named)), ...scoped.flat()];
    }
    case "deleteBatch":
      return scopeIntents(ctx, (input as ParsedInput<Commands["deleteBatch"]>).body.scope);
    case "lookup":
    case "put": {
      const { agent_id, namespace, key } = input as ParsedInput<Commands["lookup"]>;
      const rows = await ctx.db
        .select({ intentId: entries.intentId })
        .from(entries)
        .where(and(eq(entries.agentId, agent_id), eq(entries.namespace, namespace), eq(entries.key, key)));
      const body = command === "put" ? (input as ParsedInput<Commands["put"]>).body : undefined;
      return [...rows.flatMap((row) => (row.intentId ? [row.intentId] : [])), ...(await scopeIntents(ctx, body?.scope as Scope))];
    }
    default:
      return [];
  }
}

async function scopeIntents(ctx: MemoryContext, scope: Scope): Promise<string[]> {
  const found: string[] = [];
  if (scope?.intent_id) found.push(scope.intent_id);
  if (scope?.task_id) {
    const task = await loadTask(ctx, scope.task_id);
    if (task) found.push(task.intentId);
  }
  return found;
}

async function entryIntents(ctx: MemoryContext, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await ctx.db.select({ intentId: entries.intentId }).from(entries).where(inArray(entries.id, ids));
  return rows.flatMap((row) => (row.intentId ? [row.intentId] : []));
}
