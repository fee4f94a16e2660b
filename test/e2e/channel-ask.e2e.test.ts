import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import type { BodyOf, Intentmesh } from "@intentmesh/sdk";
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
/** A registered agent: the typed client acting as it, and its headers for SSE and MCP. */
type Agent = { id: string; client: Intentmesh; headers: Record<string, string> };

async function agent(): Promise<Agent> {
  const id = uniqueTag("ask");
  const res = await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: id } });
  expect(res.status).toBe(201);
  return { id, client: cluster.sdk("agent", id), headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": id } };
}

async function setting(memberPolicy: "explicit" | "intent" = "explicit") {
  const intent = await createIntent(cluster, { status: "active" });
  const [asker, answerer, outsider] = [await agent(), await agent(), await agent()];
  const res = await cluster.sdk().send("channelsCreate", { intent_id: intent.id, body: { name: uniqueTag("c"), member_policy: memberPolicy, members: [asker.id, answerer.id] } });
  expect(res.status).toBe(201);
  return { intent, channel: res.data, asker, answerer, outsider };
}
const ask = (channelId: string, who: Agent, body: BodyOf<"channelsAsk">) => who.client.send("channelsAsk", { channel_id: channelId, body });

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
      const reply = await answerer.client.send("channelsReply", { channel_id: channel.id, message_id: request.id, body: { payload: { answer: "v2" } } });
      expect(reply.status).toBe(201);
      const answered = await pending;
      expect(answered.status).toBe(200);
      expect(answered.data.request).toMatchObject({ id: request.id, message_type: "request", sender: asker.id, to: answerer.id });
      expect(answered.data.response).toEqual(reply.data);
      expect(answered.data.response).toMatchObject({ correlation_id: request.id, message_type: "response", to: asker.id, payload: { answer: "v2" } });
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
