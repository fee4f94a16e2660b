import { bigint, index, integer, jsonb, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { intentsSchema } from "./schema";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/**
 * Signed checkpoints of intents' event logs (RFC 0019 section 3): a Merkle root over a batch of
 * consecutive events. Batches of one intent never overlap (unique first_sequence; each one starts
 * after the last one's last_sequence, under a per-intent advisory lock). Immutable but for the
 * anchor, which is set at most once.
 */
export const checkpoints = intentsSchema.table(
  "checkpoints",
  {
    id: uuid("id").primaryKey(),
    intentId: uuid("intent_id").notNull(),
    scope: text("scope").notNull(),
    merkleRoot: text("merkle_root").notNull(),
    eventCount: integer("event_count").notNull(),
    firstSequence: bigint("first_sequence", { mode: "number" }).notNull(),
    lastSequence: bigint("last_sequence", { mode: "number" }).notNull(),
    /** The instant as it was signed (the wire's created_at string is derived from it). */
    createdAt: ts("created_at").notNull(),
    signedBy: text("signed_by").notNull(),
    signature: text("signature").notNull(),
    anchor: jsonb("anchor").$type<Record<string, unknown>>(),
  },
  (t) => [
    uniqueIndex("checkpoints_intent_first_idx").on(t.intentId, t.firstSequence),
    index("checkpoints_intent_last_idx").on(t.intentId, t.lastSequence),
    index("checkpoints_created_idx").on(t.createdAt, t.id),
  ],
);
