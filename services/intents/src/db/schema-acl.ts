import { sql } from "drizzle-orm";
import { bigint, index, jsonb, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { intentsSchema } from "./schema";

/**
 * Access control of intents (RFC-0011, docs/access-control.md). Whether an intent has an ACL, its
 * default policy, default permission, owner and version live in the intent's own row (acl_*
 * columns of intents.intents), so the hot paths see "no ACL" in the row they read anyway; the
 * entries and the access requests live here.
 */

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/** One entry per principal (type and id) and intent; a grant to a principal that has one replaces it. */
export const aclEntries = intentsSchema.table(
  "acl_entries",
  {
    id: uuid("id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    /** user (an API key's principal), agent (an acting agent), group (an API key role). */
    principalType: text("principal_type").notNull(),
    principalId: text("principal_id").notNull(),
    /** read, write or admin (cumulative). */
    permission: text("permission").notNull(),
    grantedBy: text("granted_by").notNull(),
    grantedAt: ts("granted_at").notNull(),
    /** Null: until revoked. Past it the entry grants nothing, whether or not the sweeper has removed it yet. */
    expiresAt: ts("expires_at"),
    reason: text("reason"),
  },
  (t) => [
    uniqueIndex("acl_entries_principal_idx").on(t.intentId, t.principalType, t.principalId),
    index("acl_entries_expiry_idx").on(t.expiresAt).where(sql`${t.expiresAt} is not null`),
  ],
);

export const accessRequests = intentsSchema.table(
  "access_requests",
  {
    id: uuid("id").primaryKey(),
    /** Insertion order: lists are oldest first even when several requests share a timestamp. */
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
    intentId: uuid("intent_id").notNull(),
    principalType: text("principal_type").notNull(),
    principalId: text("principal_id").notNull(),
    requestedPermission: text("requested_permission").notNull(),
    reason: text("reason").notNull(),
    capabilities: jsonb("capabilities").$type<string[]>().notNull(),
    /** The API key principal that sent it. */
    requestedBy: text("requested_by").notNull(),
    /** pending, approved, denied. */
    status: text("status").notNull(),
    decidedBy: text("decided_by"),
    decidedAt: ts("decided_at"),
    decisionReason: text("decision_reason"),
    /** The entry an approval granted. */
    entryId: uuid("entry_id"),
    createdAt: ts("created_at").notNull(),
  },
  (t) => [index("access_requests_intent_idx").on(t.intentId, t.seq), index("access_requests_pending_idx").on(t.intentId).where(sql`${t.status} = 'pending'`)],
);
