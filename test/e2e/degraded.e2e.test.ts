import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@intentmesh/telemetry";
import { startMemoryService } from "../../services/memory/src/service";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { createIntent, expectError } from "../support/e2e-helpers";

/** Issue 17 point 3: one backing service down leaves the gateway ready; only its routes answer 503. */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe("one backing service down", () => {
  it("keeps /readyz 200 with the service listed as degraded, answers 503 SERVICE_UNAVAILABLE on its routes only, and recovers", async () => {
    const ready = await cluster.api("/readyz", { key: null });
    expect(ready.status).toBe(200);
    expect(ready.body.degraded).toEqual([]);

    await cluster.memory.stop();
    const degraded = await cluster.api("/readyz", { key: null });
    expect(degraded.status).toBe(200);
    expect(degraded.body).toMatchObject({ ready: true, nats: "ok", degraded: ["memory"] });
    expect(degraded.body.services.memory.error).toEqual(expect.any(String));
    expect(degraded.body.services.intents.database).toBe("ok");

    // Raw: the Retry-After header is checked, which the typed client's errors do not carry.
    const memoryRoute = await cluster.api("/memory?limit=1");
    expectError(memoryRoute, 503, "SERVICE_UNAVAILABLE");
    expect(memoryRoute.headers.get("retry-after")).toBe("2");
    // Invalid input is still answered 400, as when the gateway checked every request up front:
    // it checks what failed (here: no service answered) before saying why.
    const invalid = await cluster.api("/memory?limit=not-a-number");
    expectError(invalid, 400, "VALIDATION_FAILED");
    expect(JSON.stringify(invalid.body.details.issues)).toContain("limit");
    // Other services' routes still work.
    const intent = await createIntent(cluster);
    expect((await cluster.sdk().send("intentsGet", { intent_id: intent.id })).status).toBe(200);

    cluster.memory = await startMemoryService({ bus: cluster.bus, database: cluster.database, logger: createLogger("test", "silent"), clock: cluster.clock, sweepIntervalMs: 3_600_000 });
    expect((await cluster.api("/readyz", { key: null })).body.degraded).toEqual([]);
    expect((await cluster.sdk().send("memoryQuery", { query: { limit: 1 } })).status).toBe(200);
  });
});
