import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { openDatabase, rowsOf, type DatabaseHandle } from "../src/database";
import { createTestDatabase } from "../../../test/support/backends";
import { MIGRATIONS_FOLDER } from "../../../services/intents/src/service";

let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let replicas: DatabaseHandle[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  replicas = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ url: testDb.url, poolSize: 2 })));
});
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await testDb?.drop();
});

describe("migrations at start", () => {
  it("apply once when four replicas start at the same moment", async () => {
    await Promise.all(replicas.map((replica) => replica.migrate("intents", MIGRATIONS_FOLDER)));
    const [journal] = rowsOf<{ n: number }>(await replicas[0]!.db.execute(sql`select count(*)::int as n from im_migrations.intents`));
    const committed = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_FOLDER, "meta/_journal.json"), "utf8")).entries.length;
    expect(journal?.n).toBe(committed);
    const [table] = rowsOf<{ n: number }>(
      await replicas[0]!.db.execute(sql`select count(*)::int as n from information_schema.columns where table_schema = 'intents' and table_name = 'events' and column_name = 'wire'`),
    );
    expect(table?.n).toBe(1);
  });
});
