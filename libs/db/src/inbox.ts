import { param, sql } from "drizzle-orm";
import { getTableConfig, text, timestamp, primaryKey, type PgSchema } from "drizzle-orm/pg-core";
import { rowsOf, type Queryable } from "./database";
import { withParams } from "./statement";

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
  const inserted = rowsOf<{ message_id: string }>(await tx.execute(withParams(claimText(inbox), [consumer, param(messageIds)])));
  return new Set(inserted.map((row) => row.message_id));
}

/**
 * The claim as SQL text made once per inbox table: every message of every durable consumer runs
 * it, and building the multi-row INSERT with the query builder cost more CPU than running it
 * (the registry's memory projection, docs/benchmarks.md). unnest keeps the text one shape for any
 * batch size (the ids go as one array parameter: `param`, as withParams would spread a bare array
 * into a list); processed_at takes its default as before.
 */
const claimTexts = new WeakMap<InboxTable, string>();
function claimText(inbox: InboxTable): string {
  let text = claimTexts.get(inbox);
  if (!text) {
    const { schema, name } = getTableConfig(inbox);
    text = `insert into ${schema ? `"${schema}".` : ""}"${name}" (consumer, message_id) select $1::text, m from unnest($2::text[]) as m on conflict do nothing returning message_id`;
    claimTexts.set(inbox, text);
  }
  return text;
}

/** Removes inbox rows older than the stream's duplicate window could ever redeliver. */
export async function pruneInbox(db: Queryable, inbox: InboxTable, olderThan: Date): Promise<void> {
  await db.delete(inbox).where(sql`${inbox.processedAt} < ${olderThan}`);
}
