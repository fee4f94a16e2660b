import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { agentHeaders } from "../support/agents";
import type { BodyOf, Intentmesh } from "@intentmesh/sdk";
import { allEvents, createIntent, keyHeader, type SdkTarget } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";

/**
 * Costs and budgets across the gateway's live stream and on the embedded database: budget_alert
 * and the block reach SSE subscribers, and a whole cluster on PGlite keeps the same rules. The
 * cost and budget rules themselves are tested in the intents service's lane
 * (services/intents/test/costs.service.test.ts).
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

type CostBody = BodyOf<"costsRecord">;
type Budget = BodyOf<"costsSetBudget">;

/** A cost body in cents, overridable. */
const cents = (amount: number, overrides: Partial<CostBody> = {}): CostBody => ({ cost_type: "api_call", amount, unit: "cents", ...overrides });

/** Registers an agent (once) and answers the typed client acting as it with the key it is bound to. */
async function actingAgent(agentId: string, key: "agent" | "other" = "agent", on: SdkTarget = cluster): Promise<Intentmesh> {
  await agentHeaders(on, agentId, key);
  return on.sdk(key, agentId);
}

const record = (intentId: string, body: CostBody, agent: Intentmesh) => agent.send("costsRecord", { intent_id: intentId, body });
const withBudget = (budget: Budget) => createIntent(cluster, { constraints: { budget } });

describe("exceeding the budget", () => {
  it("publishes budget_alert and the block over SSE like every event, right after the record", async () => {
    const intent = await withBudget({ max_total_cents: 10, alert_threshold_percent: 50 });
    const agent = await actingAgent("sse-agent");
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader());
    try {
      expect(sse.status).toBe(200);
      await record(intent.id, cents(11), agent);
      await sse.waitFor((c) => c.events.length >= 2);
      expect(sse.events.map((e) => [e.event, e.data.sequence])).toEqual([
        ["budget_alert", 2],
        ["status_changed", 3],
      ]);
      const logged = await allEvents(cluster, intent.id);
      expect(sse.events.map((e) => e.data)).toEqual(logged.slice(1));
      expect(sse.events.map((e) => e.id)).toEqual(logged.slice(1).map((e) => e.id));
    } finally {
      await sse.close();
    }
  });

});

describe("on the embedded database (PGlite)", () => {
  it("records, sums, alerts and blocks the same way", async () => {
    const embedded = await startTestCluster({ embedded: true });
    try {
      const created = await embedded.sdk().send("intentsCreate", { body: { title: "embedded budget", status: "active", constraints: { budget: { max_total_cents: 10, alert_threshold_percent: 50 } } } });
      expect(created.status).toBe(201);
      const id = created.data.id;
      const agent = await actingAgent("pglite-agent", "agent", embedded);
      for (const amount of [4, 1, 6]) {
        const res = await record(id, cents(amount), agent);
        expect(res.status).toBe(201);
      }
      const listed = await embedded.sdk().ops.costsList({ intent_id: id });
      expect(listed.summary).toEqual({ total: 11, by_type: { api_call: 11 }, by_agent: { "pglite-agent": 11 }, count: 3, total_cents: 11, by_agent_cents: { "pglite-agent": 11 } });
      expect(listed.budget.blocked).toBe(true);
      const events = await allEvents(embedded, id);
      expect(events.map((e) => e.event_type)).toEqual(["intent_created", "budget_alert", "status_changed"]);
    } finally {
      await embedded.stop();
    }
  });
});
