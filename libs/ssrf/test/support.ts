import http from "node:http";
import type { AddressInfo } from "node:net";
import { pinnedConnector, type Connector, type ConnectRequest, type Resolver } from "../src/index";

/**
 * Test doubles that keep every test on loopback. The checks here are written independently of
 * the library (plain string tests), so a bug in the guard cannot also blind the tripwire.
 */

export function isLoopbackText(address: string): boolean {
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address) || address === "::1";
}

export interface Tripwire {
  readonly connect: Connector;
  /** Every connect attempt, allowed or not. */
  readonly calls: ConnectRequest[];
  /** Attempts for a non-loopback destination: each one is a guard bug. */
  readonly tripped: string[];
}

/**
 * A connect step that refuses to send anything but loopback traffic. `pass` decides what
 * happens on loopback: the real pinned connector by default, or nothing at all (`"none"`), for
 * tests in which no connection may happen whatever the address.
 */
export function tripwire(pass: Connector | "none" = pinnedConnector): Tripwire {
  const calls: ConnectRequest[] = [];
  const tripped: string[] = [];
  const connect: Connector = async (request) => {
    calls.push(request);
    const { address } = request.destination;
    if (pass === "none" || !isLoopbackText(address)) {
      tripped.push(address);
      throw new Error(`TRIPWIRE: the guard let a connection to ${address} through`);
    }
    return pass(request);
  };
  return { connect, calls, tripped };
}

export interface FakeResolver {
  readonly resolve: Resolver;
  readonly lookups: string[];
}

/**
 * A resolver answering from a table; a function value answers differently per call (rebinding).
 * Unknown names fail like NXDOMAIN: no test ever reaches a real DNS server.
 */
export function fakeResolver(table: Record<string, readonly string[] | ((call: number) => readonly string[])>): FakeResolver {
  const lookups: string[] = [];
  const resolve: Resolver = async (hostname) => {
    lookups.push(hostname);
    const entry = table[hostname];
    if (entry === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    const calls = lookups.filter((name) => name === hostname).length;
    const answers = typeof entry === "function" ? entry(calls) : entry;
    return answers.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return { resolve, lookups };
}

export interface LoopbackServer {
  readonly port: number;
  readonly url: string;
  readonly requests: http.IncomingMessage[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1, on a port of the kernel's choosing. */
export async function startLoopbackServer(handler: http.RequestListener): Promise<LoopbackServer> {
  const requests: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
