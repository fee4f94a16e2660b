import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { createIntent, uniqueTag } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";

/**
 * Issue 31 part 2: POST /channels/{id}/ask (RFC 0021's ask(), the official MCP server's
 * openintent_ask): a request, then the wait for its first response, with a timeout. Its timeout
 * and refusals, the channels service's own rules, are tested in services/channels/test/ask.service.test.ts.
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
type Agent = { id: string; headers: Record<string, string> };

async function agent(): Promise<Agent> {
  const id = uniqueTag("ask");
  const res = await cluster.api("/agents", { body: { agent_id: id }, key: "agent" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id, headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": id } };
}
const as = (who: Agent, init: { method?: string; body?: unknown } = {}) => ({ ...init, key: null, headers: who.headers });

async function setting(memberPolicy: "explicit" | "intent" = "explicit") {
  const intent = await createIntent(cluster, { status: "active" });
  const [asker, answerer, outsider] = [await agent(), await agent(), await agent()];
  const res = await cluster.api(`/intents/${intent.id}/channels`, { body: { name: uniqueTag("c"), member_policy: memberPolicy, members: [asker.id, answerer.id] } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { intent, channel: res.body, asker, answerer, outsider };
}
const ask = (channelId: string, who: Agent, body: Record<string, unknown>) => cluster.api(`/channels/${channelId}/ask`, as(who, { body }));

describe("POST /channels/{id}/ask", () => {
  it("sends the request and answers it with the first response, once the asked agent replies", async () => {
    const { channel, asker, answerer } = await setting();
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/channels/${channel.id}`, answerer.headers);
    try {
      const pending = ask(channel.id, asker, { to: answerer.id, payload: { question: "which schema?" }, timeout: 30 });
      await sse.waitFor((client) => client.events.some((e) => e.data.message_type === "request"));
      const request = sse.events.find((e) => e.data.message_type === "request")!.data;
      expect(request).toMatchObject({ sender: asker.id, to: answerer.id, payload: { question: "which schema?" } });
      // The request expires at the timeout on the server clock (RFC 0021 3.1).
      expect(new Date(request.expires_at).getTime()).toBe(clock().now().getTime() + 30_000);
      const reply = await cluster.api(`/channels/${channel.id}/messages/${request.id}/reply`, as(answerer, { body: { payload: { answer: "v2" } } }));
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      const answered = await pending;
      expect(answered.status, JSON.stringify(answered.body)).toBe(200);
      expect(answered.body.request).toMatchObject({ id: request.id, message_type: "request", sender: asker.id, to: answerer.id });
      expect(answered.body.response).toEqual(reply.body);
      expect(answered.body.response).toMatchObject({ correlation_id: request.id, message_type: "response", to: asker.id, payload: { answer: "v2" } });
    } finally {
      await sse.close();
    }
  });

  it("is the channelsAsk tool of the MCP endpoint, its timeout a tool error carrying the code", async () => {
    const { channel, asker, answerer } = await setting();
    const client = new Client({ name: "ask-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${cluster.baseUrl}/mcp`), { requestInit: { headers: asker.headers } }));
    try {
      const reply = (await client.callTool({ name: "channelsAsk", arguments: { channel_id: channel.id, body: { to: answerer.id, payload: { q: 1 }, timeout: 1 } } })) as { isError?: boolean; structuredContent?: any };
      expect(reply.isError).toBe(true);
      expect(reply.structuredContent).toMatchObject({ code: "RESPONSE_TIMEOUT", details: { timeout_seconds: 1 } });
    } finally {
      await client.close();
    }
  });
});
