import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";

// Secrets never appear in logs, events or error messages: every log line at debug level is
// captured while requests with good and bad keys go through, then searched for the keys.
const lines: string[] = [];
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ logDestination: { write: (line) => void lines.push(line) } });
});
afterAll(async () => {
  await cluster?.stop();
});

describe("API keys", () => {
  it("never reach a log line, an event or an error body", async () => {
    const wrongKey = "wrong-key-that-must-not-be-logged-123";
    const refused = await cluster.api("/intents", { key: null, headers: { "X-API-Key": wrongKey } });
    expect(refused.status).toBe(401);
    expect(JSON.stringify(refused.body)).not.toContain(wrongKey);

    const created = await cluster.api("/intents", { body: { title: "secret-free" } });
    expect(created.status).toBe(201);
    await cluster.api(`/intents/${created.body.id}/state`, { body: [{ op: "remove", path: "missing" }], headers: { "If-Match": "1" } });
    const events = await cluster.api(`/intents/${created.body.id}/events`);

    expect(lines.length).toBeGreaterThan(0);
    const everything = lines.join("\n") + JSON.stringify(events.body);
    for (const key of [...Object.values(TEST_KEYS), wrongKey]) expect(everything).not.toContain(key);
  });
});
