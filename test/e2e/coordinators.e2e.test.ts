import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { knownAgentStatus } from "../../services/intents/src/agents/agent-status";
import { IntentmeshError, type BodyOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectRejected, UNKNOWN_ID, uniqueTag } from "../support/e2e-helpers";

/**
 * Coordinator leases and decision records (RFC-0013, docs/coordinators.md), driven as the
 * official Python client drives them: create_coordinator_lease (POST /coordinators with its
 * kwargs), get_coordinator_lease, list_coordinator_leases (a bare list), coordinator_heartbeat
 * (no body), create_decision_record (POST /decisions), list_decision_records
 * (GET /intents/{id}/coordinator-decisions, a bare list), record_decision and get_decisions.
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const advance = (seconds: number) => clock().advance(seconds * 1000);
/** The agent key acting as `agentId` (bound to it on first use: unregistered agents are labels). */
const as = (agentId: string) => ({ key: null, headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": agentId } });

const take = (intentId: string, agentId: string, extra: Partial<BodyOf<"coordinatorsCreateLease">> = {}) =>
  cluster.sdk("agent", agentId).send("coordinatorsCreateLease", { body: { agent_id: agentId, intent_id: intentId, coordinator_type: "llm", scope: "intent", heartbeat_interval_seconds: 30, ...extra } });
/** Raw on purpose: the Python client's coordinator_heartbeat, a POST with a JSON content type and no body. */
const beat = (leaseId: string, agentId: string) => cluster.api(`/coordinators/${leaseId}/heartbeat`, { ...as(agentId), method: "POST", headers: { ...as(agentId).headers, "Content-Type": "application/json" } });
const heartbeat = (leaseId: string, agentId: string) => cluster.sdk("agent", agentId).send("coordinatorsHeartbeat", { lease_id: leaseId });
const decide = (intentId: string, agentId: string, summary: string, coordinatorId = agentId) =>
  cluster.sdk("agent", agentId).send("decisionsCreateRecord", { body: { coordinator_id: coordinatorId, intent_id: intentId, decision_type: "plan_created", summary, rationale: `because ${summary}` } });
const getLease = (leaseId: string) => cluster.sdk().ops.coordinatorsGetLease({ lease_id: leaseId });
const leasesOf = (intentId: string) => cluster.sdk().ops.coordinatorsListForIntent({ intent_id: intentId });
const decisionRecords = (intentId: string, query: { limit?: number } = {}) => cluster.sdk().ops.decisionsListRecords({ intent_id: intentId, query });

describe("coordinator leases", () => {
  it("one holder per intent: the client's create, get, list and heartbeat; a second agent gets a 409 the client reads as a lease conflict", async () => {
    const intent = await createIntent(cluster);
    const a = uniqueTag("coord");
    const b = uniqueTag("coord");
    const created = await take(intent.id, a, { supervisor_id: "lead", guardrails: { max_budget_usd: 50, requires_plan_review: true }, metadata: { model: "m" } });
    expect(created.status).toBe(201);
    const lease = created.data;
    const t = clock().now().getTime();
    expect(lease).toMatchObject({
      intent_id: intent.id,
      portfolio_id: null,
      agent_id: a,
      role: "coordinator",
      supervisor_id: "lead",
      coordinator_type: "llm",
      scope: "intent",
      status: "active",
      guardrails: { max_budget_usd: 50, requires_plan_review: true },
      heartbeat_interval_seconds: 30,
      version: 1,
      metadata: { model: "m" },
      ended_at: null,
    });
    expect(Date.parse(lease.expires_at)).toBe(t + 60_000);
    expect(lease.expires_at).toMatch(/\+00:00$/);

    const second = await expectRejected(take(intent.id, b), 409, "COORDINATOR_LEASE_HELD");
    expect(JSON.stringify(second.body).toLowerCase()).toContain("lease");
    expect(second.body?.existing_lease).toMatchObject({ id: lease.id, agent_id: a });

    expect(await getLease(lease.id)).toMatchObject({ id: lease.id, status: "active" });
    const listed = await leasesOf(intent.id);
    expect(Array.isArray(listed)).toBe(true);
    expect(listed.map((l) => l.id)).toEqual([lease.id]);

    advance(20);
    const beaten = await beat(lease.id, a);
    expect(beaten.status, JSON.stringify(beaten.body)).toBe(200);
    expect(Date.parse(beaten.body.expires_at)).toBe(clock().now().getTime() + 60_000);
    expect(beaten.body.version).toBe(2);
    await expectRejected(heartbeat(lease.id, b), 403, "NOT_LEASE_HOLDER");
    await expectRejected(heartbeat(UNKNOWN_ID, a), 404, "COORDINATOR_LEASE_NOT_FOUND");
    await expectRejected(getLease(UNKNOWN_ID), 404, "COORDINATOR_LEASE_NOT_FOUND");
    await expectRejected(take(UNKNOWN_ID, b), 404, "INTENT_NOT_FOUND");

    const events = (await allEvents(cluster, intent.id)).filter((e) => e.event_type.startsWith("coordinator."));
    expect(events.map((e) => [e.event_type, e.payload.lease_id, e.payload.coordinator_id])).toEqual([["coordinator.assigned", lease.id, a]]);
  });

  it("the agent_id must be the caller's own agent: a registered agent of another key is refused", async () => {
    const intent = await createIntent(cluster);
    const mine = uniqueTag("coord");
    expect((await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: mine } })).status).toBe(201);
    await expectRejected(cluster.sdk("other").send("coordinatorsCreateLease", { body: { agent_id: mine, intent_id: intent.id } }), 403, "AGENT_NOT_BOUND");
    expect(await leasesOf(intent.id)).toEqual([]);
  });

  it("expires on the server clock: unresponsive after two intervals, taken over by another agent (coordinator.failed_over), the old holder's heartbeat then refused", async () => {
    const intent = await createIntent(cluster);
    const a = uniqueTag("coord");
    const b = uniqueTag("coord");
    const first = (await take(intent.id, a)).data;
    advance(59.999);
    await expectRejected(take(intent.id, b), 409, "COORDINATOR_LEASE_HELD");
    advance(0.001);
    expect((await getLease(first.id)).status).toBe("unresponsive");
    // Unresponsive, not yet taken over: the holder's heartbeat revives it.
    expect((await heartbeat(first.id, a)).data.status).toBe("active");
    advance(60);
    const second = await take(intent.id, b);
    expect(second.status).toBe(201);
    expect(second.data).toMatchObject({ agent_id: b, status: "active", predecessor_id: first.id });
    expect(await getLease(first.id)).toMatchObject({ status: "failed_over", end_reason: "expired" });
    await expectRejected(heartbeat(first.id, a), 409, "COORDINATOR_LEASE_ENDED");
    const events = (await allEvents(cluster, intent.id)).filter((e) => e.event_type.startsWith("coordinator."));
    expect(events.map((e) => e.event_type)).toEqual(["coordinator.assigned", "coordinator.failed_over", "coordinator.assigned"]);
    expect(events[1]!.payload).toEqual({ old_lease_id: first.id, old_coordinator_id: a, new_lease_id: second.data.id, new_coordinator_id: b, reason: "expired" });
    expect((await leasesOf(intent.id)).map((l) => l.id)).toEqual([second.data.id, first.id]);
  });

  it("set_coordinator (the MCP server's POST /intents/{id}/coordinator): the same grant, the policy name kept, set_by must be the caller", async () => {
    const intent = await createIntent(cluster);
    const a = uniqueTag("coord");
    const set = (agent: string, body: BodyOf<"coordinatorsAssign">) => cluster.sdk("agent", agent).send("coordinatorsAssign", { intent_id: intent.id, body });
    await expectRejected(set(a, { coordinator_id: a, set_by: "someone-else" }), 400, "AGENT_MISMATCH");
    const created = await set(a, { coordinator_id: a, governance_policy: "strict", set_by: a });
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({ intent_id: intent.id, agent_id: a, status: "active", metadata: { governance_policy: "strict" }, heartbeat_interval_seconds: 60 });
    await expectRejected(set(a, { coordinator_id: a }), 409, "COORDINATOR_LEASE_HELD");
    // An admin key assigns another agent (a supervisor's assignment); the agent key may not assign a registered agent of another key.
    const other = await createIntent(cluster);
    const registered = uniqueTag("coord");
    expect((await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: registered } })).status).toBe(201);
    await expectRejected(cluster.sdk("other").send("coordinatorsAssign", { intent_id: other.id, body: { coordinator_id: registered } }), 403, "AGENT_NOT_BOUND");
    const assigned = await cluster.sdk("admin").send("coordinatorsAssign", { intent_id: other.id, body: { coordinator_id: registered } });
    expect(assigned.status).toBe(201);
    expect(assigned.data).toMatchObject({ agent_id: registered, metadata: { governance_policy: "default" } });
    await expectRejected(cluster.sdk("admin").send("coordinatorsAssign", { intent_id: UNKNOWN_ID, body: { coordinator_id: a } }), 404, "INTENT_NOT_FOUND");
  });

  it("concurrent grants on one intent: exactly one agent gets it", async () => {
    const intent = await createIntent(cluster);
    const agents = Array.from({ length: 6 }, () => uniqueTag("race"));
    // Each grant's status and code (a refusal is an IntentmeshError; an unsafe POST is never sent twice).
    const results = await Promise.all(
      agents.map((agent) => take(intent.id, agent).then((r) => ({ status: r.status, code: undefined }), (e: unknown) => (e instanceof IntentmeshError ? { status: e.status, code: e.code } : Promise.reject(e)))),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409).every((r) => r.code === "COORDINATOR_LEASE_HELD")).toBe(true);
    expect(await leasesOf(intent.id)).toHaveLength(1);
  });
});

describe("the intent's coordinator in the existing rules", () => {
  it("channels rule 7: the agent holding the intent's coordinator lease may change a channel it did not create; another agent may not", async () => {
    const intent = await createIntent(cluster);
    const creator = uniqueTag("creator");
    const holder = uniqueTag("coord");
    const other = uniqueTag("other");
    const channel = await cluster.sdk("agent", creator).send("channelsCreate", { intent_id: intent.id, body: { name: "plan", members: [creator] } });
    expect(channel.status).toBe(201);
    const change = (agent: string) => cluster.sdk("agent", agent).send("channelsPatch", { channel_id: channel.data.id, body: { members: [creator, holder] } });
    await expectRejected(change(holder), 403, "FORBIDDEN");
    expect((await take(intent.id, holder)).status).toBe(201);
    const changed = await change(holder);
    expect(changed.status).toBe(200);
    expect(changed.data.members).toEqual([creator, holder]);
    await expectRejected(change(other), 403, "FORBIDDEN");
    // Once the lease is no longer live, the right goes with it.
    advance(61);
    await expectRejected(change(holder), 403, "FORBIDDEN");
  });
});

describe("the agent's coordinator (spec 5.3)", () => {
  it("the holder of the coordinator lease of an intent an agent is assigned to may drain it; others may not", async () => {
    const intent = await createIntent(cluster);
    const worker = uniqueTag("worker");
    expect((await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: worker } })).status).toBe(201);
    const coordinator = uniqueTag("coord");
    const bystander = uniqueTag("other");
    const asOther = (agent: string) => cluster.sdk("other", agent);
    const drain = async (agent: string) => {
      const current = await cluster.sdk().ops.agentsGet({ agent_id: worker });
      return asOther(agent).send("agentsChangeStatus", { agent_id: worker, ifMatch: current.version, body: { status: "draining" } });
    };
    expect((await asOther(coordinator).send("coordinatorsCreateLease", { body: { agent_id: coordinator, intent_id: intent.id } })).status).toBe(201);
    // Not assigned yet: the lease gives no right over the worker.
    await expectRejected(drain(coordinator), 403, "FORBIDDEN");
    expect((await cluster.sdk().send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: worker } })).status).toBe(201);
    await expectRejected(drain(bystander), 403, "FORBIDDEN");
    const drained = await drain(coordinator);
    expect(drained.status).toBe(200);
    expect(drained.data.status).toBe("draining");
  });
});

describe("failover when the holder dies (spec 3.4, RFC-0013 5.2)", () => {
  const sweep = () => cluster.registry.sweeper.sweep();
  async function register(): Promise<string> {
    const id = uniqueTag("coord");
    const res = await cluster.sdk("agent").send("agentsRegister", { body: { agent_id: id, heartbeat_config: { interval_seconds: 10, unhealthy_after_seconds: 30, dead_after_seconds: 60 } } });
    expect(res.status).toBe(201);
    return id;
  }

  it("the registry's dead transition hands the lease to the next candidate not dead, exactly once; decisions answered 201 are each recorded once", async () => {
    const intent = await createIntent(cluster);
    // The first candidate is dead already (the intents service has seen it): it is passed over.
    const deadCandidate = await register();
    advance(61);
    await sweep();
    await vi.waitFor(async () => expect(await knownAgentStatus(cluster.database.db, deadCandidate)).toBe("dead"), { timeout: 10_000, interval: 50 });
    const holder = await register();
    const successor = uniqueTag("standby");
    const lease = (await take(intent.id, holder, { heartbeat_interval_seconds: 3600, failover_candidates: [deadCandidate, successor] })).data;
    expect(lease.status).toBe("active");
    advance(61);
    // The holder keeps deciding while the registry declares it dead (each answer's status and the id of a recorded one).
    const decisions = Array.from({ length: 12 }, (_, i) =>
      decide(intent.id, holder, `step ${i}`).then(
        (r) => ({ status: r.status, id: r.data.id as string | undefined, code: undefined as string | undefined }),
        (e: unknown) => (e instanceof IntentmeshError ? { status: e.status, id: undefined, code: e.code } : Promise.reject(e)),
      ),
    );
    await sweep();
    const answered = await Promise.all(decisions);
    expect(answered.every((r) => r.status === 201 || r.status === 403), JSON.stringify(answered)).toBe(true);

    const events = async () => (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.failed_over");
    await vi.waitFor(async () => expect(await events()).toHaveLength(1), { timeout: 5000, interval: 50 });
    const [failover] = await events();
    expect(failover!.payload).toMatchObject({ old_lease_id: lease.id, old_coordinator_id: holder, new_coordinator_id: successor, reason: "agent_dead" });
    const leases = await leasesOf(intent.id);
    expect(leases.map((l) => [l.agent_id, l.status])).toEqual([
      [successor, "active"],
      [holder, "failed_over"],
    ]);
    expect(leases[0]).toMatchObject({ predecessor_id: lease.id, failover_candidates: [], heartbeat_interval_seconds: 3600 });
    expect(leases[1]!.end_reason).toBe("agent_dead");

    // After the failover the dead holder's decisions are refused, the successor's recorded.
    await expectRejected(decide(intent.id, holder, "late"), 403, "NOT_LEASE_HOLDER");
    expect((await decide(intent.id, successor, "resume")).status).toBe(201);
    const recorded = await decisionRecords(intent.id, { limit: 100 });
    const accepted = answered.filter((r) => r.status === 201).map((r) => r.id);
    expect(recorded.slice(0, -1).map((d) => d.id).sort()).toEqual([...accepted].sort());
    expect(recorded[recorded.length - 1]).toMatchObject({ summary: "resume", coordinator_id: successor });
    expect(new Set(recorded.map((d) => d.id)).size).toBe(recorded.length);
    expect(recorded.filter((d) => d.summary !== "resume").every((d) => d.coordinator_id === holder)).toBe(true);

    // A redelivered death changes nothing: the successor keeps the lease.
    await sweep();
    expect((await events()).length).toBe(1);
  });
});

describe("decision records", () => {
  it("create_decision_record by the holder; list_decision_records (bare list); record_decision and get_decisions in the client's Decision shape", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder)).data;
    await expectRejected(decide(intent.id, uniqueTag("intruder"), "no"), 403, "NOT_LEASE_HOLDER");
    await expectRejected(decide(intent.id, holder, "wrong name", "someone-else"), 403, "NOT_LEASE_HOLDER");

    const record = await cluster.sdk("agent", holder).send("decisionsCreateRecord", {
      body: {
        coordinator_id: lease.id,
        intent_id: intent.id,
        decision_type: "task_assigned",
        summary: "gave the analysis to agent-7",
        rationale: "only agent-7 has analytics",
        alternatives_considered: [{ description: "agent-3", rejected_reason: "busy" }],
        confidence: 0.85,
      },
    });
    expect(record.status).toBe(201);
    expect(record.data).toMatchObject({
      type: "coordinator.decision",
      intent_id: intent.id,
      coordinator_id: holder,
      lease_id: lease.id,
      decision_type: "task_assigned",
      summary: "gave the analysis to agent-7",
      rationale: "only agent-7 has analytics",
      alternatives_considered: [{ description: "agent-3", rejected_reason: "busy" }],
      confidence: 0.85,
    });
    expect(record.data.timestamp).toMatch(/\+00:00$/);

    const lead = cluster.sdk("admin", "lead");
    const decided = await lead.send("decisionsRecord", { intent_id: intent.id, body: { decision_type: "arbitration", outcome: "agent-7 keeps it", reasoning: "it was first" } });
    expect(decided.status).toBe(201);
    // Decision.from_dict reads id, intent_id, decision_maker_id, decision_type, outcome, reasoning, created_at.
    expect(decided.data).toMatchObject({ intent_id: intent.id, decision_maker_id: "lead", decision_type: "arbitration", outcome: "agent-7 keeps it", reasoning: "it was first" });
    await expectRejected(lead.send("decisionsRecord", { intent_id: intent.id, body: { decision_type: "x", outcome: "o", reasoning: "r", decided_by: "someone" } }), 400, "AGENT_MISMATCH");
    await expectRejected(cluster.sdk().send("decisionsRecord", { intent_id: intent.id, body: { decision_type: "x", outcome: "o", reasoning: "r", rationale: "other" } }), 400, "VALIDATION_FAILED");
    await expectRejected(cluster.sdk().send("decisionsRecord", { intent_id: intent.id, body: { decision_type: "x", outcome: "o" } }), 400, "VALIDATION_FAILED");
    // The official MCP server's record_decision: an object outcome and `rationale`.
    const mcp = await lead.send("decisionsRecord", { intent_id: intent.id, body: { decision_type: "routing", rationale: "cheapest", outcome: { agent: "agent-7", cost: 3 }, decided_by: "lead" } });
    expect(mcp.status).toBe(201);
    expect(mcp.data).toMatchObject({ decision_type: "routing", outcome: { agent: "agent-7", cost: 3 }, reasoning: "cheapest", rationale: "cheapest", summary: "routing" });

    const records = await decisionRecords(intent.id, { limit: 50 });
    expect(Array.isArray(records)).toBe(true);
    expect(records.map((d) => d.id)).toEqual([record.data.id, decided.data.id, mcp.data.id]);
    const listed = await cluster.sdk().ops.decisionsList({ intent_id: intent.id });
    expect(listed).toMatchObject({ has_more: false });
    expect(listed.decisions.map((d) => d.id)).toEqual([record.data.id, decided.data.id, mcp.data.id]);
    expect(listed.decisions[0]).toMatchObject({ decision_maker_id: holder, reasoning: "only agent-7 has analytics", created_at: record.data.timestamp });
    // Each decision is the intent's coordinator.decision event (the client's EventType knows it).
    const events = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "coordinator.decision");
    expect(events.map((e) => e.id)).toEqual([record.data.id, decided.data.id, mcp.data.id]);
    await expectRejected(cluster.sdk().send("decisionsList", { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
    await expectRejected(cluster.sdk().send("decisionsListRecords", { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
  });
});

describe("guardrails (RFC-0013 3) on the coordinator's decisions", () => {
  const decideAs = (intentId: string, agentId: string, decisionType: BodyOf<"decisionsCreateRecord">["decision_type"], summary: string = decisionType) =>
    cluster.sdk("agent", agentId).send("decisionsCreateRecord", { body: { coordinator_id: agentId, intent_id: intentId, decision_type: decisionType, summary, rationale: "r" } });
  const spend = (intentId: string, cents: number) => cluster.sdk().send("costsRecord", { intent_id: intentId, body: { cost_type: "api_call", amount: cents, unit: "cents", agent_id: "worker" } });
  const guardrailEvents = async (intentId: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type.startsWith("coordinator.guardrail_"));

  it("budget: a warning once at warn_at_percentage; once spent, work decisions are refused (403, the attempt logged) and escalating still works", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    const lease = (await take(intent.id, holder, { guardrails: { budget: { max_budget_usd: 1, warn_at_percentage: 50 } } })).data;
    expect((await spend(intent.id, 49)).status).toBe(201);
    expect((await decideAs(intent.id, holder, "task_assigned")).status).toBe(201);
    expect(await guardrailEvents(intent.id)).toEqual([]);
    expect((await spend(intent.id, 1)).status).toBe(201);
    expect((await decideAs(intent.id, holder, "task_assigned", "second")).status).toBe(201);
    expect((await decideAs(intent.id, holder, "task_assigned", "third")).status).toBe(201);
    expect((await guardrailEvents(intent.id)).map((e) => [e.event_type, e.payload])).toEqual([
      ["coordinator.guardrail_warning", { lease_id: lease.id, coordinator_id: holder, guardrail: "max_budget_usd", current_value: 0.5, limit: 1 }],
    ]);
    expect((await spend(intent.id, 50)).status).toBe(201);
    const decisionsBefore = (await decisionRecords(intent.id)).length;
    const refused = await expectRejected(decideAs(intent.id, holder, "plan_modified"), 403, "GUARDRAIL_VIOLATION");
    expect(refused.details).toMatchObject({ guardrail: "max_budget_usd", attempted_value: 1, limit: 1 });
    // record_decision by the holder is the coordinator's decision too.
    await expectRejected(cluster.sdk("agent", holder).send("decisionsRecord", { intent_id: intent.id, body: { decision_type: "task_assigned", outcome: "o", reasoning: "r" } }), 403, "GUARDRAIL_VIOLATION");
    expect((await decisionRecords(intent.id)).length).toBe(decisionsBefore);
    const violations = (await guardrailEvents(intent.id)).filter((e) => e.event_type === "coordinator.guardrail_violation");
    expect(violations.map((e) => e.payload.decision_type)).toEqual(["plan_modified", "task_assigned"]);
    expect((await decideAs(intent.id, holder, "escalation_initiated")).status).toBe(201);
    // Another caller's record_decision (an arbitration outcome) is not the coordinator's: no guardrail.
    expect((await cluster.sdk("admin", "lead").send("decisionsRecord", { intent_id: intent.id, body: { decision_type: "task_assigned", outcome: "o", reasoning: "r" } })).status).toBe(201);
  });

  it("an enforced guardrail of the wrong type is refused when the lease is taken (400), instead of going unenforced", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await expectRejected(take(intent.id, holder, { guardrails: { max_budget_usd: "50" } }), 400, "VALIDATION_FAILED");
    await expectRejected(take(intent.id, holder, { guardrails: { budget: { warn_at_percentage: 150 } } }), 400, "VALIDATION_FAILED");
    await expectRejected(take(intent.id, holder, { guardrails: { review: "yes" } }), 400, "VALIDATION_FAILED");
    await expectRejected(cluster.sdk("agent", holder).send("coordinatorsAssign", { intent_id: intent.id, body: { coordinator_id: holder, guardrails: { requires_plan_review: "true" } } }), 400, "VALIDATION_FAILED");
    expect(await leasesOf(intent.id)).toEqual([]);
    expect((await take(intent.id, holder, { guardrails: { max_budget_usd: 50, custom_key: "kept" } })).data.guardrails).toEqual({ max_budget_usd: 50, custom_key: "kept" });
  });

  it("temporal: max_plan_duration_hours from the first grant on the intent, on the server clock, not restarted by a takeover", async () => {
    const intent = await createIntent(cluster);
    const a = uniqueTag("coord");
    const b = uniqueTag("coord");
    await take(intent.id, a, { heartbeat_interval_seconds: 3600, guardrails: { temporal: { max_plan_duration_hours: 3 } } });
    advance(1.5 * 3600);
    expect((await decideAs(intent.id, a, "plan_created")).status).toBe(201);
    advance(3600);
    // a's lease expired (two intervals): b takes over with the same guardrails at 2.5 h.
    expect((await take(intent.id, b, { heartbeat_interval_seconds: 3600, guardrails: { temporal: { max_plan_duration_hours: 3 } } })).status).toBe(201);
    expect((await decideAs(intent.id, b, "plan_modified")).status).toBe(201);
    // 3 h after a's grant (0.5 h after b's): the intent's time is up; a takeover does not restart it.
    advance(0.5 * 3600);
    const refused = await expectRejected(decideAs(intent.id, b, "plan_modified"), 403, "GUARDRAIL_VIOLATION");
    expect(refused.details).toMatchObject({ guardrail: "max_plan_duration_hours", limit: 3 });
    expect((await decideAs(intent.id, b, "failure_handled")).status).toBe(201);
  });

  it("scope: max_plan_versions counts the intent's plan decisions", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await take(intent.id, holder, { guardrails: { max_plan_versions: 2 } });
    expect((await decideAs(intent.id, holder, "plan_created")).status).toBe(201);
    expect((await decideAs(intent.id, holder, "plan_modified")).status).toBe(201);
    expect((await decideAs(intent.id, holder, "task_assigned")).status).toBe(201);
    const refused = await expectRejected(decideAs(intent.id, holder, "plan_modified"), 403, "GUARDRAIL_VIOLATION");
    expect(refused.details).toMatchObject({ guardrail: "max_plan_versions", attempted_value: 3, limit: 2 });
  });

  it("review: a plan decision waits for a granted approval with action plan_review, one per reviewed plan", async () => {
    const intent = await createIntent(cluster);
    const holder = uniqueTag("coord");
    await take(intent.id, holder, { guardrails: { requires_plan_review: true } });
    await expectRejected(decideAs(intent.id, holder, "plan_created"), 403, "GUARDRAIL_VIOLATION");
    const approval = await cluster.sdk("agent", holder).send("governanceCreateApproval", { intent_id: intent.id, body: { action: "plan_review", reason: "four-task plan" } });
    expect(approval.status).toBe(201);
    expect((await cluster.sdk("operator").send("governanceApprove", { intent_id: intent.id, approval_id: approval.data.id, body: { notes: "fine" } })).status).toBe(200);
    expect((await decideAs(intent.id, holder, "plan_created")).status).toBe(201);
    await expectRejected(decideAs(intent.id, holder, "plan_created", "again"), 403, "GUARDRAIL_VIOLATION");
    expect((await decideAs(intent.id, holder, "plan_modified")).status).toBe(201);
  });
});
