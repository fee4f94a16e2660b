import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { createTestDatabase, testNamespace } from "../support/backends";
import { freePort } from "../support/private-nats";

/**
 * README command 1 (`pnpm start`, scripts/start-cluster.ts) honours every variable the README
 * documents for a service, because it starts each service from the same definition as the
 * service's own process (services/<name>/src/manifest.ts). Each variable is set to a value
 * unlike its default, and its effect is observed through the API.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const ADMIN = "settings-admin-key-00000000000000";
const AGENT = "settings-agent-key-00000000000000";
const COORDINATOR = "settings-coordinator-key-000000000";
const ORIGIN = "https://console.example.org";

let child: ChildProcess;
let base: string;
let output = "";
let dataDir: string;
let drop: () => Promise<void>;

const api = async (route: string, init: { method?: string; body?: unknown; key?: string; headers?: Record<string, string> } = {}) => {
  const res = await fetch(`${base}/api/v1${route}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { "X-API-Key": init.key ?? ADMIN, ...(init.body === undefined ? {} : { "Content-Type": "application/json" }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
};

beforeAll(async () => {
  const database = await createTestDatabase(inject("databaseUrl"));
  drop = database.drop;
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "im-start-settings-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, ["--import", "tsx", path.join(root, "scripts/start-cluster.ts")], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      LOG_LEVEL: "warn",
      NATS_URL: inject("natsUrl"),
      DATABASE_URL: database.url,
      BUS_NAMESPACE: testNamespace(),
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      PORT: String(port),
      API_KEYS: JSON.stringify([
        { key: ADMIN, principal: "admin", roles: ["admin"] },
        { key: AGENT, principal: "settings-agent", roles: ["agent"] },
        { key: COORDINATOR, principal: "coordinator", roles: ["coordinator"] },
      ]),
      // Each documented service variable, away from its default:
      MEMORY_EPISODIC_CAPACITY: "10",
      MEMORY_GUARDRAILS: JSON.stringify({ denied_semantic_namespaces: ["secrets.*"] }),
      MEMORY_SWEEP_INTERVAL_MS: "100",
      LEASE_SWEEP_INTERVAL_MS: "3600000",
      SUSPENSION_TIMER_INTERVAL_MS: "3600000",
      SUSPENSION_DEFAULT_RETRY_POLICY: JSON.stringify({ max_attempts: 3, interval_seconds: 60 }),
      CORS_ORIGINS: ORIGIN,
    },
  });
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await vi.waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`pnpm start exited: ${output}`);
      const ready = await fetch(`${base}/readyz`).catch(() => undefined);
      expect(ready?.status).toBe(200);
    },
    { timeout: 60_000, interval: 250 },
  );
}, 90_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  await drop?.();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe("pnpm start honours each documented service variable", () => {
  it("MEMORY_EPISODIC_CAPACITY: the memory summary reports the configured capacity", async () => {
    const summary = await api("/agents/settings-agent/memory/summary", { key: AGENT });
    expect(summary.status, JSON.stringify(summary.body)).toBe(200);
    expect(summary.body.episodic.capacity).toBe(10);
  });

  it("MEMORY_GUARDRAILS: a semantic write to a denied namespace is refused", async () => {
    const denied = await api("/memory", { key: COORDINATOR, body: { namespace: "secrets.keys", key: "k", value: { v: 1 }, memory_type: "semantic" } });
    expect(denied.status, JSON.stringify(denied.body)).toBe(403);
    const allowed = await api("/memory", { key: COORDINATOR, body: { namespace: "facts.public", key: "k", value: { v: 1 }, memory_type: "semantic" } });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(201);
  });

  it("MEMORY_SWEEP_INTERVAL_MS: an expired entry is swept long before the 10 s default would", async () => {
    const created = await api("/memory", { key: AGENT, body: { namespace: "notes", key: "short", value: { v: 1 }, memory_type: "episodic", ttl: "duration:PT1S" } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // The summary counts stored rows: only the sweeper removes an expired one.
    await vi.waitFor(async () => expect((await api("/agents/settings-agent/memory/summary", { key: AGENT })).body.episodic.entry_count).toBe(0), { timeout: 6_000, interval: 100 });
  });

  it("SUSPENSION_DEFAULT_RETRY_POLICY: the server configuration carries the platform default", async () => {
    const config = await api("/server/config");
    expect(config.status).toBe(200);
    expect(config.body.suspension.default_retry_policy).toMatchObject({ max_attempts: 3, interval_seconds: 60 });
  });

  it("CORS_ORIGINS: a preflight from the configured origin is allowed", async () => {
    const res = await fetch(`${base}/api/v1/intents`, { method: "OPTIONS", headers: { Origin: ORIGIN, "Access-Control-Request-Method": "POST" } });
    expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
  });

  it("LEASE_SWEEP_INTERVAL_MS and SUSPENSION_TIMER_INTERVAL_MS: with hour-long sweeps, nothing expires within seconds", async () => {
    const intent = (await api("/intents", { body: { title: "timers", status: "active" } })).body;
    const lease = await api(`/intents/${intent.id}/leases`, { key: AGENT, body: { scope: "draft", ttl_seconds: 1 } });
    expect(lease.status, JSON.stringify(lease.body)).toBe(201);
    const other = (await api("/intents", { body: { title: "suspended", status: "active" } })).body;
    const suspension = await api(`/intents/${other.id}/suspend`, { key: AGENT, body: { question: "Ship?", response_type: "text", timeout_seconds: 1, fallback_policy: "fail" } });
    expect(suspension.status, JSON.stringify(suspension.body)).toBe(201);
    // The defaults (1 s) would have swept both within this wait; an hour-long interval has not.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    const leaseEvents = (await api(`/intents/${intent.id}/events`)).body.events.map((e: { event_type: string }) => e.event_type);
    expect(leaseEvents).not.toContain("lease_released");
    const suspended = (await api(`/intents/${other.id}/events`)).body.events.map((e: { event_type: string }) => e.event_type);
    expect(suspended.filter((type: string) => /expired|timeout|fallback/.test(type))).toEqual([]);
    expect((await api(`/intents/${other.id}`)).body.status).toBe("suspended_awaiting_input");
  });
});
