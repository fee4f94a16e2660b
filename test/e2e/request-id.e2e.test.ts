import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { createIntent, expectError, UNKNOWN_ID } from "../support/e2e-helpers";

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

describe("request ids and the access log", () => {
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
    const res = await cluster.api(`/intents/${UNKNOWN_ID}`, { headers: { "X-Request-Id": "err-7" } });
    expectError(res, 404, "INTENT_NOT_FOUND");
    expect(res.body.request_id).toBe("err-7");
    const unauthorized = await cluster.api("/intents", { key: null });
    expect(unauthorized.body.request_id).toBe(unauthorized.headers.get("x-request-id"));
  });

  it("logs one info line per request with the route template, status, duration, principal and request id, never the key", async () => {
    const intent = await createIntent(cluster);
    await cluster.api(`/intents/${intent.id}`, { headers: { "X-Request-Id": "log-line-1", "X-Agent-ID": "agent-logged" }, key: "agent" });
    await new Promise((r) => setTimeout(r, 50));
    const line = requestLines().find((l) => l.request_id === "log-line-1");
    expect(line).toMatchObject({ level: 30, method: "GET", route: "/intents/{intent_id}", status: 200, principal: "agent-1", agent_id: "agent-logged" });
    expect(typeof line.ms).toBe("number");
    expect(lines.join("\n")).not.toContain(TEST_KEYS.agent);
    expect(requestLines().filter((l) => l.request_id === "log-line-1")).toHaveLength(1);
  });
});
