import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * A copy of a service's migrations folder holding only the migrations up to `lastIdx`: a
 * database migrated with it is the schema as it stood then, so a test can write data the old way
 * and then apply the rest (the data migrations' tests).
 */
export function migrationsUpTo(folder: string, lastIdx: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "im-migrations-"));
  fs.mkdirSync(path.join(dir, "meta"));
  const journal = JSON.parse(fs.readFileSync(path.join(folder, "meta/_journal.json"), "utf8"));
  journal.entries = journal.entries.filter((e: { idx: number }) => e.idx <= lastIdx);
  fs.writeFileSync(path.join(dir, "meta/_journal.json"), JSON.stringify(journal));
  for (const entry of journal.entries) fs.copyFileSync(path.join(folder, `${entry.tag}.sql`), path.join(dir, `${entry.tag}.sql`));
  return dir;
}
