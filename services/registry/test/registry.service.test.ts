import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registryCommands } from "@intentmesh/contracts";
import { startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { startRegistryService, type RegistryService } from "../src/service";

/**
 * The registry alone (no intents, channels or memory service): registration, heartbeats, the
 * sweeper on the manual clock and pool capacity, through the typed client of the route catalogue.
 */
let harness: ServiceHarness<RegistryService>;
beforeAll(async () => {
  harness = await startServiceHarness((connections) => startRegistryService({ ...connections, sweepIntervalMs: 3_600_000 }));
});
afterAll(async () => {
  await harness?.stop();
});

const register = (agentId: string, body: Record<string, unknown> = {}) =>
  harness.api("agentsRegister", { key: "agent", body: { agent_id: agentId, role_id: "writer", capacity: { max_concurrent_tasks: 4 }, ...body } });

describe("the registry service on its own", () => {
  it("registers an agent and answers the typed record", async () => {
    const res = await register("harness-a");
    expect(res.status).toBe(201);
    const agent = res.ok();
    expect(agent.agent_id).toBe("harness-a");
    expect(agent.status).toBe("active");
    expect(agent.version).toBe(1);
    expect(res.headers.get("etag")).toBe('"1"');
  });

  it("walks a silent agent to unhealthy and dead on the server clock; a dead agent's heartbeat is 410", async () => {
    await register("harness-silent", { heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 20, dead_after_seconds: 40 } });
    harness.clock.advance(21_000);
    await harness.service.sweeper.sweep();
    expect((await harness.api("agentsGet", { params: { agent_id: "harness-silent" } })).ok().status).toBe("unhealthy");
    harness.clock.advance(20_000);
    await harness.service.sweeper.sweep();
    expect((await harness.api("agentsGet", { params: { agent_id: "harness-silent" } })).ok().status).toBe("dead");
    const beat = await harness.api("agentsHeartbeat", {
      key: "agent",
      params: { agent_id: "harness-silent" },
      body: { status: "active", client_timestamp: harness.clock.now().toISOString() },
    });
    expect(beat.status).toBe(410);
    expect(beat.error().code).toBe("AGENT_GONE");
  });

  it("answers a heartbeat with the typed acknowledgement", async () => {
    await register("harness-beat");
    const beat = (await harness.api("agentsHeartbeat", { key: "agent", params: { agent_id: "harness-beat" }, body: { status: "active", client_timestamp: harness.clock.now().toISOString() } })).ok();
    expect(beat.acknowledged).toBe(true);
    expect(beat.agent_status).toBe("active");
    expect(beat.pending_commands).toEqual([]);
  });

  it("sums a role's pool over its active members, over HTTP and over the bus alike", async () => {
    await register("harness-pool-1", { role_id: "pool-role", capacity: { max_concurrent_tasks: 5 } });
    await register("harness-pool-2", { role_id: "pool-role", capacity: { max_concurrent_tasks: 3 } });
    const load = { status: "active", current_load: 2, client_timestamp: harness.clock.now().toISOString() };
    expect((await harness.api("agentsHeartbeat", { key: "agent", params: { agent_id: "harness-pool-1" }, body: load })).status).toBe(200);
    const pool = (await harness.api("agentsPool", { params: { role_id: "pool-role" } })).ok();
    expect(pool).toEqual({ role_id: "pool-role", members: 2, max_concurrent_tasks: 8, current_load: 2, available_capacity: 6 });
    expect(await harness.call(registryCommands.pool, { role_id: "pool-role" })).toEqual(pool);
  });

  it("answers 503 SERVICE_UNAVAILABLE for another service's routes, which this harness does not run", async () => {
    const res = await harness.api("intentsList");
    expect(res.status).toBe(503);
    expect(res.error().code).toBe("SERVICE_UNAVAILABLE");
  });
});
