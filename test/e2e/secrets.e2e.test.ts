import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { expectRejected } from "../support/e2e-helpers";

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
    // Raw: a key the typed client is not given (a wrong one) in the header.
    const refused = await cluster.api("/intents", { key: null, headers: { "X-API-Key": wrongKey } });
    expect(refused.status).toBe(401);
    expect(JSON.stringify(refused.body)).not.toContain(wrongKey);

    const admin = cluster.sdk();
    const created = await admin.send("intentsCreate", { body: { title: "secret-free" } });
    expect(created.status).toBe(201);
    const failed = await expectRejected(admin.send("intentsPatchState", { intent_id: created.data.id, ifMatch: 1, body: [{ op: "remove", path: "missing" }] }), 400, "PATCH_FAILED");
    const events = await admin.ops.intentsListEvents({ intent_id: created.data.id });

    expect(lines.length).toBeGreaterThan(0);
    const everything = lines.join("\n") + JSON.stringify(events) + JSON.stringify(failed.body);
    for (const key of [...Object.values(TEST_KEYS), wrongKey]) expect(everything).not.toContain(key);
  });
});
