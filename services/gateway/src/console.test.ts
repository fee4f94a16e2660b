import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeys } from "./api-keys";
import { mountConsole } from "./console";
import { errorHandler } from "./http";

const silent = { error() {}, warn() {}, info() {}, debug() {} } as unknown as Parameters<typeof errorHandler>[0];
const keys = new ApiKeys([
  { key: "operator-key-0123456789", principal: "olga", roles: ["operator"] },
  { key: "peer-key-0123456789abcd", principal: "peer.example", roles: ["federation"] },
  { key: "agent-key-0123456789abcd", principal: "agent-1", roles: ["agent"] },
]);

async function serve(dir: string): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  mountConsole(app, keys, dir);
  app.use(errorHandler(silent));
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("the console mount", () => {
  let dir: string;
  let built: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "console-"));
    fs.mkdirSync(path.join(dir, "assets"));
    fs.writeFileSync(path.join(dir, "index.html"), "<!doctype html><title>console</title>");
    fs.writeFileSync(path.join(dir, "assets", "index-abc.js"), "console.log(1)");
    built = await serve(dir);
  });
  afterAll(async () => {
    await built.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("serves the page without a key, under a policy that allows only its own origin", async () => {
    const res = await fetch(`${built.url}/console/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("<title>console</title>");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("cache-control")).toBe("no-cache");
  });

  it("redirects /console to /console/ and caches hashed assets for good", async () => {
    const redirect = await fetch(`${built.url}/console`, { redirect: "manual" });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get("location")).toBe("/console/");
    const asset = await fetch(`${built.url}/console/assets/index-abc.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toContain("immutable");
  });

  it("answers who a key is at /console/session, and 401 for no key or a wrong one", async () => {
    const me = await fetch(`${built.url}/console/session`, { headers: { "X-API-Key": "operator-key-0123456789" } });
    expect(me.status).toBe(200);
    expect(me.headers.get("cache-control")).toBe("no-store");
    const body = (await me.json()) as { principal: string; roles: string[]; operations: string[] };
    expect(body).toMatchObject({ principal: "olga", roles: ["operator"] });
    // The operations its roles admit, by the route catalogue's rule: an operator answers and decides, creates no task.
    expect(body.operations).toEqual(expect.arrayContaining(["governanceRespond", "governanceApprove", "governanceDeny", "intentsList", "agentsChangeStatus"]));
    expect(body.operations).not.toContain("tasksCreate");
    const agent = (await (await fetch(`${built.url}/console/session`, { headers: { "X-API-Key": "agent-key-0123456789abcd" } })).json()) as { operations: string[] };
    expect(agent.operations).toContain("intentsList");
    expect(agent.operations).not.toContain("governanceRespond");
    expect(agent.operations).not.toContain("governanceApprove");
    for (const headers of [{}, { "X-API-Key": "not-a-key-0123456789" }] as Record<string, string>[]) {
      const refused = await fetch(`${built.url}/console/session`, { headers });
      expect(refused.status).toBe(401);
      const body = (await refused.json()) as { code: string; message: string };
      expect(body.code).toBe("UNAUTHORIZED");
      expect(JSON.stringify(body)).not.toContain("not-a-key");
    }
  });

  it("refuses a peer server's key (role federation) with 403", async () => {
    const res = await fetch(`${built.url}/console/session`, { headers: { "X-API-Key": "peer-key-0123456789abcd" } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { code: string }).code).toBe("FORBIDDEN");
  });

  it("says how to build the console when its files are absent (503 SERVICE_UNAVAILABLE)", async () => {
    const empty = await serve(path.join(dir, "absent"));
    try {
      const res = await fetch(`${empty.url}/console/`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe("SERVICE_UNAVAILABLE");
      expect(body.message).toContain("pnpm install");
    } finally {
      await empty.close();
    }
  });
});
