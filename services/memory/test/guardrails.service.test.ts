import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { startMemoryService, type MemoryService } from "../src/service";

/**
 * The coordinator guardrails of 2.14 that the memory service keeps alone, configured server-wide
 * (MEMORY_GUARDRAILS). Those that need tasks (working memory per task, required archives) stay in
 * test/e2e/memory-guardrails.e2e.test.ts.
 */
let harness: ServiceHarness<MemoryService>;
beforeAll(async () => {
  harness = await startServiceHarness((connections) =>
    startMemoryService({ ...connections, sweepIntervalMs: 3_600_000, guardrails: { denied_semantic_namespaces: ["secret.*"] } }),
  );
});
afterAll(async () => {
  await harness?.stop();
});

describe("memory guardrails", () => {
  it("denied semantic namespaces are closed to everyone but admins, in reads, writes and queries", async () => {
    const semantic = (namespace: string) => ({ namespace, key: "k", value: {}, memory_type: "semantic" });
    const refused = await harness.api("memoryCreate", { key: "coordinator", body: semantic("secret.keys") });
    expect({ status: refused.status, code: refused.error().code }).toEqual({ status: 403, code: "ACCESS_DENIED" });
    const byAdmin = (await harness.api("memoryCreate", { key: "admin", body: semantic("secret.keys") })).ok();
    expect((await harness.api("memoryCreate", { key: "coordinator", body: semantic("open.kb") })).status).toBe(201);
    const read = await harness.api("memoryGet", { key: "coordinator", params: { entry_id: byAdmin.id } });
    expect({ status: read.status, code: read.error().code }).toEqual({ status: 403, code: "ACCESS_DENIED" });
    const seen = (await harness.api("memoryQuery", { key: "coordinator", query: { memory_type: "semantic" } })).ok();
    expect(seen.entries.map((e) => e.namespace)).toEqual(["open.kb"]);
    expect((await harness.api("memoryQuery", { key: "admin", query: { memory_type: "semantic" } })).ok().total).toBe(2);
  });
});
