import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { guardedFetch, OutboundError, type GuardedFetchOptions } from "../src/index";
import { fakeResolver, readBody, startLoopbackServer, tripwire, type LoopbackServer, type Tripwire } from "./support";
import { RESOLVED_PROBES, URL_PROBES } from "./probes";

/**
 * The full outbound call. No test here sends a packet beyond loopback: names resolve through
 * a fake resolver, and the connect step is a tripwire that fails the test if it is reached for
 * anything but 127.0.0.0/8 or ::1.
 */

const wires: Tripwire[] = [];
const servers: LoopbackServer[] = [];

function wire(pass?: Parameters<typeof tripwire>[0]): Tripwire {
  const created = tripwire(pass);
  wires.push(created);
  return created;
}

async function server(handler: http.RequestListener): Promise<LoopbackServer> {
  const started = await startLoopbackServer(handler);
  servers.push(started);
  return started;
}

afterEach(async () => {
  // A guard bug must be a failed test: any connect attempt to a non-loopback address fails it.
  for (const w of wires.splice(0)) expect(w.tripped, "connect reached for a refused address").toEqual([]);
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function outcome(promise: Promise<unknown>): Promise<OutboundError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OutboundError) return error;
    throw error;
  }
  throw new Error("the call succeeded but should have been refused");
}

describe("refused destinations never reach the connect step", () => {
  it.each(URL_PROBES)("%s (%s)", async (url, refusedClass) => {
    const w = wire("none");
    const dns = fakeResolver({});
    const error = await outcome(guardedFetch(url, {}, { connect: w.connect, resolve: dns.resolve }));
    expect(error.code).toBe("SSRF_BLOCKED");
    expect(error.refusedClass).toBe(refusedClass);
    expect(w.calls).toHaveLength(0);
    // Internal names and literals are refused before any lookup.
    expect(dns.lookups).toEqual([]);
  });

  it.each(RESOLVED_PROBES)("a name resolving to %s (%s)", async (address, refusedClass) => {
    const w = wire("none");
    const dns = fakeResolver({ "peer.example.org": [address] });
    const error = await outcome(guardedFetch("https://peer.example.org/api", {}, { connect: w.connect, resolve: dns.resolve }));
    expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass });
    expect(w.calls).toHaveLength(0);
  });

  it("refuses a name when any one of its addresses is refused", async () => {
    const w = wire("none");
    const dns = fakeResolver({ "peer.example.org": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "10.0.0.5"] });
    const error = await outcome(guardedFetch("https://peer.example.org/", {}, { connect: w.connect, resolve: dns.resolve }));
    expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass: "private" });
    expect(error.message).toContain("10.0.0.5");
    expect(w.calls).toHaveLength(0);
  });

  it("refuses a name that resolves to nothing", async () => {
    const w = wire("none");
    const dns = fakeResolver({ "peer.example.org": [] });
    const error = await outcome(guardedFetch("https://peer.example.org/", {}, { connect: w.connect, resolve: dns.resolve }));
    expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass: "no_address" });
  });

  it("reports an unknown name as a failed dispatch", async () => {
    const w = wire("none");
    const error = await outcome(guardedFetch("https://nowhere.example.org/", {}, { connect: w.connect, resolve: fakeResolver({}).resolve }));
    expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "dns_failed" });
  });

  it("refuses loopback when the test-only allowance is off", async () => {
    const peer = await server((_req, res) => res.end("should never be read"));
    const w = wire("none");
    const error = await outcome(guardedFetch(peer.url, {}, { connect: w.connect }));
    expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass: "loopback" });
    expect(peer.requests).toHaveLength(0);
  });
});

describe("DNS rebinding", () => {
  it("resolves once and connects to the address that was checked", async () => {
    const peer = await server((_req, res) => res.end("ok"));
    const w = wire();
    // A rebinding resolver: loopback (the allowed test peer) first, the metadata address after.
    const dns = fakeResolver({ "peer.example.org": (call) => (call === 1 ? ["127.0.0.1"] : ["169.254.169.254"]) });
    const response = await guardedFetch(`http://peer.example.org:${peer.port}/`, {}, { connect: w.connect, resolve: dns.resolve, allowLoopback: true });
    expect(response.status).toBe(200);
    expect(dns.lookups).toEqual(["peer.example.org"]);
    expect(w.calls.map((c) => c.destination.address)).toEqual(["127.0.0.1"]);
    expect(response.address).toBe("127.0.0.1");
  });

  it("refuses when the first answer is public and a later one private", async () => {
    const w = wire("none");
    const dns = fakeResolver({ "peer.example.org": ["8.8.8.8", "127.0.0.1"] });
    const error = await outcome(guardedFetch("http://peer.example.org/", {}, { connect: w.connect, resolve: dns.resolve }));
    expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass: "loopback" });
    expect(w.calls).toHaveLength(0);
  });

  it("keeps the name in the Host header while connecting to the pinned address", async () => {
    const peer = await server((req, res) => res.end(req.headers.host));
    const w = wire();
    const dns = fakeResolver({ "peer.example.org": ["127.0.0.1"] });
    const response = await guardedFetch(`http://peer.example.org:${peer.port}/x`, {}, { connect: w.connect, resolve: dns.resolve, allowLoopback: true });
    expect(response.text()).toBe(`peer.example.org:${peer.port}`);
  });
});

describe("a loopback peer with the test-only allowance", () => {
  it("answers a signed-envelope style POST", async () => {
    const peer = await server(async (req, res) => {
      const body = await readBody(req);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ method: req.method, path: req.url, body, type: req.headers["content-type"] }));
    });
    const w = wire();
    const response = await guardedFetch(
      `${peer.url}/api/v1/federation/receive?x=1`,
      { method: "POST", headers: { "content-type": "application/json" }, body: '{"dispatch_id":"d1"}' },
      { connect: w.connect, allowLoopback: true },
    );
    expect(response.status).toBe(200);
    expect(response.json()).toEqual({ method: "POST", path: "/api/v1/federation/receive?x=1", body: '{"dispatch_id":"d1"}', type: "application/json" });
    expect(response.redirects).toBe(0);
  });

  it("passes non-2xx answers back to the caller", async () => {
    const peer = await server((_req, res) => {
      res.statusCode = 403;
      res.end("untrusted");
    });
    const response = await guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true });
    expect(response.status).toBe(403);
    expect(response.text()).toBe("untrusted");
  });

  it("connects through the default connector when none is injected", async () => {
    const peer = await server((_req, res) => res.end("default"));
    const response = await guardedFetch(peer.url, {}, { allowLoopback: true });
    expect(response.text()).toBe("default");
  });
});

describe("redirects", () => {
  it("re-checks each hop and refuses a redirect to a private address", async () => {
    const peer = await server((_req, res) => {
      res.writeHead(302, { location: "http://10.0.0.5/steal" });
      res.end();
    });
    const w = wire();
    const error = await outcome(guardedFetch(peer.url, {}, { connect: w.connect, allowLoopback: true }));
    expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass: "private" });
    expect(w.calls.map((c) => c.destination.address)).toEqual(["127.0.0.1"]);
  });

  it.each([
    ["http://169.254.169.254/latest/meta-data/", "metadata"],
    ["http://[::ffff:a9fe:a9fe]/", "metadata"],
    ["http://0x7f.1/", "loopback"],
    ["http://metadata.google.internal/", "internal_hostname"],
    ["file:///etc/passwd", "scheme"],
    ["http://user:pw@peer.example.org/", "userinfo"],
  ] as const)("refuses a redirect to %s even with the loopback allowance off for it", async (location, refusedClass) => {
    const peer = await server((_req, res) => {
      res.writeHead(307, { location });
      res.end();
    });
    const options: GuardedFetchOptions = { connect: wire().connect, allowLoopback: refusedClass !== "loopback" };
    const error = await outcome(guardedFetch(peer.url, {}, options));
    if (refusedClass === "loopback") expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass: "loopback" });
    else expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass });
  });

  it("re-resolves a redirect to a name and refuses its private address", async () => {
    const peer = await server((_req, res) => {
      res.writeHead(301, { location: "http://internal-looking.example.org/" });
      res.end();
    });
    const w = wire();
    const dns = fakeResolver({ "peer.example.org": ["127.0.0.1"], "internal-looking.example.org": ["192.168.1.20"] });
    const error = await outcome(guardedFetch(`http://peer.example.org:${peer.port}/`, {}, { connect: w.connect, resolve: dns.resolve, allowLoopback: true }));
    expect(error).toMatchObject({ code: "SSRF_BLOCKED", refusedClass: "private" });
    expect(dns.lookups).toEqual(["peer.example.org", "internal-looking.example.org"]);
  });

  it("follows up to three allowed hops, rewriting POST to GET on 303 and dropping origin-bound headers", async () => {
    const second = await server(async (req, res) => {
      const body = await readBody(req);
      res.end(JSON.stringify({ method: req.method, body, apiKey: req.headers["x-api-key"] ?? null, trace: req.headers["traceparent"] ?? null }));
    });
    const first = await server((req, res) => {
      const hop = Number(new URL(req.url ?? "/", "http://x").searchParams.get("hop") ?? "0");
      res.writeHead(hop < 2 ? 307 : 303, { location: hop < 2 ? `/?hop=${hop + 1}` : `${second.url}/final` });
      res.end();
    });
    const w = wire();
    const response = await guardedFetch(
      first.url,
      { method: "POST", headers: { "x-api-key": "k-secret", traceparent: "00-abc-def-01", "content-type": "text/plain" }, body: "payload" },
      { connect: w.connect, allowLoopback: true },
    );
    expect(response.redirects).toBe(3);
    expect(response.url).toBe(`${second.url}/final`);
    // 307 keeps the method and body on the same origin; 303 turns the request into a GET to
    // another origin, which must not receive the API key.
    expect(first.requests.map((r) => r.method)).toEqual(["POST", "POST", "POST"]);
    expect(response.json()).toEqual({ method: "GET", body: "", apiKey: null, trace: "00-abc-def-01" });
  });

  it("refuses a fourth hop", async () => {
    const peer = await server((req, res) => {
      res.writeHead(302, { location: `/again${req.url}` });
      res.end();
    });
    const error = await outcome(guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true }));
    expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "too_many_redirects" });
    expect(peer.requests).toHaveLength(4);
  });

  it("refuses every redirect when maxRedirects is 0", async () => {
    const peer = await server((_req, res) => {
      res.writeHead(302, { location: "/elsewhere" });
      res.end();
    });
    const error = await outcome(guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true, maxRedirects: 0 }));
    expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "too_many_redirects" });
    expect(peer.requests).toHaveLength(1);
  });

  it("refuses a redirect without a Location", async () => {
    const peer = await server((_req, res) => {
      res.statusCode = 302;
      res.end();
    });
    const error = await outcome(guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true }));
    expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "bad_redirect" });
  });
});

describe("time and size limits", () => {
  it("times out against a peer that never answers", async () => {
    const peer = await server(() => {
      /* holds the request open */
    });
    const started = Date.now();
    const error = await outcome(guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true, timeoutMs: 200 }));
    expect(error).toMatchObject({ code: "DISPATCH_TIMEOUT", reason: "timeout" });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("times out against a peer that stalls mid-body", async () => {
    const peer = await server((_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("partial");
    });
    const error = await outcome(guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true, timeoutMs: 200 }));
    expect(error).toMatchObject({ code: "DISPATCH_TIMEOUT" });
  });

  it("counts name resolution against the same deadline", async () => {
    const w = wire("none");
    const hangingResolver = () => new Promise<never>(() => {});
    const error = await outcome(guardedFetch("https://peer.example.org/", {}, { connect: w.connect, resolve: hangingResolver, timeoutMs: 100 }));
    expect(error).toMatchObject({ code: "DISPATCH_TIMEOUT" });
    expect(w.calls).toHaveLength(0);
  });

  it("defaults to a 10 second deadline", async () => {
    const { DEFAULT_TIMEOUT_MS } = await import("../src/index");
    expect(DEFAULT_TIMEOUT_MS).toBe(10_000);
  });

  it("honours the caller's own cancellation", async () => {
    const peer = await server(() => {});
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await outcome(guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true, signal: controller.signal }));
    expect(error).toMatchObject({ code: "DISPATCH_FAILED" });
  });

  it("refuses a body over the cap announced by Content-Length", async () => {
    const peer = await server((_req, res) => res.end("x".repeat(2048)));
    const error = await outcome(guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true, maxResponseBytes: 1024 }));
    expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "response_too_large" });
  });

  it("refuses a chunked body once it grows over the cap", async () => {
    const peer = await server((_req, res) => {
      res.writeHead(200, { "transfer-encoding": "chunked" });
      for (let i = 0; i < 8; i++) res.write("y".repeat(256));
      res.end();
    });
    const error = await outcome(guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true, maxResponseBytes: 1024 }));
    expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "response_too_large" });
  });

  it("accepts a body exactly at the cap", async () => {
    const peer = await server((_req, res) => res.end("z".repeat(1024)));
    const response = await guardedFetch(peer.url, {}, { connect: wire().connect, allowLoopback: true, maxResponseBytes: 1024 });
    expect(response.body).toHaveLength(1024);
  });

  it("reports a refused connection as a failed dispatch", async () => {
    const peer = await server(() => {});
    const port = peer.port;
    await peer.close();
    servers.length = 0;
    const error = await outcome(guardedFetch(`http://127.0.0.1:${port}/`, {}, { connect: wire().connect, allowLoopback: true }));
    expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "connection_failed" });
    expect(error.message).toContain("ECONNREFUSED");
  });
});

describe("https to a pinned address", () => {
  const fixtures = new URL("./fixtures/", import.meta.url);
  const cert = readFileSync(new URL("peer.cert.pem", fixtures), "utf8");
  const key = readFileSync(new URL("peer.key.pem", fixtures), "utf8");

  async function tlsPeer(): Promise<{ port: number; sni: (string | false | null)[]; close(): Promise<void> }> {
    const sni: (string | false | null)[] = [];
    const peer = https.createServer({ cert, key }, (req, res) => res.end(`host=${req.headers.host}`));
    peer.on("secureConnection", (socket) => sni.push(socket.servername));
    await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
    const { port } = peer.address() as AddressInfo;
    return {
      port,
      sni,
      close: () => new Promise<void>((resolve) => { peer.closeAllConnections(); peer.close(() => resolve()); }),
    };
  }

  it("verifies the certificate against the name and sends it as SNI while connecting to the checked address", async () => {
    const peer = await tlsPeer();
    try {
      const w = wire();
      const dns = fakeResolver({ "peer.example.org": ["127.0.0.1"] });
      const response = await guardedFetch(`https://peer.example.org:${peer.port}/`, {}, { connect: w.connect, resolve: dns.resolve, allowLoopback: true, ca: cert });
      expect(response.text()).toBe(`host=peer.example.org:${peer.port}`);
      expect(peer.sni).toEqual(["peer.example.org"]);
      expect(w.calls.map((c) => c.destination.address)).toEqual(["127.0.0.1"]);
    } finally {
      await peer.close();
    }
  });

  it("refuses a certificate that does not name the host asked for", async () => {
    const peer = await tlsPeer();
    try {
      const dns = fakeResolver({ "other.example.org": ["127.0.0.1"] });
      const error = await outcome(guardedFetch(`https://other.example.org:${peer.port}/`, {}, { connect: wire().connect, resolve: dns.resolve, allowLoopback: true, ca: cert }));
      expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "connection_failed" });
      expect(error.message).toContain("ERR_TLS_CERT_ALTNAME_INVALID");
    } finally {
      await peer.close();
    }
  });

  it("refuses an untrusted certificate", async () => {
    const peer = await tlsPeer();
    try {
      const dns = fakeResolver({ "peer.example.org": ["127.0.0.1"] });
      const error = await outcome(guardedFetch(`https://peer.example.org:${peer.port}/`, {}, { connect: wire().connect, resolve: dns.resolve, allowLoopback: true }));
      expect(error).toMatchObject({ code: "DISPATCH_FAILED", reason: "connection_failed" });
    } finally {
      await peer.close();
    }
  });
});
