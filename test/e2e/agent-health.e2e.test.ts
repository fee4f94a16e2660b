import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { expectError, uniqueTag } from "../support/e2e-helpers";

/** Issue 31 part 2: GET /agents/{id}/health, which the official MCP server's get_health calls. */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const as = (agentId: string) => ({ "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": agentId });
const health = (agentId: string, key: keyof typeof TEST_KEYS = "agent") => cluster.api(`/agents/${encodeURIComponent(agentId)}/health`, { key });

describe("GET /agents/{id}/health", () => {
  it("answers the health now on the server clock: silence already due applies before the sweeper runs, a heartbeat restores it", async () => {
    const id = uniqueTag("health");
    const registered = await cluster.api("/agents", { body: { agent_id: id, heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 }, capacity: { max_concurrent_tasks: 4 } }, key: "agent" });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const start = clock().now();
    const fresh = await health(id);
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(200);
    expect(fresh.body).toEqual({
      agent_id: id,
      status: "active",
      recorded_status: "active",
      healthy: true,
      last_heartbeat_at: registered.body.last_heartbeat_at,
      seconds_since_heartbeat: 0,
      heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 },
      unhealthy_at: new Date(start.getTime() + 30_000).toISOString().replace("Z", "+00:00"),
      dead_at: new Date(start.getTime() + 60_000).toISOString().replace("Z", "+00:00"),
      capacity: { max_concurrent_tasks: 4, current_load: 0, available: 4 },
      tasks_in_progress: 0,
      drain_deadline: null,
      checked_at: registered.body.last_heartbeat_at,
    });

    clock().advance(30_000);
    expect((await health(id)).body).toMatchObject({ status: "unhealthy", recorded_status: "active", healthy: false, seconds_since_heartbeat: 30, unhealthy_at: null });
    const beat = await cluster.api(`/agents/${id}/heartbeat`, { body: { status: "active", client_timestamp: clock().now().toISOString() }, headers: as(id), key: null });
    expect(beat.status, JSON.stringify(beat.body)).toBe(200);
    expect((await health(id)).body).toMatchObject({ status: "active", healthy: true, seconds_since_heartbeat: 0 });
    // Read-only: asking changed nothing.
    expect((await cluster.api(`/agents/${id}`, { key: "agent" })).body.version).toBe((await cluster.api(`/agents/${id}`, { key: "admin" })).body.version);
  });

  it("is readable by the agent's own key, coordinators, operators and admins; another agent key is refused; unknown agents are 404", async () => {
    const id = uniqueTag("health");
    expect((await cluster.api("/agents", { body: { agent_id: id }, key: "agent" })).status).toBe(201);
    for (const key of ["admin", "coordinator", "operator"] as const) expect((await health(id, key)).status).toBe(200);
    expectError(await health(id, "other"), 403, "FORBIDDEN");
    expectError(await health(uniqueTag("nobody"), "admin"), 404, "AGENT_NOT_FOUND");
    expectError(await cluster.api(`/agents/${id}/health?x=%00`, { key: "admin" }), 400, "NUL_CHARACTER");
  });
});
