// The image's entry point: runs the compiled service named by SERVICE with plain node
// (services/<name>/dist/main.mjs, built by `pnpm build`). No shell, so SIGTERM reaches node.
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const service = process.env.SERVICE ?? "gateway";
const entry = fileURLToPath(new URL(`../services/${service}/dist/main.mjs`, import.meta.url));
if (!/^[a-z]+$/.test(service) || !existsSync(entry)) {
  console.error(`SERVICE=${service} names no built service (expected ${entry}); run pnpm build`);
  process.exit(1);
}
await import(pathToFileURL(entry).href);
