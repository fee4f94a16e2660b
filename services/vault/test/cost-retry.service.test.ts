import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { costsCommands, intentsCommands, vaultCommands, type Caller } from "@intentmesh/contracts";
import { parseAllowedNetworks, pinnedConnector } from "@intentmesh/ssrf";
import { createLogger } from "@intentmesh/telemetry";
import { startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { startLoopbackServer, tripwire, type LoopbackServer } from "../../../libs/ssrf/test/support";
import { startIntentsService, type IntentsService } from "../../intents/src/service";
import { KeyRing } from "../src/crypto/envelope";
import { startVaultService, type VaultService } from "../src/service";

/**
 * RFC-0014 §7.1: a tool's cost reaches the intent's ledger even when the intents service is
 * down at the moment of the invocation: the invocation keeps cost_state pending, and the retry
 * sweeper (safe with several replicas: one row claimed at a time under SKIP LOCKED) records it
 * once the intents service answers again, and only once.
 */
const OWNER: Caller = { principal: "owner", roles: ["operator"], actor: "owner", agent_id: null };
const ADMIN: Caller = { principal: "root", roles: ["admin"], actor: "root", agent_id: null };
const AGENT: Caller = { principal: "agent-key", roles: ["agent"], actor: "payer", agent_id: "payer" };
const wire = tripwire(pinnedConnector);

let harness: ServiceHarness<VaultService>;
let tool: LoopbackServer;
let intents: IntentsService | undefined;
const startIntents = () => startIntentsService({ bus: harness.bus, database: harness.database, logger: createLogger("test", "silent"), clock: harness.clock, leaseSweepIntervalMs: 3_600_000 });

beforeAll(async () => {
  tool = await startLoopbackServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
  });
  harness = await startServiceHarness((connections) =>
    startVaultService({
      ...connections,
      keys: new KeyRing(new Map([["k", randomBytes(32)]]), "k"),
      proxy: { outbound: { allowedNetworks: parseAllowedNetworks(["127.0.0.1/32"]), connect: wire.connect } },
      sweepIntervalMs: 3_600_000,
    }),
  );
  intents = await startIntents();
});
afterAll(async () => {
  await intents?.stop();
  await harness?.stop();
  await tool?.close();
  expect(wire.tripped).toEqual([]);
});

const costState = async (id: string) =>
  ((await harness.database.db.execute(`select cost_state from vault.invocations where id = '${id}'` as never)) as unknown as { rows: { cost_state: string }[] }).rows[0]!.cost_state;

describe("a tool's cost while the intents service is down", () => {
  it("stays pending, is retried by the sweeper once intents answers, and is recorded once", async () => {
    const intent = (await harness.call(intentsCommands.create, { body: { title: "costly", status: "active" } }, ADMIN)) as { id: string };
    const vault = (await harness.call(vaultCommands.createVault, { body: { name: "costs" } }, OWNER)) as { id: string };
    const credential = (await harness.call(vaultCommands.createCredential, { body: { vault_id: vault.id, service: "paid", label: "paid", secret: "paid-secret", metadata: { base_url: tool.url, cost_cents: 7 } } }, OWNER)) as { id: string };
    await harness.call(vaultCommands.createGrant, { body: { credential_id: credential.id, agent_id: "payer", scopes: ["lookup"], context: { intent_id: intent.id } } }, OWNER);

    await intents!.stop();
    intents = undefined;
    const invoked = (await harness.call(vaultCommands.invokeTool, { body: { tool_name: "lookup" } }, AGENT)) as { invocation_id: string; status: string; cost: unknown };
    expect(invoked).toMatchObject({ status: "success", cost: { amount_cents: 7 } });
    expect(await costState(invoked.invocation_id)).toBe("pending");

    intents = await startIntents();
    // Within the grace period the sweeper leaves it (the invocation itself may still be recording it).
    expect(await harness.service.costRetry.sweep()).toBe(0);
    harness.clock.advance(31_000);
    expect(await harness.service.costRetry.sweep()).toBe(1);
    expect(await costState(invoked.invocation_id)).toBe("recorded");
    expect(await harness.service.costRetry.sweep()).toBe(0);

    const ledger = await harness.call(costsCommands.list, { intent_id: intent.id, query: {} }, ADMIN);
    expect(ledger.costs).toHaveLength(1);
    expect(ledger.costs[0]).toMatchObject({ amount: 7, unit: "cents", metadata: { invocation_id: invoked.invocation_id } });
  });
});
