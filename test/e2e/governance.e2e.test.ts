import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { governancePolicyCommands, type Caller } from "@intentmesh/contracts";
import { GovernanceChecks } from "@intentmesh/service";
import { createLogger } from "@intentmesh/telemetry";
import { createClient, type BodyOf, type Intentmesh } from "@intentmesh/sdk";
import { startTestCluster, startTestGateway, TEST_KEYS, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, expectRejected, keyHeader, UNKNOWN_ID } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";
import { startIntentsService, type IntentsService } from "../../services/intents/src/service";
import type { Gateway } from "../../services/gateway/src/app";

let cluster: TestCluster;
// A second replica of the gateway and of the intents service, on a bus connection of their own.
let secondBus: Bus;
let secondIntents: IntentsService;
let secondGateway: Gateway;
/** The typed client on the second gateway, acting as an agent. */
let second: (agentId: string) => Intentmesh;

beforeAll(async () => {
  cluster = await startTestCluster();
  const logger = createLogger("replica", "silent");
  secondBus = await connectBus(inject("natsUrl"), "replica", cluster.namespace);
  secondBus.checks = cluster.bus.checks; // the replica is held to the catalogue like the cluster
  secondIntents = await startIntentsService({ bus: secondBus, database: cluster.database, logger, clock: cluster.clock, leaseSweepIntervalMs: 3_600_000 });
  const replica = await startTestGateway(secondBus, logger);
  secondGateway = replica.gateway;
  second = (agentId) => createClient({ baseUrl: replica.baseUrl, apiKey: TEST_KEYS.agent, agentId, retry: { baseDelayMs: 10 } });
});
afterAll(async () => {
  await secondGateway?.stop();
  await secondIntents?.stop();
  await secondBus?.close();
  await cluster?.stop();
});

type Policy = BodyOf<"governancePolicySet">;

const put = (intentId: string, policy: Policy, version: number, key: "admin" | "operator" | "agent" = "admin") =>
  cluster.sdk(key).send("governancePolicySet", { intent_id: intentId, ifMatch: version, body: policy });
/** Raw on purpose: a PUT without If-Match, or a policy the typed body forbids. */
const putRaw = (intentId: string, policy: unknown, version: number | null) =>
  cluster.api(`/intents/${intentId}/governance`, { method: "PUT", body: policy, headers: version === null ? {} : { "If-Match": String(version) } });
/** The typed client acting as an agent (X-Agent-ID). */
const agent = (id: string) => cluster.sdk("agent", id);
const admin = () => cluster.sdk();

async function governed(policy: Policy) {
  const intent = await createIntent(cluster);
  const res = await put(intent.id, policy, intent.version);
  expect(res.status).toBe(200);
  return res.data;
}

async function expectViolation(call: Promise<unknown>, rule: string) {
  const error = await expectRejected(call, 403, "GOVERNANCE_VIOLATION");
  expect(error.details.rule).toBe(rule);
  expect(error.body).toMatchObject({ error: "governance_violation", rule });
  return error;
}

describe("PUT / GET / DELETE /intents/{id}/governance (4.6)", () => {
  it("If-Match: 428 missing, 409 stale; version + 1, new ETag, governance.policy_set over SSE; GET shows the effective policy", async () => {
    const intent = await createIntent(cluster);
    expectError(await putRaw(intent.id, { write_scope: "assigned_only" }, null), 428, "PRECONDITION_REQUIRED");
    await expectRejected(put(intent.id, { write_scope: "assigned_only" }, intent.version + 1), 409, "VERSION_MISMATCH");
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader("admin"));
    const res = await put(intent.id, { completion_mode: "quorum", quorum_threshold: 0.5, max_cost: 0 }, intent.version);
    expect(res.status).toBe(200);
    expect(res.data.version).toBe(intent.version + 1);
    expect(res.headers.get("etag")).toBe(`"${intent.version + 1}"`);
    await sse.waitFor((c) => c.events.some((e) => e.event === "governance.policy_set"));
    await sse.close();
    const got = await admin().ops.governancePolicyGet({ intent_id: intent.id });
    expect(got).toEqual({
      intent_id: intent.id,
      governance_policy: { completion_mode: "quorum", quorum_threshold: 0.5, max_cost: 0 },
      effective_policy: { completion_mode: "quorum", write_scope: "any", max_cost: 0, quorum_threshold: 0.5, allowed_agents: null, require_status_reason: false },
    });
    // Raw on purpose: a DELETE without If-Match, which the typed request forbids.
    expectError(await cluster.api(`/intents/${intent.id}/governance`, { method: "DELETE" }), 428, "PRECONDITION_REQUIRED");
    const removed = await admin().send("governancePolicyRemove", { intent_id: intent.id, ifMatch: res.data.version });
    expect(removed.status).toBe(200);
    expect(removed.data.version).toBe(res.data.version + 1);
    expect((await admin().ops.governancePolicyGet({ intent_id: intent.id })).governance_policy).toBeNull();
    const log = await allEvents(cluster, intent.id);
    expect(log.find((e) => e.event_type === "governance.policy_set")!.payload).toEqual({ governance_policy: { completion_mode: "quorum", quorum_threshold: 0.5, max_cost: 0 }, version: intent.version + 1 });
    expect(log.find((e) => e.event_type === "governance.policy_removed")!.payload).toEqual({ version: intent.version + 2 });
    await expectRejected(admin().ops.governancePolicyGet({ intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
  });

  it("PUT answers a body both readers use: the intent (the Python client's Intent.from_dict) and the policy (spec 4.6)", async () => {
    const intent = await createIntent(cluster, { title: "two readers", state: { step: 1 } });
    const policy = { completion_mode: "require_approval", allowed_agents: ["a-1"] } as const satisfies Policy;
    const res = await put(intent.id, policy, intent.version);
    expect(res.status).toBe(200);
    // Read as the Python client does (models.py Intent.from_dict): the intent at its new version, governance_policy as set.
    const stored = await admin().ops.intentsGet({ intent_id: intent.id });
    const answer: Record<string, unknown> = { ...res.data };
    // Every field of the intent as GET shows it (whatever fields later issues add), at the new version.
    const asIntent = Object.fromEntries([...Object.keys(stored), "governance_policy"].map((key) => [key, answer[key]]));
    expect(asIntent).toEqual({ ...stored, governance_policy: policy });
    expect(asIntent.version).toBe(intent.version + 1);
    // Read as the policy of spec 2.11: its six fields at the top level, the effective values GET shows.
    const asPolicy = (({ completion_mode, write_scope, max_cost, quorum_threshold, allowed_agents, require_status_reason }) =>
      ({ completion_mode, write_scope, max_cost, quorum_threshold, allowed_agents, require_status_reason }))(answer);
    const got = await admin().ops.governancePolicyGet({ intent_id: intent.id });
    expect(asPolicy).toEqual(got.effective_policy);
    expect(asPolicy).toEqual({ completion_mode: "require_approval", write_scope: "any", max_cost: null, quorum_threshold: 0.5, allowed_agents: ["a-1"], require_status_reason: false });
  });

  it("validates every field of 2.11 as 400 and writes nothing; agents may not set a policy", async () => {
    const intent = await createIntent(cluster);
    // Raw on purpose: values of a type the typed body forbids.
    for (const bad of [{ completion_mode: "vote" }, { write_scope: "mine" }, { allowed_agents: "a" }, { require_status_reason: "yes" }, { unknown: 1 }]) {
      expectError(await putRaw(intent.id, bad, intent.version), 400, "VALIDATION_FAILED");
    }
    for (const bad of [{ max_cost: -1 }, { quorum_threshold: 0 }, { quorum_threshold: 1.01 }]) {
      await expectRejected(put(intent.id, bad, intent.version), 400, "VALIDATION_FAILED");
    }
    await expectRejected(put(intent.id, { write_scope: "any" }, intent.version, "agent"), 403, "FORBIDDEN");
    expect((await admin().ops.intentsGet({ intent_id: intent.id })).version).toBe(intent.version);
  });
});

describe("enforcement on every mutation (403 with details, nothing written)", () => {
  it("write_scope assigned_only: unassigned agents cannot patch, post events, lease, record costs, attach or fail; assigned ones can", async () => {
    const intent = await governed({ write_scope: "assigned_only" });
    const who = agent("outsider");
    const patch = () => who.ops.intentsPatchState({ intent_id: intent.id, ifMatch: intent.version, body: [{ op: "set", path: "/x", value: 1 }] });
    await expectViolation(patch(), "write_scope");
    await expectViolation(who.ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "note" } }), "write_scope");
    await expectViolation(who.ops.intentsAcquireLease({ intent_id: intent.id, body: { scope: "x" } }), "write_scope");
    await expectViolation(who.ops.costsRecord({ intent_id: intent.id, body: { cost_type: "api_call", amount: 1, unit: "cents" } }), "write_scope");
    await expectViolation(
      who.ops.attachmentsCreate({ intent_id: intent.id, body: { filename: "a.txt", mime_type: "text/plain", size: 1, storage_url: "https://example.com/a.txt" } }),
      "write_scope",
    );
    await expectViolation(who.ops.retriesRecordFailure({ intent_id: intent.id, body: { attempt_number: 1 } }), "write_scope");
    await expectViolation(who.ops.intentsTransition({ intent_id: intent.id, ifMatch: intent.version, body: { status: "blocked" } }), "write_scope");
    const res = await expectViolation(patch(), "write_scope");
    expect(res.details).toMatchObject({ rule: "write_scope", agent_id: "outsider", write_scope: "assigned_only" });
    // Nothing was written by any refusal.
    const after = await admin().ops.intentsGet({ intent_id: intent.id });
    expect(after.version).toBe(intent.version);
    expect((await allEvents(cluster, intent.id)).map((e) => e.event_type).filter((t) => !["intent_created", "governance.policy_set", "status_changed"].includes(t))).toEqual([]);
    // Assigned: allowed. A person (operator key, no agent id) is not bound by write_scope.
    expect((await admin().send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: "insider" } })).status).toBe(201);
    const ok = await agent("insider").send("intentsPatchState", { intent_id: intent.id, ifMatch: intent.version, body: [{ op: "set", path: "/x", value: 2 }] });
    expect(ok.status).toBe(200);
    expect((await cluster.sdk("operator").send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "note" } })).status).toBe(201);
  });

  it("allowed_agents: other agents are refused, and may not be assigned", async () => {
    const intent = await governed({ allowed_agents: ["alice"] });
    await expectViolation(agent("bob").ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "note" } }), "allowed_agents");
    const refused = await expectViolation(admin().ops.intentsAssignAgent({ intent_id: intent.id, body: { agent_id: "bob" } }), "allowed_agents");
    expect(refused.details).toMatchObject({ agent_id: "bob", allowed_agents: ["alice"] });
    expect((await admin().ops.intentsListAgents({ intent_id: intent.id })).agents).toEqual([]);
    expect((await agent("alice").send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "note" } })).status).toBe(201);
    // A lease alice holds cannot be renewed or released by her once the policy leaves her out.
    const lease = await agent("alice").send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "draft" } });
    expect(lease.status).toBe(201);
    expect((await admin().send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: "alice" } })).status).toBe(201);
    const current = await admin().ops.intentsGet({ intent_id: intent.id });
    expect((await put(intent.id, { allowed_agents: ["carol"] }, current.version)).status).toBe(200);
    const held = { intent_id: intent.id, lease_id: lease.data.id };
    await expectViolation(agent("alice").ops.intentsRenewLease({ ...held, body: {} }), "allowed_agents");
    await expectViolation(agent("alice").ops.intentsReleaseLease(held), "allowed_agents");
    await expectViolation(agent("alice").ops.intentsUnassignAgent({ intent_id: intent.id, agent_id: "alice" }), "allowed_agents");
    expect(await admin().ops.intentsGetLease(held)).toMatchObject({ released_at: null, expires_at: lease.data.expires_at });
    // People are not bound by allowed_agents: an operator removes alice.
    expect((await cluster.sdk("operator").send("intentsUnassignAgent", { intent_id: intent.id, agent_id: "alice" })).status).toBe(200);
  });

  it("binds memory writes scoped to the intent too: create, update and delete are refused for agents the policy leaves out", async () => {
    const intent = await governed({ allowed_agents: ["alice"] });
    const entry = (namespace: string) => ({ namespace, key: "k", value: { v: 1 }, memory_type: "episodic", scope: { intent_id: intent.id } }) as const;
    await expectViolation(agent("bob").ops.memoryCreate({ body: entry("bob-notes") }), "allowed_agents");
    expect((await admin().ops.memoryQuery({ query: { agent_id: "bob" } })).entries).toEqual([]);
    const created = await agent("alice").send("memoryCreate", { body: entry("alice-notes") });
    expect(created.status).toBe(201);
    // Once the policy leaves alice out, she can neither change nor delete what she wrote on the intent.
    const current = await admin().ops.intentsGet({ intent_id: intent.id });
    expect((await put(intent.id, { allowed_agents: ["carol"] }, current.version)).status).toBe(200);
    await expectViolation(agent("alice").ops.memoryPatch({ entry_id: created.data.id, ifMatch: 1, body: { value: { v: 2 } } }), "allowed_agents");
    await expectViolation(agent("alice").ops.memoryDelete({ entry_id: created.data.id }), "allowed_agents");
    expect(await admin().ops.memoryGet({ entry_id: created.data.id })).toMatchObject({ version: 1, value: { v: 1 } });
    // Memory not scoped to a governed intent is not touched by its policy.
    expect((await agent("alice").send("memoryCreate", { body: { namespace: "free", key: "k", value: { v: 1 }, memory_type: "episodic" } })).status).toBe(201);
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
      const current = await admin().ops.intentsGet({ intent_id: intent.id });
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
    const channel = await cluster.sdk("operator").send("channelsCreate", { intent_id: intent.id, body: { name: "ops" } });
    expect(channel.status).toBe(201);
    const senders = ["alice", "bob", "alice", "carol", "alice", "bob"];
    await Promise.all(
      senders.map(async (id, i) => {
        const sent = agent(id).send("channelsSend", { channel_id: channel.data.id, body: { payload: { i } } });
        if (id === "alice") expect((await sent).status).toBe(201);
        else await expectViolation(sent, "allowed_agents");
      }),
    );
    const listed = await cluster.sdk("operator").ops.channelsListMessages({ channel_id: channel.data.id });
    expect(listed.map((m) => m.sender)).toEqual(["alice", "alice", "alice"]);
  });

  it("require_status_reason: a status change without a reason is 403", async () => {
    const intent = await governed({ require_status_reason: true });
    const transition = (body: BodyOf<"intentsTransition">) => admin().send("intentsTransition", { intent_id: intent.id, ifMatch: intent.version, body });
    await expectViolation(transition({ status: "blocked" }), "require_status_reason");
    await expectViolation(transition({ status: "blocked", reason: " " }), "require_status_reason");
    expect((await transition({ status: "blocked", reason: "waiting on legal" })).status).toBe(200);
  });

  it("max_cost: a cost that would pass it is 403 with the values compared; up to it is fine", async () => {
    const intent = await governed({ max_cost: 100 });
    const cost = (amount: number) => admin().send("costsRecord", { intent_id: intent.id, body: { cost_type: "api_call", amount, unit: "cents" } });
    expect((await cost(60)).status).toBe(201);
    const over = await expectViolation(cost(41), "max_cost");
    expect(over.details).toMatchObject({ max_cost: 100, current_total: 60, amount: 41 });
    expect((await cost(40)).status).toBe(201);
    expect((await admin().ops.costsList({ intent_id: intent.id })).summary.count).toBe(2);
  });

  it("completion_mode require_approval: completion needs a granted approval of action complete", async () => {
    const intent = await governed({ completion_mode: "require_approval" });
    const complete = () => admin().send("intentsTransition", { intent_id: intent.id, ifMatch: intent.version, body: { status: "completed" } });
    const request = (action: string) => agent("w").ops.governanceCreateApproval({ intent_id: intent.id, body: { action } });
    const operator = cluster.sdk("operator");
    const refused = await expectViolation(complete(), "completion_mode");
    expect(refused.details).toMatchObject({ completion_mode: "require_approval", granted_approvals: 0, required: 1 });
    const denied = await request("complete");
    await operator.ops.governanceDeny({ intent_id: intent.id, approval_id: denied.id, body: {} });
    await expectViolation(complete(), "completion_mode");
    const other = await request("deploy");
    await operator.ops.governanceApprove({ intent_id: intent.id, approval_id: other.id, body: {} });
    await expectViolation(complete(), "completion_mode");
    const approval = await request("complete");
    expect((await operator.send("governanceApprove", { intent_id: intent.id, approval_id: approval.id, body: {} })).status).toBe(200);
    // Read-your-writes: the grant that answered counts at once.
    const done = await complete();
    expect(done.status).toBe(200);
    expect(done.data.status).toBe("completed");
  });

  it("completion_mode quorum: granted approvals from at least quorum_threshold of the assigned agents (at least one)", async () => {
    const intent = await governed({ completion_mode: "quorum", quorum_threshold: 0.6 });
    for (const a of ["a1", "a2", "a3"]) await admin().ops.intentsAssignAgent({ intent_id: intent.id, body: { agent_id: a } });
    const complete = () => admin().send("intentsTransition", { intent_id: intent.id, ifMatch: intent.version, body: { status: "completed" } });
    const grant = async () => {
      const a = await agent("a1").ops.governanceCreateApproval({ intent_id: intent.id, body: { action: "complete" } });
      expect((await cluster.sdk("coordinator").send("governanceApprove", { intent_id: intent.id, approval_id: a.id, body: {} })).status).toBe(200);
    };
    await grant();
    const refused = await expectViolation(complete(), "completion_mode");
    expect(refused.details).toMatchObject({ assigned_agents: 3, granted_approvals: 1, required: 2, quorum_threshold: 0.6 });
    await grant();
    expect((await complete()).status).toBe(200);
  });

  it("read-your-writes on two replicas: once PUT answered on one, no mutation escapes on the other", async () => {
    for (let round = 0; round < 10; round++) {
      const intent = await createIntent(cluster);
      const set = await put(intent.id, { allowed_agents: ["only-me"] }, intent.version);
      expect(set.status).toBe(200);
      await Promise.all([
        expectViolation(second("intruder").ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "note" } }), "allowed_agents"),
        expectViolation(agent("intruder").ops.intentsPatchState({ intent_id: intent.id, ifMatch: set.data.version, body: [{ op: "set", path: "/x", value: round }] }), "allowed_agents"),
      ]);
      // And a state write checked under the old policy cannot commit after the PUT: the version moved.
      const stale = second("only-me").ops.intentsPatchState({ intent_id: intent.id, ifMatch: intent.version, body: [{ op: "set", path: "/x", value: 1 }] });
      await expectRejected(stale, 409, "VERSION_MISMATCH");
    }
  });

  it("an intent without a policy behaves as if no governance existed", async () => {
    const intent = await createIntent(cluster);
    expect((await admin().send("intentsTransition", { intent_id: intent.id, ifMatch: intent.version, body: { status: "completed" } })).status).toBe(200);
  });
});
