import { sql } from "drizzle-orm";
import { text, timestamp, primaryKey, type PgSchema } from "drizzle-orm/pg-core";
import type { Queryable } from "./database";

/**
 * The inbox of an idempotent consumer: one row per (consumer, message id) already applied.
 * A consumer inserts its row in the same transaction as the message's effects, so a redelivered
 * message finds the row and applies nothing twice.
 */
export function inboxTable(schema: PgSchema) {
  return schema.table(
    "inbox",
    {
      consumer: text("consumer").notNull(),
      messageId: text("message_id").notNull(),
      processedAt: timestamp("processed_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    },
    (t) => [primaryKey({ columns: [t.consumer, t.messageId] })],
  );
}
export type InboxTable = ReturnType<typeof inboxTable>;

/**
 * Records many messages as processed in one statement: the ids that were not recorded yet. An id
 * given twice is returned once (the second insert conflicts with the first).
 */
export async function claimInboxMessages(tx: Queryable, inbox: InboxTable, consumer: string, messageIds: string[]): Promise<Set<string>> {
  if (!messageIds.length) return new Set();
  const inserted = await tx
    .insert(inbox)
    .values(messageIds.map((messageId) => ({ consumer, messageId })))
    .onConflictDoNothing()
    .returning({ messageId: inbox.messageId });
  return new Set(inserted.map((row) => row.messageId));
}

/** Removes inbox rows older than the stream's duplicate window could ever redeliver. */
export async function pruneInbox(db: Queryable, inbox: InboxTable, olderThan: Date): Promise<void> {
  await db.delete(inbox).where(sql`${inbox.processedAt} < ${olderThan}`);
}
