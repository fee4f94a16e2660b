import fs from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "vite";

/**
 * `pnpm --filter @intentmesh/console build` (run by the root postinstall): the console's static
 * files in packages/console/dist, and the first load measured: every script and stylesheet
 * index.html loads, gzip-compressed, written to dist/first-load.json. More than 200 KiB of
 * JavaScript fails the build (issue 30).
 */
export const FIRST_LOAD_JS_LIMIT = 200 * 1024;
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

export interface FirstLoad {
  js_gzip_bytes: number;
  css_gzip_bytes: number;
  files: { file: string; bytes: number; gzip_bytes: number }[];
}

/** What index.html makes the browser fetch before the console can draw: scripts, preloads, styles. */
export function measureFirstLoad(dist: string): FirstLoad {
  const html = fs.readFileSync(path.join(dist, "index.html"), "utf8");
  const refs = new Set([...html.matchAll(/(?:src|href)="\/console\/([^"]+\.(?:js|css))"/g)].map((match) => match[1]!));
  const files = [...refs].map((file) => {
    const bytes = fs.readFileSync(path.join(dist, file));
    return { file, bytes: bytes.length, gzip_bytes: gzipSync(bytes, { level: 9 }).length };
  });
  const sum = (ext: string) => files.filter((f) => f.file.endsWith(ext)).reduce((total, f) => total + f.gzip_bytes, 0);
  return { js_gzip_bytes: sum(".js"), css_gzip_bytes: sum(".css"), files };
}

export async function buildConsole(): Promise<FirstLoad> {
  await build({ configFile: path.join(root, "vite.config.ts") });
  const dist = path.join(root, "dist");
  const firstLoad = measureFirstLoad(dist);
  fs.writeFileSync(path.join(dist, "first-load.json"), JSON.stringify(firstLoad, null, 2) + "\n");
  if (firstLoad.js_gzip_bytes === 0) throw new Error("the console's index.html loads no script: the build is broken");
  if (firstLoad.js_gzip_bytes > FIRST_LOAD_JS_LIMIT) {
    throw new Error(`the console's first load is ${(firstLoad.js_gzip_bytes / 1024).toFixed(1)} KiB of JavaScript (gzip), over the limit of ${FIRST_LOAD_JS_LIMIT / 1024} KiB`);
  }
  return firstLoad;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const firstLoad = await buildConsole();
  console.log(`console built: first load ${(firstLoad.js_gzip_bytes / 1024).toFixed(1)} KiB JavaScript + ${(firstLoad.css_gzip_bytes / 1024).toFixed(1)} KiB CSS (gzip; limit ${FIRST_LOAD_JS_LIMIT / 1024} KiB of JavaScript)`);
}
