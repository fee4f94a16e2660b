import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { intentsCommands, vaultCommands, vaultStream, type Caller, type VaultEvent } from "@intentmesh/contracts";
import { expectExactlyOnce, openFaultHarness, rowsWhenCaughtUp, writeThroughFault, type FaultHarness } from "../support/fault-harness";
import { readStream } from "../support/service-process";
import { startLoopbackServer, type LoopbackServer } from "../../libs/ssrf/test/support";

// Fault test: the vault process is killed (SIGKILL) while 8 agents invoke a tool for an intent,
// then started again. Every acknowledged invocation is stored once and completed; the grant
// counted exactly the invocations it holds (no use lost, none twice); IM_VAULT and the intent's
// log carry tool.invoked once per completed invocation; the intent's ledger holds at most one
// cost per invocation, and one for every invocation marked recorded.
const OWNER: Caller = { principal: "owner", roles: ["operator"], actor: "owner", agent_id: null };
const ADMIN: Caller = { principal: "admin", roles: ["admin"], actor: "admin", agent_id: null };
const AGENT: Caller = { principal: "agent-key", roles: ["agent"], actor: "kill-worker", agent_id: "kill-worker" };
const KEK = `kill-1:${randomBytes(32).toString("base64")}`;
let harness: FaultHarness;
let tool: LoopbackServer;

beforeAll(async () => {
  harness = await openFaultHarness("vault-kill", ADMIN, { busTimeoutMs: 3000 });
  tool = await startLoopbackServer((_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    }, 5);
  });
});
afterAll(async () => {
  await tool?.close();
  await harness?.close();
});

describe("killing the vault service mid-flight", () => {
  it("loses no acknowledged invocation, counts every use once, and audits and costs each at most once", async () => {
    const { client } = harness;
    await Promise.all([harness.start("intents"), harness.start("vault", { VAULT_KEK: KEK, VAULT_TOOL_ALLOWED_NETWORKS: "127.0.0.1/32" })]);
    const intent = await client.request(intentsCommands.create, ADMIN, { body: { title: "kill", status: "active", state: {}, constraints: {} } });
    const vault = await client.request(vaultCommands.createVault, OWNER, { body: { name: "kill" } });
    const credential = await client.request(vaultCommands.createCredential, OWNER, {
      body: { vault_id: vault.id, service: "svc", label: "svc", secret: "kill-secret-value", metadata: { base_url: tool.url, endpoints: { ping: { path: "/ping", cost_cents: 1 } } } },
    });
    const grant = await client.request(vaultCommands.createGrant, OWNER, { body: { credential_id: credential.id, agent_id: "kill-worker", scopes: ["ping"], context: { intent_id: intent.id } } });

    const { acknowledged: answers } = await writeThroughFault({
      workers: 8,
      write: () => client.request(vaultCommands.invokeTool, AGENT, { body: { tool_name: "ping", parameters: {} } }),
      fault: () => harness.killAndRestart("vault"),
      until: harness.until,
    });
    expect(answers.filter((a) => a.status !== "success")).toEqual([]);
    const acknowledged = answers.map((a) => a.invocation_id);
    await harness.drained("vault");

    const rows = await harness.rows<{ id: string; status: string; cost_state: string }>(sql`select id, status, cost_state from vault.invocations where grant_id = ${grant.id}`);
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const id of acknowledged) expect(byId.get(id)?.status).toBe("success");
    // At most the calls in flight at the kill are left running (outcome unknown).
    expect(rows.filter((r) => r.status === "running").length).toBeLessThanOrEqual(8);
    const [counted] = await harness.rows<{ invocation_count: number }>(sql`select invocation_count from vault.grants where id = ${grant.id}`);
    expect(counted!.invocation_count).toBe(rows.length);

    const completed = rows.filter((r) => r.status !== "running").map((r) => r.id);
    const published = (await readStream(harness.bus, harness.bus.streamName(vaultStream.name), (msg) => msg.json<VaultEvent>()))
      .filter((e) => e.event_type === "tool.invoked")
      .map((e) => String(e.payload.invocation_id));
    const logged = await rowsWhenCaughtUp<{ invocation_id: string }>(
      harness,
      sql`select payload->>'invocation_id' as invocation_id from intents.events where intent_id = ${intent.id} and event_type = 'tool.invoked'`,
      completed.length,
    );
    expectExactlyOnce({ acknowledged, stored: completed, published: { [vaultStream.name]: published, "the intent's log": logged.map((r) => r.invocation_id) } });

    const costs = (await harness.rows<{ invocation_id: string }>(sql`select metadata->>'invocation_id' as invocation_id from intents.costs where intent_id = ${intent.id}`)).map((r) => r.invocation_id);
    expect(costs.length).toBe(new Set(costs).size);
    for (const row of rows.filter((r) => r.cost_state === "recorded")) expect(costs).toContain(row.id);
    for (const id of costs) expect(completed).toContain(id);
  }, 60_000);
});
