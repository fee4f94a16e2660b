import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

/**
 * A nats-server of one test's own, with JetStream on disk, which the test may stop and start
 * again on the same port and store, as an operator restarting NATS would.
 */
export class PrivateNats {
  private child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    readonly storeDir: string,
  ) {}

  /** Extra nats-server arguments, e.g. `--user u --pass p` for a server that asks for credentials. */
  private extraArgs: string[] = [];

  static async start(extraArgs: string[] = []): Promise<PrivateNats> {
    const port = await freePort();
    const nats = new PrivateNats(port, fs.mkdtempSync(path.join(os.tmpdir(), "im-nats-")));
    nats.extraArgs = extraArgs;
    await nats.startServer();
    return nats;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Starts the server; a no-op while it runs (a second one on the port would orphan the first). */
  async startServer(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) return;
    const bin = process.env.NATS_SERVER_BIN ?? "nats-server";
    this.child = spawn(bin, ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir, ...this.extraArgs], { stdio: "ignore" });
    const spawned = this.child;
    await new Promise<void>((resolve, reject) => {
      spawned.once("error", (error) => reject(new Error(`cannot run ${bin} (set NATS_SERVER_BIN or put nats-server on PATH): ${error.message}`)));
      spawned.once("spawn", () => resolve());
    });
    await waitForPort(this.port, true);
  }

  async stopServer(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    await waitForPort(this.port, false);
  }

  async destroy(): Promise<void> {
    await this.stopServer();
    fs.rmSync(this.storeDir, { recursive: true, force: true });
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

export async function waitForPort(port: number, open: boolean): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const answers = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (answers === open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`port ${port} did not ${open ? "open" : "close"}`);
}
