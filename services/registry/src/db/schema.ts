import { sql } from "drizzle-orm";
import { bigint, index, integer, jsonb, pgSchema, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { inboxTable } from "@intentmesh/db";
import { outboxTable } from "@intentmesh/bus";
import type { PendingCommand } from "@intentmesh/contracts";

/** The registry service owns this schema; no other service reads it. */
export const registrySchema = pgSchema("registry");

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/** Created with fillfactor 80 (migration 0000), leaving room for heartbeats' in-place updates. */
export const agents = registrySchema.table(
  "agents",
  {
    agentId: text("agent_id").primaryKey(),
    /** The principal of the API key that registered the agent: the only key its heartbeats are taken from. */
    ownerPrincipal: text("owner_principal").notNull(),
    roleId: text("role_id"),
    name: text("name"),
    capabilities: text("capabilities").array().notNull().default(sql`'{}'::text[]`),
    maxConcurrentTasks: integer("max_concurrent_tasks"),
    currentLoad: integer("current_load").notNull().default(0),
    tasksInProgress: text("tasks_in_progress").array().notNull().default(sql`'{}'::text[]`),
    status: text("status").notNull(),
    endpoint: text("endpoint"),
    intervalSeconds: integer("interval_seconds").notNull(),
    unhealthyAfterSeconds: integer("unhealthy_after_seconds").notNull(),
    deadAfterSeconds: integer("dead_after_seconds").notNull(),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    originServerUrl: text("origin_server_url"),
    registeredAt: ts("registered_at").notNull(),
    lastHeartbeatAt: ts("last_heartbeat_at").notNull(),
    version: integer("version").notNull(),
    drainDeadline: ts("drain_deadline"),
    /** Commands waiting for the agent's next heartbeat (server-initiated drain). */
    pendingCommands: jsonb("pending_commands").$type<PendingCommand[]>().notNull().default(sql`'[]'::jsonb`),
    /**
     * When the sweeper must next look at this agent (the next silence deadline, drain check or
     * drain timeout); null when no timer runs (dead, deregistered). The sweeper reads only rows
     * that are due, through the partial index, so a tick costs O(agents due).
     */
    nextCheckAt: ts("next_check_at"),
    /** Last sequence number of the agent's event log. */
    eventSeq: bigint("event_seq", { mode: "number" }).notNull().default(0),
    updatedAt: ts("updated_at").notNull(),
  },
  (t) => [
    index("agents_due_idx").on(t.nextCheckAt).where(sql`${t.nextCheckAt} is not null`),
    index("agents_draining_due_idx").on(t.nextCheckAt).where(sql`${t.status} = 'draining'`),
    // Few indexes on purpose: every transition and heartbeat moves next_check_at, so each update
    // writes an entry into every index of the table; listing filters on the rows these find.
    index("agents_role_idx").on(t.roleId),
    index("agents_capabilities_idx").using("gin", t.capabilities),
  ],
);

/** Each agent's own append-only log: lifecycle transitions, assignments, commands. */
export const agentEvents = registrySchema.table(
  "agent_events",
  {
    agentId: text("agent_id").notNull(),
    sequence: bigint("sequence", { mode: "number" }).notNull(),
    id: uuid("id").notNull(),
    eventType: text("event_type").notNull(),
    actor: text("actor").notNull(),
    createdAt: ts("created_at").notNull(),
    /**
     * The event as the API and the bus carry it (payload included), frozen at write time: the
     * log is read back as these texts, never re-encoded.
     */
    wire: text("wire").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.sequence] })],
);

export const outbox = outboxTable(registrySchema);
export const inbox = inboxTable(registrySchema);
