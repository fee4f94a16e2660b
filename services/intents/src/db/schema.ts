import { sql } from "drizzle-orm";
import { bigint, boolean, doublePrecision, index, integer, jsonb, pgSchema, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { inboxTable } from "@intentmesh/db";
import { outboxTable } from "@intentmesh/bus";

/** The intents service owns this schema; no other service reads it. */
export const intentsSchema = pgSchema("intents");

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const intents = intentsSchema.table(
  "intents",
  {
    id: uuid("id").primaryKey(),
    title: text("title").notNull(),
    description: text("description"),
    createdBy: text("created_by").notNull(),
    status: text("status").notNull(),
    constraints: jsonb("constraints").$type<Record<string, unknown>>().notNull(),
    state: jsonb("state").$type<Record<string, unknown>>().notNull(),
    confidence: doublePrecision("confidence").notNull(),
    version: integer("version").notNull(),
    /** Last sequence number used in this intent's event log; bumping it locks the row, so sequences have no gaps. */
    eventSeq: bigint("event_seq", { mode: "number" }).notNull().default(0),
    /**
     * Bumped whenever the set of leases on the intent changes (acquire, release, expiry). A state
     * write checked against the leases it read commits only if this is unchanged, so a lease
     * granted meanwhile can never be written past.
     */
    leaseEpoch: integer("lease_epoch").notNull().default(0),
    /**
     * The head of the RFC 0019 hash chain (docs/verifiable-logs.md): the event_hash and
     * previous_event_hash of the event at sequence `chain_seq`. The hot statements that take the
     * next sequence (kernel/statements.ts) hash the new event from it in the same UPDATE, under the
     * row lock, with no lookup of the previous event. It is current only while chain_seq =
     * event_seq: a writer that does not keep it (the budget statement, hashed by the trigger
     * fallback) leaves it behind, and the next writer reads the previous event instead.
     */
    chainSeq: bigint("chain_seq", { mode: "number" }).notNull().default(0),
    chainHead: text("chain_head"),
    chainPrevious: text("chain_previous"),
    /** Why a blocked intent is blocked, when the server blocked it (`budget_exceeded`); cleared by every status change. */
    blockedReason: text("blocked_reason"),
    /**
     * The intent's governance policy (spec 2.11), as PUT /intents/{id}/governance stored it; null
     * when none. It lives in the intent's own versioned row so every mutation reads it with the
     * row it changes: a PUT that answered binds every later write on every replica.
     */
    governancePolicy: jsonb("governance_policy").$type<Record<string, unknown>>(),
    /**
     * The intent's access-control list (RFC-0011, db/schema-acl.ts): its default policy (open,
     * closed), null when the intent has none; like the governance policy it lives in the row every
     * request reads, so "no ACL" costs the hot paths nothing and a change binds every later request.
     */
    aclPolicy: text("acl_policy"),
    /** What an open policy gives principals without an entry: read, write or admin. */
    aclDefault: text("acl_default"),
    /** The principal (API key) that created the ACL; it holds admin. */
    aclOwner: text("acl_owner"),
    /** Bumped by every change of the ACL or its entries (0: never had one). */
    aclVersion: integer("acl_version").notNull().default(0),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
    /**
     * RFC-0002 (services/intents/src/graph): the parent, set at creation and never changed, so
     * parent links form a forest without a check; an intent is never deleted, so no foreign key
     * is needed to keep it pointing at one.
     */
    parentIntentId: uuid("parent_intent_id"),
    /**
     * The intents this one depends on, in the row every read takes anyway (the wire intent carries
     * it). Acyclic: every addition is checked under one graph-wide advisory lock (graph/statements.ts).
     */
    dependsOn: uuid("depends_on").array().notNull().default(sql`'{}'::uuid[]`),
  },
  (t) => [
    index("intents_created_idx").on(t.createdAt.desc(), t.id.desc()),
    index("intents_status_idx").on(t.status, t.createdAt.desc()),
    index("intents_created_by_idx").on(t.createdBy, t.createdAt.desc()),
    index("intents_parent_idx").on(t.parentIntentId, t.createdAt, t.id).where(sql`parent_intent_id is not null`),
    index("intents_depends_on_idx").using("gin", t.dependsOn),
  ],
);

export const events = intentsSchema.table(
  "events",
  {
    id: uuid("id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    sequence: bigint("sequence", { mode: "number" }).notNull(),
    eventType: text("event_type").notNull(),
    actor: text("actor").notNull(),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    createdAt: ts("created_at").notNull(),
    /**
     * The event exactly as the API and the bus carry it, frozen when it is written (events are
     * immutable), so a page of the log is a concatenation, not a re-encoding.
     */
    wire: text("wire").notNull(),
    /** Tracing links a client gave the event it appended (null for the server's own events). */
    traceId: text("trace_id"),
    parentEventId: uuid("parent_event_id"),
    /**
     * RFC 0019 hash chain, set by the database (trigger intents.events_chain, migration 0009) on
     * every insert, whichever statement writes the row: `sha256:<base64url>` of the canonical JSON
     * of the wire form with previous_event_hash in it. Null only while migration 0009 has not run.
     */
    eventHash: text("event_hash"),
    previousEventHash: text("previous_event_hash"),
    /**
     * Transient, always null once stored: read by the hash-chain trigger fallback (migration
     * 0009) instead of canonicalising the jsonb again, then cleared. The service's writers now hash
     * their events themselves (kernel/event-chain.ts) and never set it; a replica of the release
     * before them still may, during a rolling update.
     */
    payloadCanonical: text("payload_canonical"),
  },
  (t) => [
    uniqueIndex("events_intent_sequence_idx").on(t.intentId, t.sequence),
    index("events_intent_type_idx").on(t.intentId, t.eventType, t.sequence),
    // RFC-0020: a trace's events on one intent (GET /intents/{id}/traces/{trace_id}).
    index("events_intent_trace_idx").on(t.intentId, t.traceId, t.sequence).where(sql`${t.traceId} is not null`),
  ],
);

export const assignments = intentsSchema.table(
  "assignments",
  {
    intentId: uuid("intent_id").notNull(),
    agentId: text("agent_id").notNull(),
    role: text("role"),
    assignedBy: text("assigned_by").notNull(),
    assignedAt: ts("assigned_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.intentId, t.agentId] })],
);

export const leases = intentsSchema.table(
  "leases",
  {
    id: uuid("id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    agentId: text("agent_id").notNull(),
    scope: text("scope").notNull(),
    /** Normalized scope ("/research/", "*" is "/"); overlap is a prefix test on it. */
    scopeKey: text("scope_key").notNull(),
    acquiredAt: ts("acquired_at").notNull(),
    expiresAt: ts("expires_at").notNull(),
    releasedAt: ts("released_at"),
    /** True until the lease is released or swept as expired: only holding leases occupy their scope. */
    holdsScope: boolean("holds_scope").notNull().default(true),
    /** Why the lease stopped holding: released, expired, agent_dead, fallback (handed to a fallback agent). */
    endReason: text("end_reason"),
    endedAt: ts("ended_at"),
  },
  (t) => [
    uniqueIndex("leases_held_scope_idx").on(t.intentId, t.scopeKey).where(sql`${t.holdsScope}`),
    index("leases_due_idx").on(t.expiresAt).where(sql`${t.holdsScope}`),
    index("leases_agent_held_idx").on(t.agentId).where(sql`${t.holdsScope}`),
    index("leases_intent_idx").on(t.intentId, t.acquiredAt),
  ],
);

export const outbox = outboxTable(intentsSchema);
export const inbox = inboxTable(intentsSchema);
