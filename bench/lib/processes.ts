import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * BENCH_BUNDLE_DIR: the harness runs from a bundle made by bench/device/build.ts (plain node, no
 * tsx, no node_modules): the scripts it starts are the bundle's .mjs files, laid out as the
 * repository is (services/<name>/dist/main.mjs, bench/baseline/*.mjs).
 */
const BUNDLE_DIR = process.env.BENCH_BUNDLE_DIR ? path.resolve(process.env.BENCH_BUNDLE_DIR) : undefined;
export const ROOT = BUNDLE_DIR ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BENCH_DIR = path.join(ROOT, "bench");

const PARENT_WATCH = pathToFileURL(path.join(BENCH_DIR, "lib", BUNDLE_DIR ? "parent-watch.mjs" : "parent-watch.ts")).href;

/** The file a script of the repository runs as: itself under tsx, its bundled .mjs in a bundle. */
function runnableScript(script: string): string {
  if (!BUNDLE_DIR) return script;
  return script.replace(/\/src\/main\.ts$/, "/dist/main.mjs").replace(/\.ts$/, ".mjs");
}

export interface Child {
  name: string;
  pid: number;
  proc: ChildProcess;
  logFile: string;
  /** Resolves when the process has exited (with its code or signal). */
  exited: Promise<string>;
  isRunning(): boolean;
}

const children = new Set<Child>();

export interface StartOptions {
  name: string;
  /** Script path relative to the repository root. */
  script: string;
  env: Record<string, string | undefined>;
  logDir: string;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeFlags?: string[];
}

/**
 * Starts `node --import tsx <script>` (in a bundle, `node <script's .mjs>`) from the repository root in a process group of its own,
 * with stdout and stderr going to <logDir>/<name>.log. Every child is remembered so that
 * stopAll() (or the exit hook) can end it.
 */
export function startNode(options: StartOptions): Child {
  fs.mkdirSync(options.logDir, { recursive: true });
  const logFile = path.join(options.logDir, `${options.name}.log`);
  const fd = fs.openSync(logFile, "w");
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_PARENT_PID: String(process.pid) };
  for (const [key, value] of Object.entries(options.env)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  const loader = BUNDLE_DIR ? [] : ["--import", "tsx"];
  const proc = spawn(process.execPath, [...(options.nodeFlags ?? []), ...loader, "--import", PARENT_WATCH, runnableScript(options.script)], {
    cwd: ROOT,
    env,
    stdio: ["ignore", fd, fd],
    detached: true,
  });
  fs.closeSync(fd);
  if (proc.pid === undefined) throw new Error(`could not start ${options.name}`);
  let running = true;
  const exited = new Promise<string>((resolve) => {
    proc.once("exit", (code, signal) => {
      running = false;
      resolve(signal ? `signal ${signal}` : `code ${code}`);
    });
    proc.once("error", (error) => {
      running = false;
      resolve(`error ${error.message}`);
    });
  });
  const child: Child = { name: options.name, pid: proc.pid, proc, logFile, exited, isRunning: () => running };
  children.add(child);
  return child;
}

/** SIGTERM to the child's process group, SIGKILL after graceMs if it has not exited. */
export async function stopChild(child: Child, graceMs = 8000): Promise<string> {
  if (child.isRunning()) {
    signalGroup(child, "SIGTERM");
    const timer = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), graceMs).unref());
    if ((await Promise.race([child.exited, timer])) === "timeout") {
      signalGroup(child, "SIGKILL");
    }
  }
  const how = await child.exited;
  children.delete(child);
  return how;
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child)));
}

/** Last resort, synchronous (for process "exit"): SIGKILL every child still running. */
export function killAllNow(): void {
  for (const child of children) if (child.isRunning()) signalGroup(child, "SIGKILL");
}

function signalGroup(child: Child, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      process.kill(child.pid, signal);
    } catch {
      /* already gone */
    }
  }
}

export function tailOf(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Polls url until it answers 200; fails early when one of `watch` exits. */
/**
 * Waits until the gateway's /readyz reports every named service as answering: readiness alone
 * is not enough, since the gateway is ready as soon as one service answers (the others' routes
 * would answer 503 until they start).
 */
export async function waitForServices(gatewayUrl: string, services: string[], watch: Child[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let missing = services;
  while (Date.now() < deadline) {
    // /healthz: the gateway is up; /readyz then reports each service (503 while any of the
    // cluster's is missing, as one a run leaves out on purpose is: BENCH_OMIT_SERVICES).
    await waitForOk(`${gatewayUrl}/healthz`, watch, Math.max(1000, deadline - Date.now()));
    const report = (await (await fetch(`${gatewayUrl}/readyz`, { signal: AbortSignal.timeout(5000) })).json()) as { services?: Record<string, { error?: string }> };
    missing = services.filter((name) => !report.services?.[name] || report.services[name]!.error !== undefined);
    if (!missing.length) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${missing.join(", ")} did not answer the gateway's health checks within ${timeoutMs} ms`);
}

export async function waitForOk(url: string, watch: Child[], timeoutMs = 60_000, headers: Record<string, string> = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    for (const child of watch) {
      if (!child.isRunning()) {
        throw new Error(`${child.name} exited (${await child.exited}) before ${url} was ready; its log ends:\n${tailOf(child.logFile)}`);
      }
    }
    try {
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(3000) });
      last = `${res.status} ${(await res.text()).slice(0, 300)}`;
      if (res.status === 200) return;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${last})`);
}
