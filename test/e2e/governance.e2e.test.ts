import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { governancePolicyCommands, type Caller } from "@intentmesh/contracts";
import { GovernanceChecks } from "@intentmesh/service";
import { createLogger } from "@intentmesh/telemetry";
import { startTestCluster, startTestGateway, type ApiResponse, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, keyHeader, UNKNOWN_ID } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";
import { startIntentsService, type IntentsService } from "../../services/intents/src/service";
import type { Gateway } from "../../services/gateway/src/app";

let cluster: TestCluster;
// A second replica of the gateway and of the intents service, on a bus connection of their own.
let secondBus: Bus;
let secondIntents: IntentsService;
let secondGateway: Gateway;
let second: TestCluster["api"];

beforeAll(async () => {
  cluster = await startTestCluster();
  const logger = createLogger("replica", "silent");
  secondBus = await connectBus(inject("natsUrl"), "replica", cluster.namespace);
  secondBus.checks = cluster.bus.checks; // the replica is held to the catalogue like the cluster
  secondIntents = await startIntentsService({ bus: secondBus, database: cluster.database, logger, clock: cluster.clock, leaseSweepIntervalMs: 3_600_000 });
  ({ gateway: secondGateway, api: second } = await startTestGateway(secondBus, logger));
});
afterAll(async () => {
  await secondGateway?.stop();
  await secondIntents?.stop();
  await secondBus?.close();
  await cluster?.stop();
});

const put = (intentId: string, policy: unknown, version: number | null, key: "admin" | "operator" | "agent" = "admin") =>
  cluster.api(`/intents/${intentId}/governance`, { method: "PUT", body: policy, key, headers: version === null ? {} : { "If-Match": String(version) } });
const agent = (id: string) => ({ key: "agent" as const, headers: { "X-Agent-ID": id } });

async function governed(policy: Record<string, unknown>) {
  const intent = await createIntent(cluster);
  const res = await put(intent.id, policy, intent.version);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

function expectViolation(res: ApiResponse, rule: string) {
  expectError(res, 403, "GOVERNANCE_VIOLATION");
  expect(res.body.details.rule).toBe(rule);
  expect(res.body).toMatchObject({ error: "governance_violation", rule });
}

describe("PUT / GET / DELETE /intents/{id}/governance (4.6)", () => {
  it("If-Match: 428 missing, 409 stale; version + 1, new ETag, governance.policy_set over SSE; GET shows the effective policy", async () => {
    const intent = await createIntent(cluster);
    expectError(await put(intent.id, { write_scope: "assigned_only" }, null), 428, "PRECONDITION_REQUIRED");
    expectError(await put(intent.id, { write_scope: "assigned_only" }, intent.version + 1), 409, "VERSION_MISMATCH");
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader("admin"));
    const res = await put(intent.id, { completion_mode: "quorum", quorum_threshold: 0.5, max_cost: 0 }, intent.version);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.version).toBe(intent.version + 1);
    expect(res.headers.get("etag")).toBe(`"${intent.version + 1}"`);
    await sse.waitFor((c) => c.events.some((e) => e.event === "governance.policy_set"));
    await sse.close();
    const got = await cluster.api(`/intents/${intent.id}/governance`);
    expect(got.body).toEqual({
      intent_id: intent.id,
      governance_policy: { completion_mode: "quorum", quorum_threshold: 0.5, max_cost: 0 },
      effective_policy: { completion_mode: "quorum", write_scope: "any", max_cost: 0, quorum_threshold: 0.5, allowed_agents: null, require_status_reason: false },
    });
    expectError(await cluster.api(`/intents/${intent.id}/governance`, { method: "DELETE" }), 428, "PRECONDITION_REQUIRED");
    const removed = await cluster.api(`/intents/${intent.id}/governance`, { method: "DELETE", headers: { "If-Match": String(res.body.version) } });
    expect(removed.status).toBe(200);
    expect(removed.body.version).toBe(res.body.version + 1);
    expect((await cluster.api(`/intents/${intent.id}/governance`)).body.governance_policy).toBeNull();
    const log = await allEvents(cluster, intent.id);
    expect(log.find((e) => e.event_type === "governance.policy_set").payload).toEqual({ governance_policy: { completion_mode: "quorum", quorum_threshold: 0.5, max_cost: 0 }, version: intent.version + 1 });
    expect(log.find((e) => e.event_type === "governance.policy_removed").payload).toEqual({ version: intent.version + 2 });
    expectError(await cluster.api(`/intents/${UNKNOWN_ID}/governance`), 404, "INTENT_NOT_FOUND");
  });

  it("PUT answers a body both readers use: the intent (the Python client's Intent.from_dict) and the policy (spec 4.6)", async () => {
    const intent = await createIntent(cluster, { title: "two readers", state: { step: 1 } });
    const policy = { completion_mode: "require_approval", allowed_agents: ["a-1"] };
    const res = await put(intent.id, policy, intent.version);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // Read as the Python client does (models.py Intent.from_dict): the intent at its new version, governance_policy as set.
    const stored = (await cluster.api(`/intents/${intent.id}`)).body;
    // Every field of the intent as GET shows it (whatever fields later issues add), at the new version.
    const asIntent = Object.fromEntries([...Object.keys(stored), "governance_policy"].map((key) => [key, res.body[key]]));
    expect(asIntent).toEqual({ ...stored, governance_policy: policy });
    expect(asIntent.version).toBe(intent.version + 1);
    // Read as the policy of spec 2.11: its six fields at the top level, the effective values GET shows.
    const asPolicy = (({ completion_mode, write_scope, max_cost, quorum_threshold, allowed_agents, require_status_reason }) =>
      ({ completion_mode, write_scope, max_cost, quorum_threshold, allowed_agents, require_status_reason }))(res.body);
    const got = await cluster.api(`/intents/${intent.id}/governance`);
    expect(asPolicy).toEqual(got.body.effective_policy);
    expect(asPolicy).toEqual({ completion_mode: "require_approval", write_scope: "any", max_cost: null, quorum_threshold: 0.5, allowed_agents: ["a-1"], require_status_reason: false });
  });

  it("validates every field of 2.11 as 400 and writes nothing; agents may not set a policy", async () => {
    const intent = await createIntent(cluster);
    for (const bad of [
      { completion_mode: "vote" },
      { write_scope: "mine" },
      { max_cost: -1 },
      { quorum_threshold: 0 },
      { quorum_threshold: 1.01 },
      { allowed_agents: "a" },
      { require_status_reason: "yes" },
      { unknown: 1 },
    ]) {
      expectError(await put(intent.id, bad, intent.version), 400, "VALIDATION_FAILED");
    }
    expectError(await put(intent.id, { write_scope: "any" }, intent.version, "agent"), 403, "FORBIDDEN");
    expect((await cluster.api(`/intents/${intent.id}`)).body.version).toBe(intent.version);
  });
});

describe("enforcement on every mutation (403 with details, nothing written)", () => {
  it("write_scope assigned_only: unassigned agents cannot patch, post events, lease, record costs, attach or fail; assigned ones can", async () => {
    const intent = await governed({ write_scope: "assigned_only" });
    const who = agent("outsider");
    expectViolation(await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/x", value: 1 }], headers: { ...who.headers, "If-Match": String(intent.version) }, key: who.key }), "write_scope");
    expectViolation(await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "note" }, ...who }), "write_scope");
    expectViolation(await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "x" }, ...who }), "write_scope");
    expectViolation(await cluster.api(`/intents/${intent.id}/costs`, { body: { cost_type: "api_call", amount: 1, unit: "cents" }, ...who }), "write_scope");
    expectViolation(
      await cluster.api(`/intents/${intent.id}/attachments`, { body: { filename: "a.txt", mime_type: "text/plain", size: 1, storage_url: "https://example.com/a.txt" }, ...who }),
      "write_scope",
    );
    expectViolation(await cluster.api(`/intents/${intent.id}/failures`, { body: { attempt_number: 1 }, ...who }), "write_scope");
    expectViolation(await cluster.api(`/intents/${intent.id}/status`, { body: { status: "blocked" }, headers: { ...who.headers, "If-Match": String(intent.version) }, key: who.key }), "write_scope");
    const res = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/x", value: 1 }], headers: { ...who.headers, "If-Match": String(intent.version) }, key: who.key });
    expect(res.body.details).toMatchObject({ rule: "write_scope", agent_id: "outsider", write_scope: "assigned_only" });
    // Nothing was written by any refusal.
    const after = (await cluster.api(`/intents/${intent.id}`)).body;
    expect(after.version).toBe(intent.version);
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type).filter((t) => !["intent_created", "governance.policy_set", "status_changed"].includes(t))).toEqual([]);
    // Assigned: allowed. A person (operator key, no agent id) is not bound by write_scope.
    expect((await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: "insider" } })).status).toBe(201);
    const ok = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/x", value: 2 }], headers: { "X-Agent-ID": "insider", "If-Match": String(intent.version) }, key: "agent" });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "note" }, key: "operator" })).status).toBe(201);
  });

  it("allowed_agents: other agents are refused, and may not be assigned", async () => {
    const intent = await governed({ allowed_agents: ["alice"] });
    expectViolation(await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "note" }, ...agent("bob") }), "allowed_agents");
    const refused = await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: "bob" } });
    expectViolation(refused, "allowed_agents");
    expect(refused.body.details).toMatchObject({ agent_id: "bob", allowed_agents: ["alice"] });
    expect((await cluster.api(`/intents/${intent.id}/agents`)).body.agents).toEqual([]);
    expect((await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "note" }, ...agent("alice") })).status).toBe(201);
    // A lease alice holds cannot be renewed or released by her once the policy leaves her out.
    const lease = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "draft" }, ...agent("alice") });
    expect(lease.status, JSON.stringify(lease.body)).toBe(201);
    expect((await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: "alice" } })).status).toBe(201);
    const current = (await cluster.api(`/intents/${intent.id}`)).body;
    expect((await put(intent.id, { allowed_agents: ["carol"] }, current.version)).status).toBe(200);
    expectViolation(await cluster.api(`/intents/${intent.id}/leases/${lease.body.id}/renew`, { body: {}, ...agent("alice") }), "allowed_agents");
    expectViolation(await cluster.api(`/intents/${intent.id}/leases/${lease.body.id}`, { method: "DELETE", ...agent("alice") }), "allowed_agents");
    expectViolation(await cluster.api(`/intents/${intent.id}/agents/alice`, { method: "DELETE", ...agent("alice") }), "allowed_agents");
    expect((await cluster.api(`/intents/${intent.id}/leases/${lease.body.id}`)).body).toMatchObject({ released_at: null, expires_at: lease.body.expires_at });
    // People are not bound by allowed_agents: an operator removes alice.
    expect((await cluster.api(`/intents/${intent.id}/agents/alice`, { method: "DELETE", key: "operator" })).status).toBe(200);
  });

  it("binds memory writes scoped to the intent too: create, update and delete are refused for agents the policy leaves out", async () => {
    const intent = await governed({ allowed_agents: ["alice"] });
    const entry = (namespace: string) => ({ namespace, key: "k", value: { v: 1 }, memory_type: "episodic", scope: { intent_id: intent.id } });
    expectViolation(await cluster.api("/memory", { body: entry("bob-notes"), ...agent("bob") }), "allowed_agents");
    expect((await cluster.api("/memory?agent_id=bob", { key: "admin" })).body.entries).toEqual([]);
    const created = await cluster.api("/memory", { body: entry("alice-notes"), ...agent("alice") });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // Once the policy leaves alice out, she can neither change nor delete what she wrote on the intent.
    const current = (await cluster.api(`/intents/${intent.id}`)).body;
    expect((await put(intent.id, { allowed_agents: ["carol"] }, current.version)).status).toBe(200);
    const patch = await cluster.api(`/memory/${created.body.id}`, { method: "PATCH", body: { value: { v: 2 } }, key: "agent", headers: { "X-Agent-ID": "alice", "If-Match": "1" } });
    expectViolation(patch, "allowed_agents");
    expectViolation(await cluster.api(`/memory/${created.body.id}`, { method: "DELETE", ...agent("alice") }), "allowed_agents");
    expect((await cluster.api(`/memory/${created.body.id}`, { key: "admin" })).body).toMatchObject({ version: 1, value: { v: 1 } });
    // Memory not scoped to a governed intent is not touched by its policy.
    expect((await cluster.api("/memory", { body: { namespace: "free", key: "k", value: { v: 1 }, memory_type: "episodic" }, ...agent("alice") })).status).toBe(201);
  });

  it("governance.check_many: each check with its own caller, answered in order; a refusal is that check's answer alone", async () => {
    const intent = await governed({ allowed_agents: ["alice"] });
    const open = await createIntent(cluster);
    const as = (id: string): Caller => ({ principal: "agent-key", roles: ["agent"], actor: id, agent_id: id });
    const client = new BusClient(cluster.bus);
    const { results } = await client.request(governancePolicyCommands.checkMany, as("service"), {
      checks: [
        { intent_id: intent.id, kind: "channel", caller: as("alice") },
        { intent_id: intent.id, kind: "memory", caller: as("bob") },
        { intent_id: open.id, kind: "channel", caller: as("bob") },
        { intent_id: UNKNOWN_ID, kind: "memory", caller: as("bob") },
      ],
    });
    expect(results).toHaveLength(4);
    expect(results[0]).toEqual({ allowed: true });
    expect(results[1]).toMatchObject({ error: { code: "GOVERNANCE_VIOLATION", status: 403, details: { rule: "allowed_agents", agent_id: "bob" } } });
    expect(results[2]).toEqual({ allowed: true });
    expect(results[3]).toEqual({ allowed: true });
    await expect(client.request(governancePolicyCommands.checkMany, as("service"), { checks: [] })).rejects.toMatchObject({ status: 400 });
    // Hostile input on the bus: more checks than one request carries, a malformed id, a NUL, a lone surrogate.
    const one = { intent_id: intent.id, kind: "channel" as const, caller: as("alice") };
    for (const checks of [
      Array.from({ length: 257 }, () => one),
      [{ ...one, intent_id: "not-a-uuid" }],
      [{ ...one, caller: as("al\u0000ice") }],
      [{ ...one, caller: as("al\ud800ice") }],
    ]) {
      await expect(client.request(governancePolicyCommands.checkMany, as("service"), { checks })).rejects.toMatchObject({ status: 400 });
    }
  });

  it("GovernanceChecks: the checks of one event-loop turn go in one check_many request; each settles on its own verdict; a policy that has answered binds the next turn", async () => {
    const intent = await governed({ allowed_agents: ["alice"] });
    const as = (id: string): Caller => ({ principal: "agent-key", roles: ["agent"], actor: id, agent_id: id });
    const checks = new GovernanceChecks(new BusClient(cluster.bus));
    // Watch the requests on the bus (a plain subscription sees a copy of each).
    const seen = { one: 0, many: [] as number[] };
    const one = cluster.bus.nc.subscribe(cluster.bus.subject(governancePolicyCommands.check.subject), { callback: () => void seen.one++ });
    const many = cluster.bus.nc.subscribe(cluster.bus.subject(governancePolicyCommands.checkMany.subject), {
      callback: (_err, msg) => void seen.many.push((JSON.parse(msg.string()) as { input: { checks: unknown[] } }).input.checks.length),
    });
    await cluster.bus.nc.flush();
    try {
      const outcomes = await Promise.allSettled(["alice", "bob", "alice", "carol", "alice"].map((id) => checks.assertAllowed(as(id), intent.id, "channel")));
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "rejected", "fulfilled"]);
      expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: "GOVERNANCE_VIOLATION", status: 403, details: { agent_id: "bob" } });
      expect((outcomes[3] as PromiseRejectedResult).reason).toMatchObject({ code: "GOVERNANCE_VIOLATION", details: { agent_id: "carol" } });
      expect(seen).toEqual({ one: 0, many: [5] });
      // The policy changes and answers; the very next check sees it (a lone check goes as governance.check).
      const current = (await cluster.api(`/intents/${intent.id}`)).body;
      expect((await put(intent.id, { allowed_agents: ["bob"] }, current.version)).status).toBe(200);
      await expect(checks.assertAllowed(as("alice"), intent.id, "memory")).rejects.toMatchObject({ code: "GOVERNANCE_VIOLATION" });
      await expect(checks.assertAllowed(as("bob"), intent.id, "memory")).resolves.toBeUndefined();
      await cluster.bus.nc.flush();
      expect(seen.one).toBe(2);
    } finally {
      one.unsubscribe();
      many.unsubscribe();
    }
  });

  it("GovernanceChecks: refusals too large for one answer (1,000 long allowed_agents each) are asked again one by one, each with its full details", async () => {
    const allowed = Array.from({ length: 1000 }, (_, i) => `agent-${String(i).padStart(4, "0")}-${"x".repeat(180)}`);
    const intent = await governed({ allowed_agents: allowed });
    const as = (id: string): Caller => ({ principal: "agent-key", roles: ["agent"], actor: id, agent_id: id });
    const checks = new GovernanceChecks(new BusClient(cluster.bus));
    const seen = { one: 0, many: 0 };
    const one = cluster.bus.nc.subscribe(cluster.bus.subject(governancePolicyCommands.check.subject), { callback: () => void seen.one++ });
    const many = cluster.bus.nc.subscribe(cluster.bus.subject(governancePolicyCommands.checkMany.subject), { callback: () => void seen.many++ });
    await cluster.bus.nc.flush();
    try {
      const who = [allowed[0]!, "bob-1", "bob-2", "bob-3", allowed[999]!, "bob-4"];
      const outcomes = await Promise.allSettled(who.map((id) => checks.assertAllowed(as(id), intent.id, "memory")));
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "rejected", "fulfilled", "rejected"]);
      for (const i of [1, 2, 3, 5]) {
        const reason = (outcomes[i] as PromiseRejectedResult).reason;
        expect(reason).toMatchObject({ code: "GOVERNANCE_VIOLATION", status: 403, details: { rule: "allowed_agents", agent_id: who[i] } });
        expect(reason.details.allowed_agents).toHaveLength(1000);
      }
      await cluster.bus.nc.flush();
      expect(seen).toEqual({ many: 1, one: who.length });
    } finally {
      one.unsubscribe();
      many.unsubscribe();
    }
  });

  it("channel messages of agents the policy leaves out are refused while the allowed agent's, sent at the same moment, are written", async () => {
    const intent = await governed({ allowed_agents: ["alice"] });
    const channel = await cluster.api(`/intents/${intent.id}/channels`, { body: { name: "ops" }, key: "operator" });
    expect(channel.status, JSON.stringify(channel.body)).toBe(201);
    const senders = ["alice", "bob", "alice", "carol", "alice", "bob"];
    const sent = await Promise.all(senders.map((id, i) => cluster.api(`/channels/${channel.body.id}/messages`, { body: { payload: { i } }, ...agent(id) })));
    sent.forEach((res, i) => {
      if (senders[i] === "alice") expect(res.status, JSON.stringify(res.body)).toBe(201);
      else expectViolation(res, "allowed_agents");
    });
    const listed = await cluster.api(`/channels/${channel.body.id}/messages`, { key: "operator" });
    expect(listed.body.map((m: { sender: string }) => m.sender)).toEqual(["alice", "alice", "alice"]);
  });

  it("require_status_reason: a status change without a reason is 403", async () => {
    const intent = await governed({ require_status_reason: true });
    expectViolation(await cluster.api(`/intents/${intent.id}/status`, { body: { status: "blocked" }, headers: { "If-Match": String(intent.version) } }), "require_status_reason");
    expectViolation(await cluster.api(`/intents/${intent.id}/status`, { body: { status: "blocked", reason: " " }, headers: { "If-Match": String(intent.version) } }), "require_status_reason");
    expect((await cluster.api(`/intents/${intent.id}/status`, { body: { status: "blocked", reason: "waiting on legal" }, headers: { "If-Match": String(intent.version) } })).status).toBe(200);
  });

  it("max_cost: a cost that would pass it is 403 with the values compared; up to it is fine", async () => {
    const intent = await governed({ max_cost: 100 });
    const cost = (amount: number) => cluster.api(`/intents/${intent.id}/costs`, { body: { cost_type: "api_call", amount, unit: "cents" } });
    expect((await cost(60)).status).toBe(201);
    const over = await cost(41);
    expectViolation(over, "max_cost");
    expect(over.body.details).toMatchObject({ max_cost: 100, current_total: 60, amount: 41 });
    expect((await cost(40)).status).toBe(201);
    expect((await cluster.api(`/intents/${intent.id}/costs`)).body.summary.count).toBe(2);
  });

  it("completion_mode require_approval: completion needs a granted approval of action complete", async () => {
    const intent = await governed({ completion_mode: "require_approval" });
    const complete = () => cluster.api(`/intents/${intent.id}/status`, { body: { status: "completed" }, headers: { "If-Match": String(intent.version) } });
    const refused = await complete();
    expectViolation(refused, "completion_mode");
    expect(refused.body.details).toMatchObject({ completion_mode: "require_approval", granted_approvals: 0, required: 1 });
    const denied = (await cluster.api(`/intents/${intent.id}/approvals`, { body: { action: "complete" }, ...agent("w") })).body;
    await cluster.api(`/intents/${intent.id}/approvals/${denied.id}/deny`, { body: {}, key: "operator" });
    expectViolation(await complete(), "completion_mode");
    const other = (await cluster.api(`/intents/${intent.id}/approvals`, { body: { action: "deploy" }, ...agent("w") })).body;
    await cluster.api(`/intents/${intent.id}/approvals/${other.id}/approve`, { body: {}, key: "operator" });
    expectViolation(await complete(), "completion_mode");
    const approval = (await cluster.api(`/intents/${intent.id}/approvals`, { body: { action: "complete" }, ...agent("w") })).body;
    expect((await cluster.api(`/intents/${intent.id}/approvals/${approval.id}/approve`, { body: {}, key: "operator" })).status).toBe(200);
    // Read-your-writes: the grant that answered counts at once.
    const done = await complete();
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.status).toBe("completed");
  });

  it("completion_mode quorum: granted approvals from at least quorum_threshold of the assigned agents (at least one)", async () => {
    const intent = await governed({ completion_mode: "quorum", quorum_threshold: 0.6 });
    for (const a of ["a1", "a2", "a3"]) await cluster.api(`/intents/${intent.id}/agents`, { body: { agent_id: a } });
    const complete = () => cluster.api(`/intents/${intent.id}/status`, { body: { status: "completed" }, headers: { "If-Match": String(intent.version) } });
    const grant = async () => {
      const a = (await cluster.api(`/intents/${intent.id}/approvals`, { body: { action: "complete" }, ...agent("a1") })).body;
      expect((await cluster.api(`/intents/${intent.id}/approvals/${a.id}/approve`, { body: {}, key: "coordinator" })).status).toBe(200);
    };
    await grant();
    const refused = await complete();
    expectViolation(refused, "completion_mode");
    expect(refused.body.details).toMatchObject({ assigned_agents: 3, granted_approvals: 1, required: 2, quorum_threshold: 0.6 });
    await grant();
    expect((await complete()).status).toBe(200);
  });

  it("read-your-writes on two replicas: once PUT answered on one, no mutation escapes on the other", async () => {
    for (let round = 0; round < 10; round++) {
      const intent = await createIntent(cluster);
      const set = await put(intent.id, { allowed_agents: ["only-me"] }, intent.version);
      expect(set.status).toBe(200);
      const [viaSecond, viaFirst] = await Promise.all([
        second(`/intents/${intent.id}/events`, { body: { event_type: "note" }, ...agent("intruder") }),
        cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/x", value: round }], headers: { "X-Agent-ID": "intruder", "If-Match": String(set.body.version) }, key: "agent" }),
      ]);
      expectViolation(viaSecond, "allowed_agents");
      expectViolation(viaFirst, "allowed_agents");
      // And a state write checked under the old policy cannot commit after the PUT: the version moved.
      const stale = await second(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/x", value: 1 }], headers: { "X-Agent-ID": "only-me", "If-Match": String(intent.version) }, key: "agent" });
      expectError(stale, 409, "VERSION_MISMATCH");
    }
  });

  it("an intent without a policy behaves as if no governance existed", async () => {
    const intent = await createIntent(cluster);
    expect((await cluster.api(`/intents/${intent.id}/status`, { body: { status: "completed" }, headers: { "If-Match": String(intent.version) } })).status).toBe(200);
  });
});
