import { sql } from "drizzle-orm";
import { boolean, index, integer, jsonb, pgSchema, smallint, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { inboxTable } from "@intentmesh/db";
import { outboxTable } from "@intentmesh/bus";
import type { MemoryPolicy } from "@intentmesh/contracts";

/** The memory service owns this schema; no other service reads it. */
export const memorySchema = pgSchema("memory");

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const entries = memorySchema.table(
  "entries",
  {
    id: uuid("id").primaryKey(),
    agentId: text("agent_id").notNull(),
    namespace: text("namespace").notNull(),
    key: text("key").notNull(),
    value: jsonb("value").$type<Record<string, unknown>>().notNull(),
    /** Bytes of the value's JSON: working-memory size limits and summaries add these up. */
    valueBytes: integer("value_bytes").notNull(),
    memoryType: text("memory_type").notNull(),
    taskId: uuid("task_id"),
    intentId: uuid("intent_id"),
    tags: text("tags").array().notNull().default(sql`'{}'::text[]`),
    ttl: text("ttl"),
    version: integer("version").notNull(),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
    /** Least-recently-used order of episodic eviction: set on create, update and single reads. */
    lastUsedAt: ts("last_used_at").notNull(),
    expiresAt: ts("expires_at"),
    pinned: boolean("pinned"),
    /** low 0, normal 1, high 2 (episodic only): lower priority is evicted first. */
    priority: smallint("priority"),
    curatedBy: text("curated_by"),
    sensitivity: text("sensitivity"),
  },
  (t) => [
    // 2.14 uniqueness: (agent_id, namespace, key) for working and episodic, (namespace, key) for semantic.
    uniqueIndex("entries_owned_key_uq").on(t.agentId, t.namespace, t.key).where(sql`${t.memoryType} <> 'semantic'`),
    uniqueIndex("entries_semantic_key_uq").on(t.namespace, t.key).where(sql`${t.memoryType} = 'semantic'`),
    // fastupdate off: a GIN index's pending list (where fastupdate parks new entries until vacuum
    // merges them) is read in full by every query, so a query right after a burst of writes would
    // cost more the more was written since the last vacuum. Writes update the index directly.
    index("entries_tags_gin").using("gin", t.tags).with({ fastupdate: false }),
    index("entries_owner_idx").on(t.agentId, t.memoryType, t.namespace.op("text_pattern_ops")),
    index("entries_semantic_ns_idx").on(t.namespace.op("text_pattern_ops")).where(sql`${t.memoryType} = 'semantic'`),
    index("entries_task_idx").on(t.taskId).where(sql`${t.taskId} is not null`),
    index("entries_expiry_idx").on(t.expiresAt).where(sql`${t.expiresAt} is not null`),
    index("entries_eviction_idx").on(t.agentId, t.priority, t.lastUsedAt).where(sql`${t.memoryType} = 'episodic' and ${t.pinned} = false`),
  ],
);

/** Permission objects of semantic namespaces (2.14); a namespace without one has {default: read, allow: []}. */
export const namespaces = memorySchema.table("namespaces", {
  namespace: text("namespace").primaryKey(),
  permissions: jsonb("permissions").$type<{ default: string; allow: { agent: string; access: string }[] }>().notNull(),
  version: integer("version").notNull(),
  updatedBy: text("updated_by").notNull(),
  createdAt: ts("created_at").notNull(),
  updatedAt: ts("updated_at").notNull(),
});

/** Per-agent episodic capacity, when an admin or coordinator set one (else the server's default). */
export const agentSettings = memorySchema.table("agent_settings", {
  agentId: text("agent_id").primaryKey(),
  episodicCapacity: integer("episodic_capacity"),
  updatedAt: ts("updated_at").notNull(),
});

/**
 * The tasks of the intents service, as far as memory needs them (who holds and held them, who
 * created them, the parent, the memory policy, whether they ended): a projection refreshed from
 * the intents' task events and, on a miss, from im.intents.tasks.get.
 */
export const tasks = memorySchema.table(
  "tasks",
  {
    taskId: uuid("task_id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    parentTaskId: uuid("parent_task_id"),
    createdBy: text("created_by").notNull(),
    assignedAgent: text("assigned_agent"),
    previousAgents: text("previous_agents").array().notNull().default(sql`'{}'::text[]`),
    memoryPolicy: jsonb("memory_policy").$type<MemoryPolicy>().notNull(),
    status: text("status").notNull(),
    ended: boolean("ended").notNull().default(false),
    version: integer("version").notNull(),
  },
  (t) => [
    index("tasks_parent_idx").on(t.parentTaskId).where(sql`${t.parentTaskId} is not null`),
    index("tasks_assigned_idx").on(t.assignedAgent),
    index("tasks_created_by_idx").on(t.createdBy),
  ],
);

export const outbox = outboxTable(memorySchema);
export const inbox = inboxTable(memorySchema);
