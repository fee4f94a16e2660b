import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectApiError as expectError, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { TIMESTAMP, uniqueTag } from "../../../test/support/e2e-helpers";
import type { RegistryService } from "../src/service";

/**
 * The registry's own rules (spec 4.9 rules 1-6, 5.4): registration, If-Match on status changes,
 * re-registration and key bindings, listing, discovery and pools, through the typed client of the
 * route catalogue. The intents service runs beside it only because a status change by anyone but
 * the agent or a coordinator asks it whether the caller holds the coordinator lease of an intent
 * the agent works on (spec 5.3); what the registry does with agents' work is tested in
 * test/e2e/registry.e2e.test.ts.
 */
let harness: ServiceHarness<{ registry: RegistryService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({ intents: { leaseSweepIntervalMs: 3_600_000, checkpoints: { intervalMs: 3_600_000 } }, registry: { sweepIntervalMs: 3_600_000 } }),
  );
});
afterAll(async () => {
  await harness?.stop();
});

type KeyName = "agent" | "other" | "admin" | "coordinator" | "operator";
const register = (body: Record<string, unknown>, key: KeyName = "agent") => harness.api("agentsRegister", { key, body });
const beat = (agentId: string, body: Record<string, unknown> = {}) =>
  harness.api("agentsHeartbeat", { key: "agent", params: { agent_id: agentId }, body: { status: "active", client_timestamp: harness.clock.now().toISOString(), ...body } });
const patchStatus = (agentId: string, body: Record<string, unknown>, ifMatch?: string) =>
  harness.api("agentsChangeStatus", { key: "agent", params: { agent_id: agentId }, body, headers: ifMatch ? { "If-Match": ifMatch } : {} });
const events = async (agentId: string, key: KeyName = "agent") => (await harness.api("agentsListEvents", { key, params: { agent_id: agentId } })).ok().events;

describe("registration (4.9 rules 1-6)", () => {
  it("answers 201 with the full record and the version as ETag", async () => {
    const id = uniqueTag("reg");
    const res = await register({ agent_id: id, role_id: "researcher", name: "R", capabilities: ["search", "summarize"], capacity: { max_concurrent_tasks: 4 }, endpoint: "https://agents.example.com/r", metadata: { model: "x" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    const agent = res.ok();
    expect(agent).toMatchObject({
      agent_id: id,
      role_id: "researcher",
      name: "R",
      capabilities: ["search", "summarize"],
      capacity: { max_concurrent_tasks: 4, current_load: 0 },
      status: "active",
      endpoint: "https://agents.example.com/r",
      heartbeat_config: { interval_seconds: 30, unhealthy_after_seconds: 90, dead_after_seconds: 300 },
      metadata: { model: "x" },
      version: 1,
      origin_server_url: null,
    });
    expect(agent.registered_at).toMatch(TIMESTAMP);
    expect(agent.last_heartbeat_at).toMatch(TIMESTAMP);
  });

  it("generates an agent_id when none is given", async () => {
    const res = await register({ name: "anonymous" });
    expect(res.status).toBe(201);
    expect(res.ok().agent_id).toMatch(/^agent-[0-9a-f-]{36}$/);
  });

  it("refuses an id that is active with 409", async () => {
    const id = uniqueTag("dup");
    expect((await register({ agent_id: id })).status).toBe(201);
    expectError(await register({ agent_id: id }), 409, "AGENT_ALREADY_REGISTERED");
    // Rule 3 holds whoever asks: another key gets the same 409 for a live id.
    expectError(await register({ agent_id: id }, "other"), 409, "AGENT_ALREADY_REGISTERED");
  });

  it("refuses an invalid heartbeat_config with 400 naming the rule", async () => {
    const low = expectError(await register({ agent_id: uniqueTag("hb"), heartbeat_config: { interval_seconds: 30, unhealthy_after_seconds: 59 } }), 400, "VALIDATION_FAILED");
    expect(low.message).toContain("unhealthy_after_seconds must be at least 2 x interval_seconds");
    const dead = expectError(await register({ agent_id: uniqueTag("hb"), heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 20, dead_after_seconds: 39 } }), 400, "VALIDATION_FAILED");
    expect(dead.message).toContain("dead_after_seconds must be at least 2 x unhealthy_after_seconds");
    expect((await register({ agent_id: uniqueTag("hb"), heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 20, dead_after_seconds: 40 } })).status).toBe(201);
  });

  it("requires If-Match on PATCH and PUT /agents/{id}/status: 428 without it, 409 when stale, and nothing changes", async () => {
    const id = uniqueTag("ifmatch");
    await register({ agent_id: id });
    const put = (ifMatch?: string) => harness.api("agentsChangeStatusByPut", { key: "agent", params: { agent_id: id }, body: { status: "draining" }, headers: ifMatch ? { "If-Match": ifMatch } : {} });
    for (const change of [(ifMatch?: string) => patchStatus(id, { status: "draining" }, ifMatch), put]) {
      expectError(await change(), 428, "PRECONDITION_REQUIRED");
      expect(expectError(await change("7"), 409, "VERSION_MISMATCH").current_version).toBe(1);
    }
    expectError(await patchStatus(id, { status: "deregistered" }), 428, "PRECONDITION_REQUIRED");
    expect((await harness.api("agentsGet", { key: "agent", params: { agent_id: id } })).ok()).toMatchObject({ status: "active", version: 1 });
    expect(await events(id)).toHaveLength(1);
    const drained = await patchStatus(id, { status: "draining" }, 'W/"1"');
    expect(drained.status).toBe(200);
    expect(drained.headers.get("etag")).toBe('"2"');
  });

  it("re-activates a deregistered id with its version reset, and emits agent.lifecycle", async () => {
    const id = uniqueTag("re");
    await register({ agent_id: id });
    expect((await patchStatus(id, { status: "draining" }, "1")).ok().version).toBe(2);
    expect((await harness.api("agentsDeregister", { key: "agent", params: { agent_id: id } })).ok()).toMatchObject({ status: "deregistered", version: 3 });
    const again = await register({ agent_id: id, name: "second life" });
    expect(again.status).toBe(201);
    expect(again.ok()).toMatchObject({ status: "active", version: 1, name: "second life" });
    expect((await events(id)).map((e) => [e.payload.previous_status, e.payload.new_status, e.payload.reason])).toEqual([
      ["registering", "active", "registered"],
      ["active", "draining", "drain_initiated"],
      ["draining", "deregistered", "deregistered"],
      ["deregistered", "active", "re_registered"],
    ]);
  });

  it("keeps the binding across re-registration: another key may not take the id (403)", async () => {
    const id = uniqueTag("bind");
    await register({ agent_id: id });
    await harness.api("agentsDeregister", { key: "agent", params: { agent_id: id } });
    expectError(await register({ agent_id: id }, "other"), 403, "AGENT_KEY_MISMATCH");
  });

  it("refuses a registration whose X-Agent-ID names another key's agent (403 AGENT_NOT_BOUND); its own id or its own agent is fine", async () => {
    const victim = uniqueTag("victim");
    await register({ agent_id: victim });
    const registerAs = (actingAgent: string, agentId: string) => harness.api("agentsRegister", { key: "other", headers: { "X-Agent-ID": actingAgent }, body: { agent_id: agentId } });
    expectError(await registerAs(victim, uniqueTag("new")), 403, "AGENT_NOT_BOUND");
    const self = uniqueTag("self");
    expect((await registerAs(self, self)).status).toBe(201);
    const worker = uniqueTag("worker");
    expect((await registerAs(self, worker)).status).toBe(201);
    expect((await events(worker, "other"))[0]!.actor).toBe(self);
  });

  it("refuses endpoint and origin_server_url addresses other than http(s) with 400", async () => {
    const refused = expectError(await register({ agent_id: uniqueTag("url"), endpoint: "file:///etc/passwd" }), 400, "VALIDATION_FAILED");
    expect(refused.message).toContain("endpoint: must be an http:// or https:// URL");
  });

  it("answers the alias paths of the OpenIntent clients", async () => {
    const id = uniqueTag("alias");
    expect((await harness.api("agentsRegisterAlias", { key: "agent", body: { agent_id: id } })).status).toBe(201);
    expect((await harness.api("agentsGetRecord", { key: "agent", params: { agent_id: id } })).ok().agent_id).toBe(id);
    const drain = await harness.api("agentsChangeStatusByPut", { key: "agent", params: { agent_id: id }, body: { status: "draining", drain_timeout_seconds: 60 }, headers: { "If-Match": "1" } });
    expect(drain.status).toBe(200);
    expect(drain.ok().status).toBe("draining");
  });
});

describe("listing and discovery (4.9, 5.4)", () => {
  it("filters by capabilities (ANY), status (default active), role_id and min_available_capacity, with the total", async () => {
    const role = uniqueTag("role");
    const ids = [uniqueTag("l"), uniqueTag("l"), uniqueTag("l"), uniqueTag("l")] as const;
    await register({ agent_id: ids[0], role_id: role, capabilities: ["a", "b"], capacity: { max_concurrent_tasks: 5 } });
    await register({ agent_id: ids[1], role_id: role, capabilities: ["c"], capacity: { max_concurrent_tasks: 2 } });
    await register({ agent_id: ids[2], role_id: role, capabilities: ["b"], capacity: { max_concurrent_tasks: 3 } });
    await register({ agent_id: ids[3], role_id: role, capabilities: ["a"] });
    await beat(ids[0], { current_load: 4 });
    await patchStatus(ids[2], { status: "draining" }, "1");

    const list = async (query: Record<string, string | number> = {}) => (await harness.api("agentsList", { key: "coordinator", query: { role_id: role, ...query } })).ok();
    const idsOf = async (query: Record<string, string | number>) => (await list(query)).agents.map((a) => a.agent_id).sort();
    const all = await list();
    expect(all.total).toBe(3);
    expect(all.agents.map((a) => a.agent_id).sort()).toEqual([ids[0], ids[1], ids[3]].sort());
    expect(Object.keys(all.agents[0]!).sort()).toEqual(["agent_id", "capabilities", "capacity", "last_heartbeat_at", "name", "role_id", "status"]);
    expect(await idsOf({ capabilities: "b,c" })).toEqual([ids[0], ids[1]].sort());
    expect(await idsOf({ status: "draining" })).toEqual([ids[2]]);
    expect((await list({ status: "active,draining" })).total).toBe(4);
    expect(await idsOf({ min_available_capacity: 2 })).toEqual([ids[1]]);
    expect(await idsOf({ min_available_capacity: 1 })).toEqual([ids[0], ids[1]].sort());
  });

  it("is restricted to coordinators and admins", async () => {
    expect((await harness.api("agentsList", { key: "admin" })).status).toBe(200);
    expectError(await harness.api("agentsList", { key: "agent" }), 403, "FORBIDDEN");
    expectError(await harness.api("agentsList", { key: "operator" }), 403, "FORBIDDEN");
  });

  it("reads one full record for the agent itself, coordinators, operators and admins; 404 for an unknown id", async () => {
    const id = uniqueTag("one");
    await register({ agent_id: id, metadata: { k: 1 } });
    const get = (agentId: string, key: KeyName) => harness.api("agentsGet", { key, params: { agent_id: agentId } });
    for (const key of ["agent", "coordinator", "operator", "admin"] as const) {
      const res = await get(id, key);
      expect(res.status).toBe(200);
      expect(res.headers.get("etag")).toBe('"1"');
      expect(res.ok()).toMatchObject({ metadata: { k: 1 }, heartbeat_config: { interval_seconds: 30 }, endpoint: null });
    }
    expectError(await get(id, "other"), 403, "FORBIDDEN");
    expectError(await get(uniqueTag("nobody"), "admin"), 404, "AGENT_NOT_FOUND");
  });

  it("gives pool capacity per role_id: sum of max_concurrent_tasks minus sum of current_load over active members", async () => {
    const role = uniqueTag("pool");
    const [a, b] = [uniqueTag("p"), uniqueTag("p")];
    await register({ agent_id: a, role_id: role, capacity: { max_concurrent_tasks: 4 } });
    await register({ agent_id: b, role_id: role, capacity: { max_concurrent_tasks: 6 } });
    await beat(a, { current_load: 3 });
    await beat(b, { current_load: 1 });
    expect((await harness.api("agentsPool", { key: "coordinator", params: { role_id: role } })).ok()).toEqual({ role_id: role, members: 2, max_concurrent_tasks: 10, current_load: 4, available_capacity: 6 });
    expectError(await harness.api("agentsPool", { key: "agent", params: { role_id: role } }), 403, "FORBIDDEN");
  });
});
