import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import express from "express";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ManualClock, type Caller } from "@intentmesh/contracts";
import { createLogger } from "@intentmesh/telemetry";
import type { RouteRunner } from "./app";
import type { EventFeed } from "./event-feed";
import { errorHandler } from "./http";
import { createMcp, MCP_LIVE_PATH } from "./mcp";

/**
 * The live endpoint's session rules, without a cluster: a runner that answers {} to every route
 * and a feed that records who follows which intent. The e2e test (test/e2e/mcp.e2e.test.ts)
 * drives the real thing; this one holds the limits that need many sessions or time to pass.
 */
const logger = createLogger("test", "silent");
const INTENT = "0b6f3c1e-6a51-4d7e-9a4b-2f1d8c3e5a70";
const caller: Caller = { principal: "tester", roles: ["admin"], actor: "tester", agent_id: null };

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function serve(limits: { max?: number; idleMs?: number; subscriptionsPerSession?: number }) {
  const clock = new ManualClock("2026-11-25T00:00:00.000Z");
  const following = new Map<string, number>();
  const feed = {
    subscribe: (id: string) => {
      following.set(id, (following.get(id) ?? 0) + 1);
      return () => following.set(id, following.get(id)! - 1);
    },
  } as unknown as EventFeed;
  const runner = (): RouteRunner => async () => ({ status: 200, body: new TextEncoder().encode("{}"), headers: {} });
  const mcp = createMcp({ runner, logger, version: "test", feed, sessions: limits, clock });
  const app = express();
  app.use((req, _res, next) => {
    req.caller = caller;
    next();
  });
  app.use(express.json());
  app.post(MCP_LIVE_PATH, mcp.live);
  app.get(MCP_LIVE_PATH, mcp.live);
  app.delete(MCP_LIVE_PATH, mcp.live);
  app.use(errorHandler(logger));
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(async () => {
    await mcp.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${MCP_LIVE_PATH}`;
  return { mcp, clock, following, url };
}

async function connect(url: string) {
  const client = new Client({ name: "unit", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  cleanup.push(() => client.close());
  return { client, transport };
}

/** An initialize without the client's notification stream (so the session has no open stream). */
const initialize = (url: string) =>
  fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
  });

describe("the live MCP endpoint's sessions", () => {
  it("holds at most `max` sessions: another initialize is 503 SERVICE_UNAVAILABLE", async () => {
    const { url, mcp } = await serve({ max: 1 });
    const first = await initialize(url);
    expect(first.status).toBe(200);
    expect(first.headers.get("mcp-session-id")).toBeTruthy();
    await first.text();
    expect(mcp.sessionCount).toBe(1);
    const second = await initialize(url);
    expect(second.status).toBe(503);
    expect(((await second.json()) as { code: string }).code).toBe("SERVICE_UNAVAILABLE");
  });

  it("closes a session idle for idleMs on the clock, and its subscriptions; one with an open stream is not idle", async () => {
    const { url, mcp, clock, following } = await serve({ idleMs: 60_000 });
    const idle = await initialize(url);
    const idleId = idle.headers.get("mcp-session-id")!;
    await idle.text();
    const { client } = await connect(url); // opens its notification stream
    await client.subscribeResource({ uri: `intentmesh://intents/${INTENT}` });
    expect(following.get(INTENT)).toBe(1);
    expect(mcp.sessionCount).toBe(2);

    clock.advance(59_999);
    expect(await mcp.sweepIdle()).toBe(0);
    clock.advance(1);
    // The client's stream may still be opening: the idle session goes, the listening one stays.
    await expect.poll(async () => (await mcp.sweepIdle(), mcp.sessionCount)).toBe(1);
    const gone = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", "Mcp-Session-Id": idleId }, body: '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' });
    expect(gone.status).toBe(404);
    expect(following.get(INTENT)).toBe(1);
    // A client that goes away without DELETE: its stream closes, and idleMs later the session and its subscription end.
    await client.close();
    await expect
      .poll(async () => {
        clock.advance(60_000);
        await mcp.sweepIdle();
        return mcp.sessionCount;
      })
      .toBe(0);
    expect(following.get(INTENT)).toBe(0);
  });

  it("follows at most subscriptionsPerSession resources; subscribing twice to one is one subscription", async () => {
    const { url, following } = await serve({ subscriptionsPerSession: 1 });
    const { client } = await connect(url);
    const uri = `intentmesh://intents/${INTENT}`;
    await client.subscribeResource({ uri });
    await client.subscribeResource({ uri });
    expect(following.get(INTENT)).toBe(1);
    await expect(client.subscribeResource({ uri: `${uri}/events` })).rejects.toThrow(/at most 1/);
    await client.unsubscribeResource({ uri });
    expect(following.get(INTENT)).toBe(0);
    await client.subscribeResource({ uri: `${uri}/events` });
    expect(following.get(INTENT)).toBe(1);
  });
});
