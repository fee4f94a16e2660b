import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, waitForPort } from "./private-nats";

/**
 * A PostgreSQL server of one test's own (initdb + postgres on a temporary directory and port),
 * which the test may kill -9 and start again on the same data, as a crashed database host would.
 * The server runs as the `postgres` user when the tests run as root (initdb refuses root).
 */
export class PrivatePostgres {
  private child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    readonly dataDir: string,
    private readonly bin: string,
  ) {}

  static async start(): Promise<PrivatePostgres> {
    const bin = postgresBinDir();
    const port = await freePort();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "im-pg-"));
    asServerUser(path.join(bin, "initdb"), ["-D", dataDir, "-A", "trust", "-U", "postgres", "--no-sync"], dataDir);
    const server = new PrivatePostgres(port, dataDir, bin);
    await server.startServer();
    return server;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /**
   * Starts the postmaster and waits until it accepts connections. Right after a kill -9 the old
   * backends may still hold the shared memory for a moment, and the new postmaster exits: tried
   * again until it stays up.
   */
  async startServer(): Promise<void> {
    const args = ["-D", this.dataDir, "-p", String(this.port), "-k", this.dataDir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"];
    const [command, fullArgs] = serverUserCommand(path.join(this.bin, "postgres"), args);
    for (let attempt = 0; attempt < 50; attempt++) {
      const child = spawn(command, fullArgs, { stdio: "ignore" });
      this.child = child;
      for (let i = 0; i < 100 && child.exitCode === null; i++) {
        try {
          execFileSync(path.join(this.bin, "pg_isready"), ["-q", "-h", "127.0.0.1", "-p", String(this.port)], { stdio: "ignore" });
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      if (child.exitCode === null) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error("the private PostgreSQL did not become ready");
  }

  /** kill -9 of the postmaster: no shutdown, connections cut where they stand. */
  async crash(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const pid = fs.readFileSync(path.join(this.dataDir, "postmaster.pid"), "utf8").split("\n")[0]!;
    process.kill(Number(pid), "SIGKILL");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    // Backends die with their postmaster; the port is free once it is gone.
    await waitForPort(this.port, false);
  }

  async stop(): Promise<void> {
    await this.crash().catch(() => undefined);
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}

function postgresBinDir(): string {
  const base = "/usr/lib/postgresql";
  const versions = fs.existsSync(base) ? fs.readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
  for (const version of versions) {
    const dir = path.join(base, version, "bin");
    if (fs.existsSync(path.join(dir, "initdb"))) return dir;
  }
  throw new Error("no PostgreSQL server binaries (initdb) under /usr/lib/postgresql: apt-get install postgresql");
}

const isRoot = () => process.getuid?.() === 0;

function serverUserCommand(command: string, args: string[]): [string, string[]] {
  return isRoot() ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
}

function asServerUser(command: string, args: string[], dataDir: string): void {
  if (isRoot()) execFileSync("chown", ["postgres:postgres", dataDir]);
  const [cmd, fullArgs] = serverUserCommand(command, args);
  execFileSync(cmd, fullArgs, { stdio: "ignore" });
}
