import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../src/database";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "im-lock-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("the embedded database", () => {
  it("refuses a second process on the same data directory, and frees it on close", async () => {
    const handle = await openDatabase({ dataDir: dir });
    const lockFile = path.join(dir, "pglite", "intentmesh.lock");
    expect(fs.readFileSync(lockFile, "utf8")).toBe(String(process.pid));

    const script = `import { openDatabase } from ${JSON.stringify(fileURLToPath(new URL("../src/database.ts", import.meta.url)))};
      try { await openDatabase({ dataDir: ${JSON.stringify(dir)} }); console.log("opened"); } catch (e) { console.log(e.message); }
      process.exit(0);`;
    const second = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
    expect(second.stdout).toContain(`in use by process ${process.pid}`);

    await handle.close();
    expect(fs.existsSync(lockFile)).toBe(false);
  });

  it("takes over a lock left by a process that no longer runs", async () => {
    const pgliteDir = path.join(dir, "pglite");
    fs.mkdirSync(pgliteDir, { recursive: true });
    fs.writeFileSync(path.join(pgliteDir, "intentmesh.lock"), "999999");
    const handle = await openDatabase({ dataDir: dir });
    await handle.ping();
    await handle.close();
  });
});
