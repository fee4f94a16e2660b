import { bigint, index, integer, jsonb, pgSchema, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { inboxTable } from "@intentmesh/db";
import { outboxTable } from "@intentmesh/bus";
import type { CommandResult, federationCommands } from "@intentmesh/contracts";

/** The federation service owns this schema; no other service reads it. */
export const federationSchema = pgSchema("federation");

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/**
 * Outbound dispatches. (principal, idempotency_key) is unique: a retry with the same key, on any
 * replica and after any restart, finds this row and gets its stored answer instead of a second
 * dispatch. status: sending (a replica is calling the peer), accepted, failed (a retry may send again).
 */
export const dispatches = federationSchema.table(
  "dispatches",
  {
    dispatchId: uuid("dispatch_id").primaryKey(),
    principal: text("principal").notNull(),
    idempotencyKey: text("idempotency_key").notNull(),
    intentId: uuid("intent_id").notNull(),
    targetServer: text("target_server").notNull(),
    targetDid: text("target_did").notNull(),
    agentId: text("agent_id"),
    status: text("status").notNull(),
    /** The request fingerprint: a retry with the same key and another body is refused. */
    requestHash: text("request_hash").notNull(),
    /** The answer returned to the caller once accepted (also to every retry). */
    answer: jsonb("answer").$type<CommandResult<typeof federationCommands.dispatch>>(),
    lastError: jsonb("last_error").$type<Record<string, unknown>>(),
    remoteIntentId: text("remote_intent_id"),
    attempts: integer("attempts").notNull().default(0),
    claimedAt: ts("claimed_at").notNull(),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
  },
  (t) => [uniqueIndex("dispatches_key_idx").on(t.principal, t.idempotencyKey)],
);

/** Inbound dispatches, one per (source_did, idempotency_key): a peer's retry gets the first answer. */
export const receivedDispatches = federationSchema.table(
  "received_dispatches",
  {
    id: uuid("id").primaryKey(),
    sourceDid: text("source_did").notNull(),
    idempotencyKey: text("idempotency_key").notNull(),
    /** The dispatch id the origin chose; the callbacks carry it. */
    dispatchId: uuid("dispatch_id").notNull(),
    sourceServer: text("source_server").notNull(),
    callbackUrl: text("callback_url").notNull(),
    originIntentId: uuid("origin_intent_id").notNull(),
    localIntentId: uuid("local_intent_id"),
    agentId: text("agent_id"),
    status: text("status").notNull(),
    governance: jsonb("governance").$type<Record<string, unknown>>().notNull(),
    delegationScope: jsonb("delegation_scope").$type<Record<string, unknown>>().notNull(),
    answer: jsonb("answer").$type<CommandResult<typeof federationCommands.receive>>(),
    createdAt: ts("created_at").notNull(),
  },
  (t) => [uniqueIndex("received_key_idx").on(t.sourceDid, t.idempotencyKey), index("received_local_intent_idx").on(t.localIntentId)],
);

/** Nonces of verified signatures, kept until the signature expires: a replayed request is refused. */
export const seenNonces = federationSchema.table(
  "seen_nonces",
  {
    keyId: text("key_id").notNull(),
    nonce: text("nonce").notNull(),
    expiresAt: ts("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.nonce] }), index("seen_nonces_expiry_idx").on(t.expiresAt)],
);

/**
 * Callbacks to send to the origin of a received dispatch: written in the transaction that
 * consumes the intent event (with the inbox row), sent by the callback sender, kept until
 * delivered. A crash loses nothing: an unsent row is sent by the next pass of any replica.
 */
export const outgoingCallbacks = federationSchema.table(
  "outgoing_callbacks",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    idempotencyKey: text("idempotency_key").notNull().unique(),
    receivedId: uuid("received_id").notNull(),
    url: text("url").notNull(),
    /** The callback body, as it will be signed and sent. */
    body: text("body").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: ts("next_attempt_at").notNull(),
    deliveredAt: ts("delivered_at"),
    lastError: text("last_error"),
    createdAt: ts("created_at").notNull(),
  },
  (t) => [index("outgoing_callbacks_due_idx").on(t.nextAttemptAt)],
);

/** Callbacks received for our own dispatches, by idempotency key: a resent callback is applied once. */
export const incomingCallbacks = federationSchema.table("incoming_callbacks", {
  idempotencyKey: text("idempotency_key").primaryKey(),
  dispatchId: uuid("dispatch_id").notNull(),
  eventType: text("event_type").notNull(),
  receivedAt: ts("received_at").notNull(),
});

export const outbox = outboxTable(federationSchema);
export const inbox = inboxTable(federationSchema);
