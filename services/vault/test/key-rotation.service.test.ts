import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { vaultCommands, type Caller } from "@intentmesh/contracts";
import { parseAllowedNetworks, pinnedConnector } from "@intentmesh/ssrf";
import { startServiceHarness, type HarnessConnections, type ServiceHarness } from "../../../test/support/service-harness";
import { startLoopbackServer, tripwire, type LoopbackServer } from "../../../libs/ssrf/test/support";
import { KeyRing } from "../src/crypto/envelope";
import { startVaultService, type VaultService } from "../src/service";

/**
 * Key-encryption keys rotate without downtime (docs/vaults.md): the vault restarts with a new
 * primary beside the old key; old rows still open, new rows are sealed under the new key, the
 * re-wrap moves the old rows, and then the old key can leave the configuration. A row whose key
 * left too early is refused (503), never opened with another key.
 */

const OWNER: Caller = { principal: "owner", roles: ["operator"], actor: "owner", agent_id: null };
const AGENT: Caller = { principal: "agent-key", roles: ["agent"], actor: "worker", agent_id: "worker" };
const ADMIN: Caller = { principal: "root", roles: ["admin"], actor: "root", agent_id: null };
const SECRET = "sk_rotation_test_9a8b7c";

const oldKey = randomBytes(32);
const newKey = randomBytes(32);
const ring = (entries: [string, Buffer][], primary: string) => new KeyRing(new Map(entries), primary);
const wire = tripwire(pinnedConnector);

/** A vault whose configuration a test changes by restarting it, as an operator would. */
class Restartable {
  current!: VaultService;
  constructor(private readonly connections: HarnessConnections) {}
  async start(keys: KeyRing) {
    this.current = await startVaultService({ ...this.connections, keys, proxy: { outbound: { allowedNetworks: parseAllowedNetworks(["127.0.0.1/32"]), connect: wire.connect } }, sweepIntervalMs: 3_600_000 });
    return this;
  }
  stop() {
    return this.current.stop();
  }
}

let harness: ServiceHarness<Restartable>;
let tool: LoopbackServer;
beforeAll(async () => {
  tool = await startLoopbackServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ key_ok: req.headers["x-api-key"] === SECRET }));
  });
  harness = await startServiceHarness((connections) => new Restartable(connections).start(ring([["old", oldKey]], "old")));
});
afterAll(async () => {
  await harness?.stop();
  await tool?.close();
  expect(wire.tripped).toEqual([]);
});

async function credentialWithGrant(label: string) {
  const vault = (await harness.call(vaultCommands.createVault, { body: { name: `v-${label}` } }, OWNER)) as { id: string };
  const credential = (await harness.call(
    vaultCommands.createCredential,
    { body: { vault_id: vault.id, service: "svc", label, secret: SECRET, metadata: { base_url: tool.url, auth: { header_name: "X-API-Key" } } } },
    OWNER,
  )) as { id: string };
  await harness.call(vaultCommands.createGrant, { body: { credential_id: credential.id, agent_id: "worker", scopes: [label] } }, OWNER);
  return credential.id;
}

const invoke = (tool_name: string) => harness.call(vaultCommands.invokeTool, { body: { tool_name, parameters: {} } }, AGENT) as Promise<{ status: string; result: { key_ok: boolean } }>;
const kekOf = async (id: string) => ((await harness.database.db.execute(`select kek_id from vault.credentials where id = '${id}'` as never)) as unknown as { rows: { kek_id: string }[] }).rows[0]!.kek_id;

describe("key-encryption key rotation", () => {
  it("new primary beside the old key, re-wrap, then the old key removed: every credential keeps working", async () => {
    const before = await credentialWithGrant("before");
    expect(await kekOf(before)).toBe("old");
    expect(await invoke("before")).toMatchObject({ status: "success", result: { key_ok: true } });

    // Step 1: the new key is primary, the old one still configured.
    await harness.service.stop();
    await harness.service.start(ring([["new", newKey], ["old", oldKey]], "new"));
    expect(await invoke("before")).toMatchObject({ status: "success", result: { key_ok: true } });
    const after = await credentialWithGrant("after");
    expect(await kekOf(after)).toBe("new");

    // Step 2: re-wrap (the command; the job runs the same batch on its timer).
    const agentRefused = harness.call(vaultCommands.rewrap, { body: {} }, AGENT);
    await expect(agentRefused).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(await harness.call(vaultCommands.rewrap, { body: {} }, ADMIN)).toEqual({ rewrapped: 1, remaining: 0, primary_key_id: "new" });
    expect(await kekOf(before)).toBe("new");

    // Step 3: the old key leaves the configuration.
    await harness.service.stop();
    await harness.service.start(ring([["new", newKey]], "new"));
    expect(await invoke("before")).toMatchObject({ status: "success", result: { key_ok: true } });
    expect(await invoke("after")).toMatchObject({ status: "success", result: { key_ok: true } });
  });

  it("a credential whose key was removed before its re-wrap is refused with 503 and nothing is written", async () => {
    await harness.service.stop();
    await harness.service.start(ring([["third", randomBytes(32)], ["new", newKey]], "third"));
    await credentialWithGrant("orphan");
    await harness.service.stop();
    await harness.service.start(ring([["new", newKey]], "new"));
    await expect(invoke("orphan")).rejects.toMatchObject({ code: "SERVICE_UNAVAILABLE", status: 503 });
    const rows = (await harness.database.db.execute("select count(*)::int as n from vault.invocations i join vault.credentials c on c.id = i.credential_id where c.label = 'orphan'" as never)) as unknown as { rows: { n: number }[] };
    expect(rows.rows[0]!.n).toBe(0);
  });
});
