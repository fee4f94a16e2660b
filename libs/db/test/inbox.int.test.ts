import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { pgSchema } from "drizzle-orm/pg-core";
import { afterAll, describe, expect, inject, it } from "vitest";
import { openDatabase, type DatabaseHandle } from "../src/database";
import { claimInboxMessages, inboxTable } from "../src/inbox";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "im-inbox-"));
const schemaName = `inbox_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const inbox = inboxTable(pgSchema(schemaName));
const opened: DatabaseHandle[] = [];
afterAll(async () => {
  for (const handle of opened) {
    await handle.db.execute(sql.raw(`drop schema if exists ${schemaName} cascade`));
    await handle.close();
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

async function open(url: string | undefined): Promise<DatabaseHandle> {
  const handle = await openDatabase(url ? { url, poolSize: 2 } : { dataDir: dir });
  opened.push(handle);
  await handle.db.execute(sql.raw(`create schema ${schemaName}`));
  await handle.db.execute(
    sql.raw(`create table ${schemaName}.inbox (consumer text not null, message_id text not null, processed_at timestamptz not null default now(), primary key (consumer, message_id))`),
  );
  return handle;
}

// The claim is SQL text over an array parameter (inbox.ts): the same answers as the builder's
// multi-row INSERT, on PostgreSQL and on the embedded database.
// PostgreSQL as the global setup found it (DATABASE_URL, the local default or a container).
describe.each([
  ["PostgreSQL", inject("databaseUrl")],
  ["the embedded database", undefined],
])("claimInboxMessages on %s", (_name, url) => {
  it("records new ids once, returns only those not seen, and keeps consumers apart", async () => {
    const { db } = await open(url);
    expect(await claimInboxMessages(db, inbox, "c1", [])).toEqual(new Set());
    expect(await claimInboxMessages(db, inbox, "c1", ["a", "b,\"q\"", "a"])).toEqual(new Set(["a", "b,\"q\""]));
    expect(await claimInboxMessages(db, inbox, "c1", ["b,\"q\"", "c"])).toEqual(new Set(["c"]));
    expect(await claimInboxMessages(db, inbox, "c2", ["a"])).toEqual(new Set(["a"]));
    const rows = await db.select().from(inbox).orderBy(inbox.consumer, inbox.messageId);
    expect(rows.map((r) => [r.consumer, r.messageId])).toEqual([["c1", "a"], ["c1", "b,\"q\""], ["c1", "c"], ["c2", "a"]]);
    expect(rows.every((r) => r.processedAt instanceof Date)).toBe(true);
    await db.transaction(async (tx) => {
      expect(await claimInboxMessages(tx, inbox, "c2", ["a", "d"])).toEqual(new Set(["d"]));
    });
  });
});
