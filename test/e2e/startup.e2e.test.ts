import { spawn } from "node:child_process";
import net from "node:net";
import os from "node:os";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort, waitForPort } from "../support/private-nats";
import { createTestDatabase } from "../support/backends";

/**
 * Issue 9: each misconfiguration stops a process within 10 s, with exit code != 0 and one
 * sentence naming the variable to fix (no stack trace), and only the default NATS_URL may start a
 * nats-server of its own.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const ENTRY = {
  gateway: "services/gateway/src/main.ts",
  intents: "services/intents/src/main.ts",
  registry: "services/registry/src/main.ts",
  cluster: "scripts/start-cluster.ts",
} as const;
const KEYS = JSON.stringify([{ key: "startup-test-key-000000000000000", principal: "admin", roles: ["admin"] }]);

interface Outcome {
  code: number | null;
  ms: number;
  stderr: string;
}

function run(entry: keyof typeof ENTRY, env: Record<string, string | undefined>): Promise<Outcome> {
  const started = Date.now();
  const childEnv: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...process.env, LOG_LEVEL: "silent", ...env })) if (value !== undefined) childEnv[name] = value;
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, ENTRY[entry])], { cwd: root, env: childEnv, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    const guard = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.once("exit", (code) => {
      clearTimeout(guard);
      resolve({ code, ms: Date.now() - started, stderr });
    });
  });
}

/**
 * How long node and tsx take to load an entry point before its start-up runs: measured on the
 * same entry with a configuration error found before any I/O, so that the time a process spends
 * on its dependencies can be told apart from the time a loaded test machine takes to compile it.
 */
const loadMs: Partial<Record<keyof typeof ENTRY, number>> = {};
async function loadTime(entry: keyof typeof ENTRY): Promise<number> {
  loadMs[entry] ??= (await run(entry, { LOG_LEVEL: "not-a-level" })).ms;
  return loadMs[entry]!;
}

async function expectStopsNaming(entry: keyof typeof ENTRY, outcome: Outcome, variable: string, words: RegExp): Promise<void> {
  expect(outcome.code, outcome.stderr).not.toBe(0);
  expect(outcome.code, outcome.stderr).not.toBeNull();
  // Within 10 s on an idle machine: at most 8 s past loading the code (3 s is the connect bound).
  expect(outcome.ms - (await loadTime(entry))).toBeLessThan(8_000);
  const lines = outcome.stderr.trim().split("\n");
  expect(lines, outcome.stderr).toHaveLength(1);
  expect(lines[0]).toContain(variable);
  expect(lines[0]).toMatch(words);
  expect(outcome.stderr).not.toMatch(/\n\s+at /);
}

describe("start-up misconfiguration", () => {
  let natsUrl: string;
  let databaseUrl: string;
  let dropDatabase: () => Promise<void> = async () => undefined;
  let dataDir: string;
  beforeAll(async () => {
    natsUrl = inject("natsUrl");
    // A database of this file's own: the cluster case migrates it, and the shared one may hold
    // another checkout's migrations.
    const database = await createTestDatabase(inject("databaseUrl"));
    databaseUrl = database.url;
    dropDatabase = database.drop;
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "im-startup-"));
  });
  afterAll(async () => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropDatabase();
  });

  it("malformed API_KEYS: the gateway names API_KEYS", async () => {
    await expectStopsNaming("gateway", await run("gateway", { API_KEYS: "[{not json", NATS_URL: natsUrl }), "API_KEYS", /not valid JSON/);
  });

  it("an API_KEYS_FILE that does not exist is named", async () => {
    await expectStopsNaming("gateway", await run("gateway", { API_KEYS: "", API_KEYS_FILE: path.join(dataDir, "nope.json"), NATS_URL: natsUrl }), "API_KEYS_FILE", /does not exist/);
  });

  it("an invalid variable is named (PORT=abc)", async () => {
    await expectStopsNaming("gateway", await run("gateway", { API_KEYS: KEYS, NATS_URL: natsUrl, PORT: "abc" }), "PORT", /invalid/);
  });

  it("NATS refusing connections: NATS_URL is named", async () => {
    const port = await freePort();
    await expectStopsNaming("gateway", await run("gateway", { API_KEYS: KEYS, NATS_URL: `nats://127.0.0.1:${port}` }), "NATS_URL", /cannot be reached/);
  });

  it("a port that is not NATS (it never answers the handshake) stops within 10 s naming NATS_URL", async () => {
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      await expectStopsNaming("intents", await run("intents", { NATS_URL: `nats://127.0.0.1:${port}`, DATABASE_URL: databaseUrl }), "NATS_URL", /is it a NATS port/);
    } finally {
      silent.close();
    }
  });

  it("NATS without JetStream: NATS_URL is named with the fix (-js)", async () => {
    const port = await freePort();
    const server = spawn(process.env.NATS_SERVER_BIN ?? "nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    try {
      await waitForPort(port, true);
      await expectStopsNaming("registry", await run("registry", { NATS_URL: `nats://127.0.0.1:${port}`, DATABASE_URL: databaseUrl }), "NATS_URL", /JetStream.*-js/);
    } finally {
      server.kill("SIGKILL");
    }
  });

  it("PostgreSQL refusing connections: DATABASE_URL is named, without its password", async () => {
    const port = await freePort();
    const outcome = await run("intents", { NATS_URL: natsUrl, DATABASE_URL: `postgres://im:s3cret-pass@127.0.0.1:${port}/test` });
    await expectStopsNaming("intents", outcome, "DATABASE_URL", /connection refused/);
    expect(outcome.stderr).not.toContain("s3cret-pass");
  });

  it("the HTTP port already in use (after migrations ran): PORT is named", async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const outcome = await run("cluster", { NATS_URL: natsUrl, DATABASE_URL: databaseUrl, API_KEYS: KEYS, HOST: "127.0.0.1", PORT: String(port), DATA_DIR: dataDir });
      await expectStopsNaming("cluster", outcome, "PORT", /already in use/);
    } finally {
      taken.close();
    }
  });

  it("an explicit NATS_URL that does not answer is reported, and no nats-server is started on it", async () => {
    const port = await freePort();
    const outcome = await run("cluster", { NATS_URL: `nats://127.0.0.1:${port}`, API_KEYS: KEYS, DATA_DIR: dataDir, PORT: "0" });
    await expectStopsNaming("cluster", outcome, "NATS_URL", /cannot be reached/);
    const someoneListens = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    expect(someoneListens).toBe(false);
  });
});
