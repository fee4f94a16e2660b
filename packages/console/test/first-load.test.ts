import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { measureFirstLoad } from "../scripts/build";

describe("the console's first-load measure", () => {
  it("counts every script and stylesheet index.html loads, gzip-compressed, and nothing else", () => {
    const dist = fs.mkdtempSync(path.join(os.tmpdir(), "console-dist-"));
    fs.mkdirSync(path.join(dist, "assets"));
    const entry = "export const a = 1;".repeat(200);
    const chunk = "export const b = 2;".repeat(100);
    fs.writeFileSync(path.join(dist, "assets", "index-1.js"), entry);
    fs.writeFileSync(path.join(dist, "assets", "vendor-2.js"), chunk);
    fs.writeFileSync(path.join(dist, "assets", "lazy-3.js"), "not loaded first");
    fs.writeFileSync(path.join(dist, "assets", "index-4.css"), "body{color:red}");
    fs.writeFileSync(
      path.join(dist, "index.html"),
      '<script type="module" crossorigin src="/console/assets/index-1.js"></script><link rel="modulepreload" crossorigin href="/console/assets/vendor-2.js"><link rel="stylesheet" href="/console/assets/index-4.css">',
    );
    const measured = measureFirstLoad(dist);
    expect(measured.files.map((f) => f.file).sort()).toEqual(["assets/index-1.js", "assets/index-4.css", "assets/vendor-2.js"]);
    expect(measured.js_gzip_bytes).toBe(gzipSync(entry, { level: 9 }).length + gzipSync(chunk, { level: 9 }).length);
    expect(measured.css_gzip_bytes).toBe(gzipSync("body{color:red}", { level: 9 }).length);
    fs.rmSync(dist, { recursive: true, force: true });
  });
});
