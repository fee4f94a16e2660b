import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllowedNetworks, pinnedConnector } from "@intentmesh/ssrf";
import { QUIET, expectApiError as expectError, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { OperationRequest } from "../../../test/support/typed-api";
import { testKeyRing } from "../../../test/support/cluster";
import { readBody, startLoopbackServer, tripwire, type LoopbackServer } from "../../../libs/ssrf/test/support";
import type { VaultService } from "../src/service";

/**
 * The vault's own rules (RFC-0014 §2, §3): grant scopes, expiry, limits, rate, parameter
 * constraints, idempotency, suspension, revocation, who may invoke, and the tool proxy's outbound
 * guard, through the typed client of the route catalogue. The registry runs beside it only
 * because the gateway asks it whom an X-Agent-ID is bound to. The tool is an HTTP server on
 * 127.0.0.1, reached through an allow-list of 127.0.0.1/32 only; every outbound connect goes
 * through a tripwire that refuses anything but loopback. What crosses services (tool.invoked in
 * an intent's log, costs, dormancy on deregistration, the clients' exact wire) stays in
 * test/e2e/vault.e2e.test.ts.
 */
const SECRET = "sk_live_vault_service_0123456789abcdef";
const wire = tripwire(pinnedConnector);
let tool: LoopbackServer;
/** What the tool received, per request. */
const received: { method: string; url: string }[] = [];

let harness: ServiceHarness<{ vault: VaultService; stop(): Promise<void> }>;
beforeAll(async () => {
  tool = await startLoopbackServer(async (req, res) => {
    await readBody(req);
    received.push({ method: req.method!, url: req.url! });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true, path: req.url }));
  });
  harness = await startServiceHarness(
    manifestServices({
      registry: QUIET.registry,
      vault: {
        sweepIntervalMs: 3_600_000,
        keys: testKeyRing(),
        proxy: { outbound: { allowedNetworks: parseAllowedNetworks(["127.0.0.1/32"]), connect: wire.connect } },
      },
    }),
  );
});
afterAll(async () => {
  await harness?.stop();
  await tool?.close();
  // Every connect of the test went to loopback, or the guard let something through.
  expect(wire.tripped).toEqual([]);
});

type KeyName = "agent" | "other" | "operator" | "coordinator" | "admin";
/** A request as `agentId` with `key` (X-Agent-ID), as the Python client sends every call. */
const as = (key: KeyName, agentId: string): Pick<OperationRequest, "key" | "headers"> => ({ key, headers: { "X-Agent-ID": agentId } });
const USER = as("operator", "user-1");

/** A vault of the operator with one credential to the loopback tool; the secret in metadata.api_key, as the other implementation's clients send it. */
async function stripeSetup(name: string, extra: Record<string, unknown> = {}) {
  const vault = (await harness.api("vaultsCreate", { ...USER, body: { owner_id: "user-1", name } })).ok();
  const credential = (
    await harness.api("credentialsCreate", {
      ...USER,
      body: {
        vault_id: vault.id,
        service: "stripe",
        label: `${name}-stripe`,
        auth_type: "api_key",
        scopes_available: ["charges.read", "charges.create", "refunds.create"],
        metadata: { environment: "test", api_key: SECRET, base_url: tool.url, auth: { location: "header", header_name: "X-API-Key" }, endpoints: { "charges.read": { path: "/charges", method: "GET", cost_cents: 2 } }, ...extra },
      },
    })
  ).ok();
  return { vault, credential };
}

const createGrant = (credentialId: string, agentId: string, scopes: string[], extra: Record<string, unknown> = {}) =>
  harness.api("grantsCreate", { ...USER, body: { credential_id: credentialId, agent_id: agentId, granted_by: "user-1", scopes, ...extra } });
const getGrant = async (grantId: string) => (await harness.api("grantsGet", { ...USER, params: { grant_id: grantId } })).ok();
/** POST /tools/invoke as the agent itself (the Python client's invoke_tool). */
const invoke = (agentId: string, toolName: string, parameters: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, caller = as("agent", agentId)) =>
  harness.api("toolsInvoke", { ...caller, body: { tool_name: toolName, agent_id: agentId, parameters, ...extra } });
const invocations = async (agentId: string, grantId: string) => (await harness.api("grantInvocationsList", { ...as("agent", agentId), params: { grant_id: grantId } })).ok();

describe("grant rules", () => {
  it("scopes: a grant never exceeds the credential, and a tool outside the grant is refused", async () => {
    const { credential } = await stripeSetup("scopes");
    expectError(await createGrant(credential.id, "scoped-1", ["payouts.create"]), 400, "SCOPE_NOT_AVAILABLE");
    const grant = (await createGrant(credential.id, "scoped-1", ["charges.read"])).ok();
    expectError(await invoke("scoped-1", "refunds.create"), 404, "GRANT_NOT_FOUND");
    const insufficient = expectError(await invoke("scoped-1", "refunds.create", {}, { grant_id: grant.id }), 403, "GRANT_SCOPE_INSUFFICIENT");
    expect(insufficient.details).toMatchObject({ requested_scope: "refunds.create", available_scopes: ["charges.read"] });
  });

  it("expiry on the server clock, usage limits, hourly rate, parameter constraints", async () => {
    const { credential } = await stripeSetup("limits");
    const expiring = (await createGrant(credential.id, "limited-1", ["charges.read"], { expires_at: new Date(harness.clock.now().getTime() + 60_000).toISOString() })).ok();
    (await invoke("limited-1", "charges.read", {}, { grant_id: expiring.id })).ok();
    harness.clock.advance(61_000);
    expectError(await invoke("limited-1", "charges.read", {}, { grant_id: expiring.id }), 403, "GRANT_EXPIRED");
    expect((await getGrant(expiring.id)).status).toBe("expired");

    const counted = (await createGrant(credential.id, "limited-2", ["charges.read"], { constraints: { max_invocations: 2 } })).ok();
    (await invoke("limited-2", "charges.read")).ok();
    (await invoke("limited-2", "charges.read")).ok();
    expectError(await invoke("limited-2", "charges.read"), 403, "GRANT_EXHAUSTED");
    expect((await getGrant(counted.id)).invocation_count).toBe(2);

    (await createGrant(credential.id, "limited-3", ["charges.read"], { constraints: { max_invocations_per_hour: 1, allowed_parameters: { currency: ["usd"], amount_max: 500 } } })).ok();
    expectError(await invoke("limited-3", "charges.read", { currency: "gbp" }), 403, "GRANT_PARAMETER_DENIED");
    expectError(await invoke("limited-3", "charges.read", { amount: 501 }), 403, "GRANT_PARAMETER_DENIED");
    (await invoke("limited-3", "charges.read", { currency: "usd", amount: 500 })).ok();
    expect(expectError(await invoke("limited-3", "charges.read", { currency: "usd" }), 429, "GRANT_RATE_LIMITED").details.retry_after_seconds).toBe(3600);
    harness.clock.advance(3_601_000);
    (await invoke("limited-3", "charges.read", { currency: "usd" })).ok();
  });

  it("concurrent invocations cannot both take the last use of a grant", async () => {
    const { credential } = await stripeSetup("race");
    const grant = (await createGrant(credential.id, "racer-1", ["charges.read"], { constraints: { max_invocations: 2 } })).ok();
    const answers = await Promise.all(Array.from({ length: 8 }, () => invoke("racer-1", "charges.read")));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(2);
    for (const refused of answers.filter((a) => a.status !== 200)) expectError(refused, 403, "GRANT_EXHAUSTED");
    expect((await getGrant(grant.id)).invocation_count).toBe(2);
    expect(await invocations("racer-1", grant.id)).toHaveLength(2);
  });

  it("an idempotency key answers with the first invocation, without calling the tool again", async () => {
    const { credential } = await stripeSetup("idempotent");
    (await createGrant(credential.id, "idem-1", ["charges.read", "charges.create"])).ok();
    received.length = 0;
    const first = (await invoke("idem-1", "charges.read", { charge_id: "a" }, { idempotency_key: "k-1" })).ok();
    const again = (await invoke("idem-1", "charges.read", { charge_id: "a" }, { idempotency_key: "k-1" })).ok();
    expect(again.invocation_id).toBe(first.invocation_id);
    expect(received).toHaveLength(1);
    expectError(await invoke("idem-1", "charges.create", {}, { idempotency_key: "k-1" }), 422, "IDEMPOTENCY_KEY_REUSED");
  });

  it("a refused invocation writes nothing", async () => {
    const { credential } = await stripeSetup("nothing");
    const grant = (await createGrant(credential.id, "refused-1", ["charges.read"], { constraints: { max_invocations: 0 } })).ok();
    expectError(await invoke("refused-1", "charges.read"), 403, "GRANT_EXHAUSTED");
    expect(await invocations("refused-1", grant.id)).toEqual([]);
    expect((await getGrant(grant.id)).invocation_count).toBe(0);
  });

  it("suspend and resume; revoking the credential revokes its grants", async () => {
    const { credential } = await stripeSetup("lifecycle");
    const grant = (await createGrant(credential.id, "life-1", ["charges.read"])).ok();
    (await harness.api("grantsSuspend", { key: "operator", params: { grant_id: grant.id }, body: { reason: "audit" } })).ok();
    expectError(await invoke("life-1", "charges.read"), 403, "GRANT_SUSPENDED");
    (await harness.api("grantsResume", { key: "operator", params: { grant_id: grant.id }, body: {} })).ok();
    (await invoke("life-1", "charges.read")).ok();
    (await harness.api("credentialsRevoke", { key: "operator", params: { credential_id: credential.id } })).ok();
    expect((await getGrant(grant.id)).status).toBe("revoked");
    expect((await harness.api("credentialsGet", { ...USER, params: { credential_id: credential.id } })).ok()).toMatchObject({ status: "revoked", secret_fields: [] });
  });

  it("an agent invokes only as itself; admins and coordinators may act for it", async () => {
    const { credential } = await stripeSetup("acting");
    (await createGrant(credential.id, "acting-1", ["charges.read"])).ok();
    expectError(await invoke("acting-1", "charges.read", {}, {}, as("other", "someone-else")), 403, "FORBIDDEN");
    expectError(await invoke("acting-1", "charges.read", {}, {}, USER), 403, "FORBIDDEN");
    (await invoke("acting-1", "charges.read", {}, {}, as("coordinator", "coord"))).ok();
  });

  it("GET /tools/granted lists the usable tools of the acting agent", async () => {
    const { credential } = await stripeSetup("discovery");
    (await createGrant(credential.id, "disco-1", ["charges.read", "charges.create"])).ok();
    const granted = (await harness.api("toolsGranted", { ...as("agent", "disco-1") })).ok();
    expect(granted.agent_id).toBe("disco-1");
    expect(granted.tools.map((t) => t.tool).sort()).toEqual(["charges.create", "charges.read"]);
  });
});

describe("the tool proxy's outbound guard", () => {
  it("refuses a credential pointing at a private, metadata or non-listed loopback address: an error invocation, no connection", async () => {
    for (const [name, baseUrl] of [
      ["private", "http://10.1.2.3:8080"],
      ["metadata", "http://169.254.169.254"],
      ["loopback2", `http://127.0.0.2:${tool.port}`],
    ] as const) {
      const { credential } = await stripeSetup(`guard-${name}`, { base_url: baseUrl });
      (await createGrant(credential.id, `guarded-${name}`, ["charges.read"])).ok();
      const calls = wire.calls.length;
      const result = (await invoke(`guarded-${name}`, "charges.read")).ok();
      expect(result).toMatchObject({ status: "error", error: { code: "PROXY_ERROR", reason: "SSRF_BLOCKED" } });
      expect(wire.calls.length).toBe(calls);
    }
  });

  it("a tool that does not answer in time is an error invocation (the proxy's deadline)", async () => {
    const silent = await startLoopbackServer(() => {
      /* never answers */
    });
    try {
      const vault = (await harness.api("vaultsCreate", { ...USER, body: { owner_id: "user-1", name: "slow" } })).ok();
      const credential = (
        await harness.api("credentialsCreate", { ...USER, body: { vault_id: vault.id, service: "slow", label: "slow", auth_type: "bearer_token", secret: SECRET, metadata: { base_url: silent.url, timeout_ms: 300 } } })
      ).ok();
      (await createGrant(credential.id, "slow-1", ["slow"])).ok();
      const started = Date.now();
      const result = (await invoke("slow-1", "slow")).ok();
      expect(result).toMatchObject({ status: "error", error: { code: "PROXY_ERROR", reason: "DISPATCH_TIMEOUT" } });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(silent.requests[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    } finally {
      await silent.close();
    }
  });
});

describe("unknown ids and malformed bodies on the vault routes", () => {
  it("answer 404 with the resource's code, or 400, and write nothing", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    const before = await vaultFingerprint();
    const operator = { key: "operator" } as const;
    const notFound: [() => Promise<{ status: number; error(): { code: string; message: string; details: Record<string, unknown> } }>, string][] = [
      [() => harness.api("vaultsGet", { ...operator, params: { vault_id: unknown } }), "VAULT_NOT_FOUND"],
      [() => harness.api("vaultCredentialsList", { ...operator, params: { vault_id: unknown } }), "VAULT_NOT_FOUND"],
      [() => harness.api("vaultCredentialByName", { ...operator, params: { vault_id: unknown, credential_name: "x" } }), "VAULT_NOT_FOUND"],
      [() => harness.api("vaultCredentialsCreate", { ...operator, params: { vault_id: unknown }, body: { name: "x", credential_type: "api_key" } }), "VAULT_NOT_FOUND"],
      [() => harness.api("credentialsGet", { ...operator, params: { credential_id: unknown } }), "CREDENTIAL_NOT_FOUND"],
      [() => harness.api("credentialsRotate", { ...operator, params: { credential_id: unknown }, body: { secret: "x-secret" } }), "CREDENTIAL_NOT_FOUND"],
      [() => harness.api("credentialsRevoke", { ...operator, params: { credential_id: unknown } }), "CREDENTIAL_NOT_FOUND"],
      [() => harness.api("grantsCreate", { ...operator, body: { credential_id: unknown, agent_id: "a" } }), "CREDENTIAL_NOT_FOUND"],
      [() => harness.api("grantsGet", { ...operator, params: { grant_id: unknown } }), "GRANT_NOT_FOUND"],
      [() => harness.api("grantsRevoke", { ...operator, params: { grant_id: unknown } }), "GRANT_NOT_FOUND"],
      [() => harness.api("grantsSuspend", { ...operator, params: { grant_id: unknown }, body: {} }), "GRANT_NOT_FOUND"],
      [() => harness.api("grantsResume", { ...operator, params: { grant_id: unknown }, body: {} }), "GRANT_NOT_FOUND"],
      [() => harness.api("grantInvocationsList", { ...operator, params: { grant_id: unknown } }), "GRANT_NOT_FOUND"],
      [() => harness.api("invocationsRecord", { ...operator, body: { grant_id: unknown, service: "s", tool: "t", agent_id: "a" } }), "GRANT_NOT_FOUND"],
      [() => harness.api("toolsInvoke", { ...operator, body: { tool_name: "t", agent_id: "operator", grant_id: unknown } }), "GRANT_NOT_FOUND"],
      [() => harness.api("vaultsGet", { ...operator, params: { vault_id: "not-a-uuid" } }), "VAULT_NOT_FOUND"],
    ];
    for (const [call, code] of notFound) expectError(await call(), 404, code);
    const malformed: [() => Promise<{ status: number }>, string][] = [
      [() => harness.api("vaultsCreate", { ...operator, body: { name: "" } }), "vaults: empty name"],
      [() => harness.api("vaultsCreate", { ...operator, body: { name: "x", extra: 1 } }), "vaults: unknown field"],
      [() => harness.api("credentialsCreate", { ...operator, body: { vault_id: "nope", label: "x" } }), "credentials: vault_id not a uuid"],
      [() => harness.api("credentialsCreate", { ...operator, body: { label: "x" } }), "credentials: no vault_id"],
      [() => harness.api("grantsCreate", { ...operator, body: { credential_id: unknown, agent_id: "a b" } }), "grants: agent id with a space"],
      [() => harness.api("toolsInvoke", { ...operator, body: { agent_id: "a" } }), "tools/invoke: no tool_name"],
      [() => harness.api("toolsInvoke", { ...operator, body: { tool_name: "t", parameters: [] } }), "tools/invoke: parameters not an object"],
      [() => harness.api("identityRegister", { ...operator, params: { agent_id: "x" }, body: { public_key: "ed25519:short" } }), "identity: short key"],
      [() => harness.api("identityRegisterMcp", { ...operator, body: { agent_id: "x", public_key: "A".repeat(43), key_type: "rsa" } }), "identity/register: rsa"],
    ];
    for (const [call, what] of malformed) expect((await call()).status, what).toBe(400);
    expect(await vaultFingerprint()).toBe(before);
  });
});

async function vaultFingerprint(): Promise<string> {
  const tables = ["vaults", "credentials", "grants", "invocations", "identity_keys", "identity_challenges", "outbox"];
  const parts = [];
  for (const table of tables) parts.push(JSON.stringify(await harness.database.db.execute(`select count(*)::int as n from vault.${table}` as never)));
  return parts.join("|");
}
