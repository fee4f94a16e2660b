import { randomBytes } from "node:crypto";
import { type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { intentsCommands, streams, systemEventStream, vaultCommands, vaultStream, type Caller, type VaultEvent } from "@intentmesh/contracts";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { createLogger } from "@intentmesh/telemetry";
import { startIntentsService, type IntentsService } from "../../services/intents/src/service";
import { createTestDatabase, testNamespace } from "../support/backends";
import { killServiceProcess, readStream, startServiceProcess, untilHealthy, untilOutboxDrained } from "../support/service-process";
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
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let namespace: string;
let bus: Bus;
let database: DatabaseHandle;
let intents: IntentsService;
let tool: LoopbackServer;
let service: ChildProcess | undefined;

const startVault = () =>
  startServiceProcess("vault", { DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace, VAULT_KEK: KEK, VAULT_TOOL_ALLOWED_NETWORKS: "127.0.0.1/32" });

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  namespace = testNamespace();
  bus = await connectBus(inject("natsUrl"), "vault-kill-test", namespace);
  database = await openDatabase({ url: testDb.url });
  intents = await startIntentsService({ bus, database, logger: createLogger("test", "silent"), leaseSweepIntervalMs: 3_600_000 });
  tool = await startLoopbackServer((_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    }, 5);
  });
});
afterAll(async () => {
  service?.kill("SIGKILL");
  await intents?.stop();
  await tool?.close();
  for (const name of [vaultStream.name, systemEventStream.name, streams.intents.name, streams.registry.name, streams.portfolios.name]) {
    await bus?.jsm.streams.delete(bus.streamName(name)).catch(() => undefined);
  }
  await bus?.close();
  await database?.close();
  await testDb?.drop();
});

describe("killing the vault service mid-flight", () => {
  it("loses no acknowledged invocation, counts every use once, and audits and costs each at most once", async () => {
    const client = new BusClient(bus, 3000);
    const intent = await client.request(intentsCommands.create, ADMIN, { body: { title: "kill", status: "active", state: {}, constraints: {} } });
    service = startVault();
    await untilHealthy(client, "vault", ADMIN);
    const vault = await client.request(vaultCommands.createVault, OWNER, { body: { name: "kill" } });
    const credential = await client.request(vaultCommands.createCredential, OWNER, {
      body: { vault_id: vault.id, service: "svc", label: "svc", secret: "kill-secret-value", metadata: { base_url: tool.url, endpoints: { ping: { path: "/ping", cost_cents: 1 } } } },
    });
    const grant = await client.request(vaultCommands.createGrant, OWNER, { body: { credential_id: credential.id, agent_id: "kill-worker", scopes: ["ping"], context: { intent_id: intent.id } } });

    const acknowledged: string[] = [];
    let running = true;
    const workers = Array.from({ length: 8 }, async () => {
      while (running) {
        try {
          const answer = await client.request(vaultCommands.invokeTool, AGENT, { body: { tool_name: "ping", parameters: {} } });
          expect(answer.status).toBe("success");
          acknowledged.push(answer.invocation_id);
        } catch {
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    });

    // Kill once the load is flowing (a loaded machine may take seconds to answer the first calls).
    for (let i = 0; i < 300 && acknowledged.length < 10; i++) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 200));
    const beforeKill = acknowledged.length;
    await killServiceProcess(service);
    await new Promise((r) => setTimeout(r, 200));
    service = startVault();
    await untilHealthy(client, "vault", ADMIN);
    const afterRestart = acknowledged.length;
    for (let i = 0; i < 100 && acknowledged.length < afterRestart + 20; i++) await new Promise((r) => setTimeout(r, 50));
    running = false;
    await Promise.all(workers);
    expect(beforeKill).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(beforeKill);
    await untilOutboxDrained(client, "vault", ADMIN);

    const rows = rowsOf<{ id: string; status: string; cost_state: string }>(await database.db.execute(sql`select id, status, cost_state from vault.invocations where grant_id = ${grant.id}`));
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const id of acknowledged) expect(byId.get(id)?.status).toBe("success");
    // At most the calls in flight at the kill are left running (outcome unknown).
    expect(rows.filter((r) => r.status === "running").length).toBeLessThanOrEqual(8);
    const [counted] = rowsOf<{ invocation_count: number }>(await database.db.execute(sql`select invocation_count from vault.grants where id = ${grant.id}`));
    expect(counted!.invocation_count).toBe(rows.length);

    const completed = new Set(rows.filter((r) => r.status !== "running").map((r) => r.id));
    const published = await readStream(bus, bus.streamName(vaultStream.name), (msg) => msg.json<VaultEvent>()).then((events) =>
      events.filter((e) => e.event_type === "tool.invoked").map((e) => String(e.payload.invocation_id)),
    );
    expect(published.length).toBe(new Set(published).size);
    expect(new Set(published)).toEqual(completed);

    let logged: string[] = [];
    for (let i = 0; i < 200; i++) {
      logged = rowsOf<{ invocation_id: string }>(
        await database.db.execute(sql`select payload->>'invocation_id' as invocation_id from intents.events where intent_id = ${intent.id} and event_type = 'tool.invoked'`),
      ).map((r) => r.invocation_id);
      if (logged.length >= completed.size) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(logged.length).toBe(new Set(logged).size);
    expect(new Set(logged)).toEqual(completed);

    const costs = rowsOf<{ invocation_id: string }>(
      await database.db.execute(sql`select metadata->>'invocation_id' as invocation_id from intents.costs where intent_id = ${intent.id}`),
    ).map((r) => r.invocation_id);
    expect(costs.length).toBe(new Set(costs).size);
    for (const row of rows.filter((r) => r.cost_state === "recorded")) expect(costs).toContain(row.id);
    for (const id of costs) expect(completed.has(id)).toBe(true);
  }, 60_000);
});
