import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@intentmesh/sdk";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { createIntent, expectRejected, UNKNOWN_ID } from "../support/e2e-helpers";

/** One request id per request (issue 17): answered, in error bodies, and in the gateway's one line per request. */
let cluster: TestCluster;
const lines: string[] = [];
beforeAll(async () => {
  cluster = await startTestCluster({ logDestination: { write: (line: string) => void lines.push(line) } });
});
afterAll(async () => {
  await cluster?.stop();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const requestLines = () => lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
/** A typed client that sends the given X-Request-Id with every call (the SDK's per-client headers). */
const withRequestId = (requestId: string, key: keyof typeof TEST_KEYS = "admin", agentId?: string) =>
  createClient({ baseUrl: cluster.baseUrl, apiKey: TEST_KEYS[key], agentId, headers: { "X-Request-Id": requestId }, retry: { attempts: 1 } });

describe("request ids and the access log", () => {
  // Raw: this test is about the X-Request-Id header on the wire (and /healthz has no operation).
  it("answers the client's X-Request-Id, or a new UUID when it sent none or one that is not acceptable", async () => {
    const intent = await createIntent(cluster);
    const given = await cluster.api(`/intents/${intent.id}`, { headers: { "X-Request-Id": "client-req_42.a" } });
    expect(given.headers.get("x-request-id")).toBe("client-req_42.a");
    const none = await cluster.api(`/intents/${intent.id}`);
    expect(none.headers.get("x-request-id")).toMatch(UUID);
    const bad = await cluster.api(`/intents/${intent.id}`, { headers: { "X-Request-Id": "x".repeat(300) } });
    expect(bad.headers.get("x-request-id")).toMatch(UUID);
    expect((await cluster.api("/healthz")).headers.get("x-request-id")).toMatch(UUID);
  });

  it("puts the request id in error bodies", async () => {
    const refused = await expectRejected(withRequestId("err-7").send("intentsGet", { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
    expect(refused.body?.request_id).toBe("err-7");
    expect(refused.requestId).toBe("err-7");
    // Raw: a request without any key, which the typed test clients always send.
    const unauthorized = await cluster.api("/intents", { key: null });
    expect(unauthorized.body.request_id).toBe(unauthorized.headers.get("x-request-id"));
  });

  it("logs one info line per request with the route template, status, duration, principal and request id, never the key", async () => {
    const intent = await createIntent(cluster);
    // One attempt only: a retry would log a second line with the same request id.
    expect((await withRequestId("log-line-1", "agent", "agent-logged").send("intentsGet", { intent_id: intent.id })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    const line = requestLines().find((l) => l.request_id === "log-line-1");
    expect(line).toMatchObject({ level: 30, method: "GET", route: "/intents/{intent_id}", status: 200, principal: "agent-1", agent_id: "agent-logged" });
    expect(typeof line.ms).toBe("number");
    expect(lines.join("\n")).not.toContain(TEST_KEYS.agent);
    expect(requestLines().filter((l) => l.request_id === "log-line-1")).toHaveLength(1);
  });
});
