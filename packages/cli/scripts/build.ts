import { resolve } from "node:path";
import { build } from "esbuild";

/**
 * One file with everything the command needs (commander, the SDK): dist/intentmesh.mjs, run by
 * bin/intentmesh.mjs with plain node, no tsx. Tests build it to a temporary path and run it.
 */
export async function buildCli(outfile = resolve(import.meta.dirname, "../dist/intentmesh.mjs")): Promise<string> {
  await build({
    entryPoints: [resolve(import.meta.dirname, "../src/main.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    // commander is CommonJS: give the bundle a require of its own.
    banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
  });
  return outfile;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(`wrote ${await buildCli()}`);
