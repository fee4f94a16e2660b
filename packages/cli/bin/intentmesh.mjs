#!/usr/bin/env node
// The intentmesh command. Runs the built file when there is one (pnpm --filter @intentmesh/cli build),
// else the TypeScript sources through tsx (a workspace checkout).
import { existsSync } from "node:fs";

const built = new URL("../dist/intentmesh.mjs", import.meta.url);
if (existsSync(built)) {
  await import(built.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(new URL("../src/main.ts", import.meta.url).href);
}
