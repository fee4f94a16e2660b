import { describe, expect, it } from "vitest";
import { aclCommands, costsCommands, governancePolicyCommands, intentsCommands, type Caller, type Intent } from "@intentmesh/contracts";
import { agentCaller } from "../../../test/support/cluster";
import { recordedIntentsService } from "./process-statements";

/**
 * The PostgreSQL statements of POST /intents (create_intent) and POST /intents/{id}/costs
 * (record_cost) (docs/benchmarks.md), counted as in task-statements.service.test.ts: a counting
 * wrapper around every pg client of this process, the outbox relay stopped. Recording a cost on an
 * intent without a governance policy or an ACL is the recording statement alone: a separate read
 * of the policy or of the access facts before it fails here. An intent with a policy or an ACL
 * still has them checked, between a gated run that writes nothing and the run that records.
 */

const recorded = recordedIntentsService();

/** What a statement is, in the words of these two commands. */
function kindOf(text: string): string {
  const s = text.replace(/\s+/g, " ").replace(/"/g, "").trim().toLowerCase();
  if (s === "begin" || s === "commit" || s === "rollback") return s;
  if (s.includes("insert into intents.costs")) return "record cost";
  if (/insert into intents\.intents/.test(s)) return "insert intent";
  if (s.includes("acl_entries")) return "access facts";
  if (/from intents\.cost_totals where/.test(s)) return "cost total";
  if (s.includes("governance_policy")) return "governance policy";
  return s.slice(0, 120);
}

async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  return (await recorded.statementsDuring(run)).map(kindOf);
}

const agent: Caller = agentCaller("cost-counter");
const admin: Caller = { principal: "cost-admin", actor: "cost-admin", roles: ["admin"], agent_id: null };
const cost = { cost_type: "api_call" as const, amount: 3, unit: "cents" as const };
const recordAs = (intentId: string, caller: Caller) => recorded.harness().call(costsCommands.record, { intent_id: intentId, body: cost }, caller);
const summaryOf = async (intentId: string) => (await recorded.harness().call(costsCommands.list, { intent_id: intentId, query: { limit: 1 } })).summary;

describe("statements of create_intent and record_cost", () => {
  let intent: Intent;

  it("create an intent in one statement", async () => {
    expect(await statementsOf(async () => (intent = await recorded.harness().call(intentsCommands.create, { body: { title: "counted costs" } })))).toEqual(["insert intent"]);
  });

  it("record a cost in one statement on an intent without a policy or an ACL, for an agent and an admin alike", async () => {
    expect(await statementsOf(() => recordAs(intent.id, agent))).toEqual(["record cost"]);
    expect(await statementsOf(() => recordAs(intent.id, admin))).toEqual(["record cost"]);
    expect((await summaryOf(intent.id)).count).toBe(2);
  });

  it("check a governance policy between a gated run that writes nothing and the one that records; a refusal writes nothing", async () => {
    const governed = await recorded.harness().call(intentsCommands.create, { body: { title: "governed costs" } });
    const set = await recorded.harness().call(governancePolicyCommands.set, { intent_id: governed.id, if_match: governed.version, body: { max_cost: 5 } });
    // max_cost reads the running total: a fact of the policy, read only because the policy asks for it.
    expect(await statementsOf(() => recordAs(governed.id, agent))).toEqual(["record cost", "cost total", "record cost"]);
    await expect(recordAs(governed.id, agent)).rejects.toMatchObject({ code: "GOVERNANCE_VIOLATION" });
    expect((await summaryOf(governed.id)).count).toBe(1);
    // A policy changed after the check is checked again before anything is written.
    await recorded.harness().call(governancePolicyCommands.set, { intent_id: governed.id, if_match: set.version, body: { allowed_agents: ["someone-else"] } });
    await expect(recordAs(governed.id, agent)).rejects.toMatchObject({ code: "GOVERNANCE_VIOLATION", details: { rule: "allowed_agents" } });
    expect((await summaryOf(governed.id)).count).toBe(1);
  });

  it("check an ACL with the guard's one statement between the gated run and the one that records; an admin key skips it", async () => {
    const guarded = await recorded.harness().call(intentsCommands.create, { body: { title: "guarded costs" } });
    await recorded.harness().call(aclCommands.set, {
      intent_id: guarded.id,
      body: { default_policy: "closed", default_permission: "read", entries: [{ principal_type: "agent", principal_id: agent.actor, permission: "write" }] },
    });
    expect(await statementsOf(() => recordAs(guarded.id, agent))).toEqual(["record cost", "access facts", "record cost"]);
    expect(await statementsOf(() => recordAs(guarded.id, admin))).toEqual(["record cost"]);
    const stranger = agentCaller("cost-stranger");
    await expect(recordAs(guarded.id, stranger)).rejects.toMatchObject({ code: "INTENT_ACCESS_DENIED" });
    expect((await summaryOf(guarded.id)).count).toBe(2);
  });

  it("answer 404 for an absent intent in the one statement", async () => {
    const absent = "00000000-0000-4000-8000-000000000001";
    let refusal: unknown;
    expect(await statementsOf(() => recordAs(absent, agent).catch((error: unknown) => (refusal = error)))).toEqual(["record cost"]);
    expect(refusal).toMatchObject({ code: "INTENT_NOT_FOUND" });
  });
});
