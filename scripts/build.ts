import fs from "node:fs";
import path from "node:path";
import { build, type Plugin } from "esbuild";

/**
 * `pnpm build`: each service's entry point as one ES module, services/<name>/dist/main.mjs, run
 * with plain `node` (no tsx, no TypeScript at run time). The workspace libraries (@intentmesh/*,
 * TypeScript sources) are compiled into it; npm packages stay imports, resolved from the
 * production node_modules next to it (deploy/Dockerfile installs them hoisted). Migrations stay
 * files: a service finds them at ../migrations from dist/ as from src/.
 */
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
export const SERVICES = fs.readdirSync(path.join(root, "services")).filter((name) => fs.existsSync(path.join(root, "services", name, "src", "main.ts")));

/** Bare imports of npm packages stay imports; the workspace's own packages are compiled in. */
const npmPackagesExternal: Plugin = {
  name: "npm-packages-external",
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@intentmesh/") ? undefined : { path: args.path, external: true }));
  },
};

export async function buildServices(services = SERVICES): Promise<string[]> {
  const outputs: string[] = [];
  for (const service of services) {
    const outfile = path.join(root, "services", service, "dist", "main.mjs");
    await build({
      entryPoints: [path.join(root, "services", service, "src", "main.ts")],
      outfile,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      sourcemap: true,
      logLevel: "warning",
      plugins: [npmPackagesExternal],
    });
    outputs.push(outfile);
  }
  return outputs;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const outputs = await buildServices();
  for (const output of outputs) console.log(`built ${path.relative(root, output)} (${Math.round(fs.statSync(output).size / 1024)} KiB)`);
}
