import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectApiError as expectError, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { uniqueTag } from "../../../test/support/e2e-helpers";
import { startRegistryService, type RegistryService } from "../src/service";

/** GET /agents/{id}/health (issue 31 part 2; the official MCP server's get_health): the registry alone. */
let harness: ServiceHarness<RegistryService>;
beforeAll(async () => {
  harness = await startServiceHarness((connections) => startRegistryService({ ...connections, sweepIntervalMs: 3_600_000 }));
});
afterAll(async () => {
  await harness?.stop();
});

type KeyName = "agent" | "other" | "admin" | "coordinator" | "operator";
const health = (agentId: string, key: KeyName = "agent") => harness.api("agentsHealth", { key, params: { agent_id: agentId } });

describe("GET /agents/{id}/health", () => {
  it("answers the health now on the server clock: silence already due applies before the sweeper runs, a heartbeat restores it", async () => {
    const id = uniqueTag("health");
    const registered = (
      await harness.api("agentsRegister", { key: "agent", body: { agent_id: id, heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 }, capacity: { max_concurrent_tasks: 4 } } })
    ).ok();
    const start = harness.clock.now();
    expect((await health(id)).ok()).toEqual({
      agent_id: id,
      status: "active",
      recorded_status: "active",
      healthy: true,
      last_heartbeat_at: registered.last_heartbeat_at,
      seconds_since_heartbeat: 0,
      heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 },
      unhealthy_at: new Date(start.getTime() + 30_000).toISOString().replace("Z", "+00:00"),
      dead_at: new Date(start.getTime() + 60_000).toISOString().replace("Z", "+00:00"),
      capacity: { max_concurrent_tasks: 4, current_load: 0, available: 4 },
      tasks_in_progress: 0,
      drain_deadline: null,
      checked_at: registered.last_heartbeat_at,
    });

    harness.clock.advance(30_000);
    expect((await health(id)).ok()).toMatchObject({ status: "unhealthy", recorded_status: "active", healthy: false, seconds_since_heartbeat: 30, unhealthy_at: null });
    const beat = await harness.api("agentsHeartbeat", { key: "agent", headers: { "X-Agent-ID": id }, params: { agent_id: id }, body: { status: "active", client_timestamp: harness.clock.now().toISOString() } });
    expect(beat.status).toBe(200);
    expect((await health(id)).ok()).toMatchObject({ status: "active", healthy: true, seconds_since_heartbeat: 0 });
    // Read-only: asking changed nothing.
    const version = async (key: KeyName) => (await harness.api("agentsGet", { key, params: { agent_id: id } })).ok().version;
    expect(await version("agent")).toBe(await version("admin"));
  });

  it("is readable by the agent's own key, coordinators, operators and admins; another agent key is refused; unknown agents are 404", async () => {
    const id = uniqueTag("health");
    expect((await harness.api("agentsRegister", { key: "agent", body: { agent_id: id } })).status).toBe(201);
    for (const key of ["admin", "coordinator", "operator"] as const) expect((await health(id, key)).status).toBe(200);
    expectError(await health(id, "other"), 403, "FORBIDDEN");
    expectError(await health(uniqueTag("nobody"), "admin"), 404, "AGENT_NOT_FOUND");
    expectError(await harness.api("agentsHealth", { key: "admin", params: { agent_id: id }, query: { x: "\u0000" } }), 400, "NUL_CHARACTER");
  });
});
