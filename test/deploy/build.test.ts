import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, testNamespace } from "../support/backends";
import { freePort } from "../support/private-nats";
import { SERVICES, buildServices } from "../../scripts/build";

/**
 * The production image without a Docker engine (none here): deploy/Dockerfile is read for the
 * rules an image must keep, and its build and install steps are run as it runs them (pnpm build,
 * then a production-only, hoisted install of the workspace's package.json files in a directory of
 * its own), after which the gateway and a backing service start from that directory with plain
 * node, no tsx and no TypeScript in reach, and answer a real request.
 */
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const dockerfile = fs.readFileSync(path.join(root, "deploy/Dockerfile"), "utf8");
const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));

describe("deploy/Dockerfile", () => {
  it("builds in stages and runs the compiled services with node as a non-root numeric user, with a HEALTHCHECK", () => {
    expect(dockerfile).toMatch(/AS build[\s\S]*pnpm build/);
    expect(dockerfile).toMatch(/AS prod-deps[\s\S]*pnpm install --prod --frozen-lockfile --config\.node-linker=hoisted/);
    expect(finalStage).toMatch(/^USER (\d+):(\d+)$/m);
    expect(Number(/^USER (\d+)/m.exec(finalStage)![1])).toBeGreaterThan(0);
    expect(finalStage).toMatch(/^HEALTHCHECK .*CMD \["node", "scripts\/healthcheck\.mjs"\]$/m);
    expect(finalStage).toMatch(/^CMD \["node", "scripts\/start-service\.mjs"\]$/m);
  });

  it("puts no development dependency and no TypeScript source into the final image", () => {
    const copies = [...finalStage.matchAll(/^COPY (.*)$/gm)].map((m) => m[1]!);
    expect(copies.some((line) => /--from=prod-deps \/app\/node_modules/.test(line))).toBe(true);
    // Nothing from the build stage but compiled bundles, migrations and the two entry scripts.
    for (const line of copies.filter((l) => l.includes("--from=build"))) {
      expect(line, line).toMatch(/\/dist |\/migrations |scripts\/(start-service|healthcheck)\.mjs/);
    }
    expect(finalStage).not.toMatch(/tsx|\/src\b|pnpm install(?! --prod)/);
  });

  it("gives every stage that installs the patches the lockfile names", () => {
    const stages = dockerfile.split(/\nFROM /).filter((stage) => /pnpm (install|fetch)/.test(stage));
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage.indexOf("COPY patches ./patches"), stage.slice(0, 60)).toBeGreaterThan(-1);
    expect(fs.readFileSync(path.join(root, "pnpm-lock.yaml"), "utf8")).toMatch(/^patchedDependencies:\n(  .*\n)+/m);
  });

  it("copies every service's bundle and migrations", () => {
    for (const service of SERVICES) {
      expect(finalStage, service).toContain(`/app/services/${service}/dist ./services/${service}/dist`);
      if (fs.existsSync(path.join(root, "services", service, "migrations"))) expect(finalStage, service).toContain(`/app/services/${service}/migrations`);
    }
  });
});

describe("the compiled services, installed as the image installs them", () => {
  let image: string;
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    await buildServices();
    image = fs.mkdtempSync(path.join(os.tmpdir(), "im-image-"));
    // The prod-deps stage: the workspace's package.json files and lockfile, a production install, hoisted.
    for (const file of ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", "bench/package.json"]) {
      fs.mkdirSync(path.dirname(path.join(image, file)), { recursive: true });
      fs.copyFileSync(path.join(root, file), path.join(image, file));
    }
    fs.cpSync(path.join(root, "patches"), path.join(image, "patches"), { recursive: true });
    for (const dir of ["libs", "services"]) {
      for (const name of fs.readdirSync(path.join(root, dir)).filter((entry) => fs.existsSync(path.join(root, dir, entry, "package.json")))) {
        fs.mkdirSync(path.join(image, dir, name), { recursive: true });
        fs.copyFileSync(path.join(root, dir, name, "package.json"), path.join(image, dir, name, "package.json"));
      }
    }
    execFileSync("pnpm", ["install", "--prod", "--frozen-lockfile", "--offline", "--config.node-linker=hoisted", "--ignore-scripts"], { cwd: image, stdio: "pipe", env: { ...process.env, CI: "true" } });
    // The runtime stage: bundles, migrations, entry scripts.
    fs.cpSync(path.join(root, "scripts/start-service.mjs"), path.join(image, "scripts/start-service.mjs"));
    fs.cpSync(path.join(root, "scripts/healthcheck.mjs"), path.join(image, "scripts/healthcheck.mjs"));
    for (const service of SERVICES) {
      fs.cpSync(path.join(root, "services", service, "dist"), path.join(image, "services", service, "dist"), { recursive: true });
      const migrations = path.join(root, "services", service, "migrations");
      if (fs.existsSync(migrations)) fs.cpSync(migrations, path.join(image, "services", service, "migrations"), { recursive: true });
    }
    testDb = await createTestDatabase(inject("databaseUrl"));
  }, 240_000);

  afterAll(async () => {
    for (const child of children) child.kill("SIGKILL");
    await testDb?.drop();
    if (image) fs.rmSync(image, { recursive: true, force: true });
  });

  /** `docker run -e SERVICE=<name>`: plain node, the image's own entry point, nothing of this process's loader. */
  const run = (env: Record<string, string>) => {
    const child = spawn(process.execPath, ["scripts/start-service.mjs"], {
      cwd: image,
      env: { PATH: process.env.PATH, NODE_ENV: "production", LOG_LEVEL: "warn", NODE_OPTIONS: "", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    return child;
  };
  const healthcheck = (env: Record<string, string>) =>
    new Promise<number>((resolve) => spawn(process.execPath, ["scripts/healthcheck.mjs"], { cwd: image, env: { PATH: process.env.PATH, ...env } }).once("exit", (code) => resolve(code ?? 1)));

  async function until(url: string, status = 200): Promise<void> {
    for (let i = 0; i < 150; i++) {
      const res = await fetch(url).catch(() => undefined);
      if (res?.status === status) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${url} never answered ${status}`);
  }

  it("has no development dependency installed: no tsx, no TypeScript, no vitest", () => {
    for (const name of ["tsx", "typescript", "vitest", "esbuild"]) expect(fs.existsSync(path.join(image, "node_modules", name)), name).toBe(false);
    expect(fs.existsSync(path.join(image, "node_modules", "pg"))).toBe(true);
    expect(fs.readdirSync(path.join(image, "services", "registry"))).not.toContain("src");
  });

  it("starts the gateway and the registry from their bundles with plain node; they answer their probes, the healthcheck and a real request", async () => {
    const namespace = testNamespace();
    const [gatewayPort, registryOps] = [await freePort(), await freePort()];
    const common = { NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace };
    const registry = run({ ...common, SERVICE: "registry", DATABASE_URL: testDb.url, METRICS_PORT: String(registryOps) });
    const key = "image-test-admin-key-0123456789";
    run({ ...common, SERVICE: "gateway", PORT: String(gatewayPort), HOST: "127.0.0.1", API_KEYS: JSON.stringify([{ key, principal: "admin", roles: ["admin"] }]) });
    let stderr = "";
    registry.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));

    await until(`http://127.0.0.1:${registryOps}/readyz`).catch((error: unknown) => {
      throw new Error(`${String(error)}; registry stderr: ${stderr.slice(0, 2000)}`);
    });
    await until(`http://127.0.0.1:${gatewayPort}/healthz`);
    expect(await healthcheck({ SERVICE: "registry", METRICS_PORT: String(registryOps) })).toBe(0);
    expect(await healthcheck({ SERVICE: "gateway", PORT: String(gatewayPort) })).toBe(0);
    expect(await healthcheck({ SERVICE: "registry", METRICS_PORT: String(await freePort()) })).toBe(1);

    const res = await fetch(`http://127.0.0.1:${gatewayPort}/api/v1/agents`, {
      method: "POST",
      headers: { "X-API-Key": key, "Content-Type": "application/json" },
      body: JSON.stringify({ agent_id: "image-agent", role_id: "worker" }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    expect(((await res.json()) as { agent_id: string }).agent_id).toBe("image-agent");
    // The registry migrated its schema from the migrations next to its bundle.
    const readyz = (await (await fetch(`http://127.0.0.1:${registryOps}/readyz`)).json()) as { ready: boolean };
    expect(readyz.ready).toBe(true);
  }, 120_000);

  it("refuses a SERVICE that names no built service, with a sentence", async () => {
    const child = run({ SERVICE: "billing" });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toContain("SERVICE=billing names no built service");
  });
});
