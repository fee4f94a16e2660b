import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { parseAllowedNetworks, pinnedConnector } from "@intentmesh/ssrf";
import { startTracing, stopTracing } from "@intentmesh/telemetry";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { createIntent } from "../support/e2e-helpers";
import { readBody, startLoopbackServer, tripwire, type LoopbackServer } from "../../libs/ssrf/test/support";

/**
 * RFC-0014 §10.1 and the issue: no API answer, log line, event, trace attribute or error message
 * ever contains secret material. Secrets are planted in every way a client can hand one over
 * (metadata.api_key, `secret` as text and as named values, basic auth, a rotation, refused
 * requests that carry one), every flow runs (invoke with a tool that echoes the key, a failing
 * tool, a refused address, a timeout, record, list, rotate, revoke), and then every output is
 * searched for every spelling of every secret: each HTTP answer (body and headers), each log
 * line (debug level), each span (name, attributes, events), each row of every table of every
 * schema, and each message of every stream of the test's namespace.
 */

const SECRETS = {
  metadataKey: "sk_live_PLANTED_metadata_7f3a9c",
  bearer: "tok_PLANTED_bearer_5e2d8b1f",
  named: "named_PLANTED_value_91c4aa",
  password: "pw_PLANTED_basic_0d3e77",
  rotated: "sk_live_PLANTED_rotated_44b2",
  refused: "sk_live_PLANTED_refused_c0ffee",
};
/** Every way a secret may be spelled in an output: as is, base64, base64url, URL-encoded, and basic auth's user:password. */
function spellings(): string[] {
  const out = new Set<string>();
  for (const secret of Object.values(SECRETS)) {
    out.add(secret);
    out.add(Buffer.from(secret).toString("base64"));
    out.add(Buffer.from(secret).toString("base64url"));
    out.add(encodeURIComponent(secret));
  }
  out.add(Buffer.from(`svc-user:${SECRETS.password}`).toString("base64"));
  return [...out];
}

const lines: string[] = [];
const answers: string[] = [];
const exporter = new InMemorySpanExporter();
const wire = tripwire(pinnedConnector);
let cluster: TestCluster;
let tool: LoopbackServer;
let silent: LoopbackServer;

beforeAll(async () => {
  startTracing("vault-secrets-test", [new SimpleSpanProcessor(exporter)]);
  tool = await startLoopbackServer(async (req, res) => {
    const body = await readBody(req);
    const echo = { headers: req.headers, url: req.url, body };
    res.writeHead(req.url?.startsWith("/fail") ? 401 : 200, { "content-type": "application/json", "x-echo-auth": String(req.headers.authorization ?? "") });
    res.end(JSON.stringify(echo));
  });
  silent = await startLoopbackServer(() => {
    /* never answers */
  });
  cluster = await startTestCluster({
    logDestination: { write: (line) => void lines.push(line) },
    vault: { proxy: { outbound: { allowedNetworks: parseAllowedNetworks(["127.0.0.1/32"]), connect: wire.connect } } },
  });
});

afterAll(async () => {
  await cluster?.stop();
  await tool?.close();
  await silent?.close();
  await stopTracing();
});

async function call(path: string, init: { method?: string; body?: unknown; key?: keyof typeof TEST_KEYS; agent?: string } = {}) {
  const res = await fetch(`${cluster.baseUrl}/api/v1${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { "X-API-Key": TEST_KEYS[init.key ?? "operator"], "X-Agent-ID": init.agent ?? "owner-1", "Content-Type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${text}`);
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function everyRow(): Promise<string> {
  const db = new pg.Client({ connectionString: cluster.databaseUrl });
  await db.connect();
  try {
    const tables = await db.query<{ t: string }>(
      "select quote_ident(table_schema) || '.' || quote_ident(table_name) as t from information_schema.tables where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')",
    );
    const parts: string[] = [];
    for (const { t } of tables.rows) {
      const rows = await db.query<{ r: string }>(`select r::text as r from ${t} r`);
      parts.push(`${t}: ${rows.rows.map((row) => row.r).join("\n")}`);
    }
    expect(tables.rows.map((r) => r.t)).toEqual(expect.arrayContaining(["vault.credentials", "vault.outbox", "intents.events", "intents.outbox"]));
    return parts.join("\n");
  } finally {
    await db.end();
  }
}

async function everyStreamMessage(): Promise<string> {
  const parts: string[] = [];
  let count = 0;
  for await (const stream of cluster.bus.jsm.streams.list()) {
    if (!stream.config.name.startsWith(cluster.namespace.toUpperCase())) continue;
    for (let seq = stream.state.first_seq; seq <= stream.state.last_seq && stream.state.messages > 0; seq++) {
      const message = await cluster.bus.jsm.streams.getMessage(stream.config.name, { seq }).catch(() => null);
      if (!message) continue;
      count += 1;
      parts.push(`${message.subject} ${new TextDecoder().decode(message.data)} ${JSON.stringify(message.header ? [...message.header] : [])}`);
    }
  }
  expect(count).toBeGreaterThan(0);
  return parts.join("\n");
}

describe("secret material", () => {
  it("appears in no answer, log line, span, table row or stream message, whatever the flow", async () => {
    const vault = (await call("/vaults", { body: { owner_id: "owner-1", name: "planted" } })).body;
    const intent = await createIntent(cluster, { title: "secret-free audit" });
    // 1. metadata.api_key (the other implementation's convention), a tool that echoes everything.
    const byMetadata = (await call("/credentials", { body: { vault_id: vault.id, service: "echo", label: "echo-meta", metadata: { api_key: SECRETS.metadataKey, base_url: tool.url, auth: { location: "query", query_param: "key" } } } })).body;
    // 2. secret as text (bearer), 3. named values, 4. basic auth.
    const bearer = (await call(`/vaults/${vault.id}/credentials`, { body: { service: "echo", label: "echo-bearer", auth_type: "bearer_token", secret: SECRETS.bearer, metadata: { base_url: tool.url } } })).body;
    const named = (await call("/credentials", { body: { vault_id: vault.id, service: "echo", label: "echo-named", auth_type: "custom", secret: { secret: SECRETS.named }, metadata: { base_url: `${tool.url}/fail`, auth: { header_name: "X-Token" } } } })).body;
    const basic = (await call("/credentials", { body: { vault_id: vault.id, service: "echo", label: "echo-basic", auth_type: "basic_auth", secret: `svc-user:${SECRETS.password}`, metadata: { base_url: tool.url } } })).body;
    const blocked = (await call("/credentials", { body: { vault_id: vault.id, service: "echo", label: "echo-blocked", secret: SECRETS.metadataKey, metadata: { base_url: "http://10.9.8.7" } } })).body;
    const slow = (await call("/credentials", { body: { vault_id: vault.id, service: "echo", label: "echo-slow", auth_type: "bearer_token", secret: SECRETS.bearer, metadata: { base_url: silent.url, timeout_ms: 200 } } })).body;
    for (const credential of [byMetadata, bearer, named, basic, blocked, slow]) expect(credential.id, JSON.stringify(credential)).toBeDefined();

    // Refused requests that carry a secret: unknown field, wrong type, a secret too long, a bad vault.
    await call("/credentials", { body: { vault_id: vault.id, service: "x", label: "bad-1", secret: SECRETS.refused, surprise: SECRETS.refused } });
    await call("/credentials", { body: { vault_id: vault.id, service: "x", label: "bad-2", secret: { api_key: 7 }, metadata: { token: SECRETS.refused.length } } });
    await call("/credentials", { body: { vault_id: vault.id, service: "x", label: "bad-3", secret: SECRETS.refused.repeat(400) } });
    await call("/credentials", { body: { vault_id: "00000000-0000-4000-8000-000000000000", service: "x", label: "bad-4", secret: SECRETS.refused } });
    await call("/credentials", { body: { vault_id: vault.id, service: "x", label: "bad-5", secret: SECRETS.refused, metadata: { base_url: `ftp://${SECRETS.refused}@x` } } });
    await call("/credentials", { key: "agent", agent: "intruder", body: { vault_id: vault.id, service: "x", label: "bad-6", secret: SECRETS.refused } });

    for (const credential of [byMetadata, bearer, named, basic, blocked, slow]) {
      const grant = (await call("/grants", { body: { credential_id: credential.id, agent_id: "worker-1", scopes: [credential.label], context: { intent_id: intent.id } } })).body;
      expect(grant.id, JSON.stringify(grant)).toBeDefined();
      const invoked = await call("/tools/invoke", { key: "agent", agent: "worker-1", body: { tool_name: credential.label, agent_id: "worker-1", parameters: { q: "hello" }, grant_id: grant.id } });
      expect(invoked.status, JSON.stringify(invoked.body)).toBe(200);
      await call("/invocations", { key: "agent", agent: "worker-1", body: { grant_id: grant.id, service: "echo", tool: credential.label, agent_id: "worker-1", status: "success" } });
      await call(`/grants/${grant.id}/invocations`, { key: "agent", agent: "worker-1" });
      await call(`/grants/${grant.id}`, { key: "agent", agent: "worker-1" });
    }
    // The tool really received each secret: the searches below would find them had anything leaked.
    const seen = JSON.stringify(tool.requests.map((r) => ({ url: r.url, headers: r.headers })));
    expect(seen).toContain(encodeURIComponent(SECRETS.metadataKey));
    expect(seen).toContain(SECRETS.bearer);
    expect(seen).toContain(SECRETS.named);
    expect(seen).toContain(Buffer.from(`svc-user:${SECRETS.password}`).toString("base64"));
    expect(silent.requests.length).toBe(1);

    await call(`/credentials/${bearer.id}/rotate`, { method: "PATCH", body: { secret: SECRETS.rotated } });
    await call(`/credentials/${bearer.id}/rotate`, { method: "PATCH", body: { secret: 42 } });
    await call(`/credentials/${bearer.id}`);
    await call(`/vaults/${vault.id}/credentials`);
    await call(`/vaults/${vault.id}/credentials/echo-bearer`);
    await call(`/vaults/${vault.id}`);
    await call("/agents/worker-1/grants", { key: "agent", agent: "worker-1" });
    await call("/tools/granted?agent_id=worker-1", { key: "agent", agent: "worker-1" });
    await call(`/credentials/${named.id}`, { method: "DELETE" });
    await call(`/intents/${intent.id}/events?limit=1000`);
    await call(`/intents/${intent.id}/costs`);
    await new Promise((r) => setTimeout(r, 300));

    const outputs = {
      answers: answers.join("\n"),
      logs: lines.join("\n"),
      spans: JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status }))),
      database: await everyRow(),
      streams: await everyStreamMessage(),
    };
    expect(outputs.logs.length).toBeGreaterThan(0);
    expect(exporter.getFinishedSpans().length).toBeGreaterThan(0);
    // The audit trail is there, without the material.
    expect(outputs.database).toContain("tool.invoked");
    expect(outputs.streams).toContain("tool.invoked");
    for (const [where, text] of Object.entries(outputs)) {
      for (const spelling of spellings()) expect(text.includes(spelling), `${spelling} found in ${where}`).toBe(false);
    }
    expect(wire.tripped).toEqual([]);
  }, 60_000);
});
