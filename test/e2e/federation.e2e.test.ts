import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SystemEvent, systemEventStream } from "@intentmesh/contracts";
import { pinnedConnector } from "@intentmesh/ssrf";
import { createClient } from "@intentmesh/sdk";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { allEvents, expectError, expectRejected, uniqueTag } from "../support/e2e-helpers";
import { readStream } from "../support/service-process";
import { fakeResolver, tripwire } from "../../libs/ssrf/test/support";
import { RESOLVED_PROBES, URL_PROBES } from "../../libs/ssrf/test/probes";
import { ed25519PublicKey, rawFromMultibase } from "../../services/federation/src/identity";
import { contentDigest, signRequest } from "../../services/federation/src/signatures";
import { startFederationService } from "../../services/federation/src/service";
import { dispatch } from "../../services/federation/src/handlers/dispatch";
import { ManualClock } from "@intentmesh/contracts";
import { createLogger } from "@intentmesh/telemetry";

/**
 * Issue 16 point 5: two complete clusters (two gateways on loopback ports, separate databases
 * and bus namespaces) that federate. The loopback allowance is on in this file only (TEST-ONLY
 * setting); every outbound connect of both clusters goes through a tripwire that refuses any
 * address but loopback, and names resolve through a fake resolver (never DNS).
 */
const probeNames = Object.fromEntries(RESOLVED_PROBES.map(([address], i) => [`r${i}.probe.example.com`, [address]]));
const resolver = fakeResolver({ ...probeNames, "rebind.probe.example.com": ["127.0.0.1", "10.0.0.1"] });
const wire = tripwire(pinnedConnector);

const keyOfA = crypto.generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString();
const logsOfA: string[] = [];
const logsOfB: string[] = [];
let a: TestCluster; // the origin
let b: TestCluster; // the receiver
let silent: http.Server; // a peer that accepts connections and never answers
let silentUrl: string;
const hanging: http.ServerResponse[] = [];

async function systemEvents(cluster: TestCluster): Promise<SystemEvent[]> {
  return readStream(cluster.bus, cluster.bus.streamName(systemEventStream.name), (msg) => SystemEvent.parse(msg.json()));
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A well-formed envelope from A to B (unsigned: tests sign it or not as they need). */
function strangerEnvelope(intentId: string) {
  return {
    envelope_version: "1",
    dispatch_id: crypto.randomUUID(),
    idempotency_key: uniqueTag("env"),
    source_server: a.baseUrl,
    source_did: a.federation.ctx.identity.did,
    target_server: b.baseUrl,
    intent_id: intentId,
    intent_title: "from afar",
    intent_description: null,
    intent_state: {},
    constraints: {},
    agent_id: null,
    delegation_scope: { permissions: [], denied_operations: [], max_delegation_depth: 0 },
    governance: {},
    callback_url: `${a.baseUrl}/api/v1/federation/callbacks/${crypto.randomUUID()}`,
    trace_context: {},
    created_at: new Date().toISOString(),
  };
}

/**
 * The typed client with one attempt per call: a dispatch is a keyed write that the SDK would
 * replay after a 502 or a 409 with Retry-After, and these tests assert each answer and count the
 * attempts a peer sees.
 */
const sdk = (cluster: TestCluster, key: keyof typeof TEST_KEYS = "admin") => createClient({ baseUrl: cluster.baseUrl, apiKey: TEST_KEYS[key], retry: { attempts: 1 } });

async function createIntent(cluster: TestCluster, title = uniqueTag("fed")) {
  const res = await sdk(cluster).send("intentsCreate", { body: { title, description: "federated work", state: { step: 1 }, status: "active" } });
  expect(res.status).toBe(201);
  return res.data;
}

/** Registers an agent on a cluster (201). */
async function registerAgent(cluster: TestCluster, body: { agent_id: string; capabilities?: string[]; origin_server_url?: string; metadata?: Record<string, unknown> }) {
  expect((await sdk(cluster, "agent").send("agentsRegister", { body })).status).toBe(201);
}

/** A cluster's federation status: federation is on in these clusters, so it is the form with the identity and counters. */
async function enabledStatus(cluster: TestCluster) {
  const status = await sdk(cluster).ops.federationStatus();
  if (!status.enabled) throw new Error("expected federation on, the status says it is off");
  return status;
}

/** The number of envelopes a cluster has received. */
const receivedBy = async (cluster: TestCluster) => (await enabledStatus(cluster)).received;

beforeAll(async () => {
  const common = { allowLoopback: true, dispatchTimeoutMs: 1500, resolve: resolver.resolve, connect: wire.connect, trustPolicy: "allowlist" as const };
  // A's key is configured (as every replica would get it from a secret); B uses a development key.
  const capture = (into: string[]) => ({ write: (line: string) => void into.push(line) });
  [a, b] = await Promise.all([
    startTestCluster({ federation: { ...common, signingKeyPem: keyOfA }, logDestination: capture(logsOfA) }),
    startTestCluster({ federation: common, logDestination: capture(logsOfB) }),
  ]);
  // Each server holds the key the other gave it (role federation on the other's gateway; both test gateways know TEST_KEYS.federation).
  a.federation.ctx.settings.peers.push({ server_url: b.baseUrl, relationship: "downstream", api_key: TEST_KEYS.federation });
  b.federation.ctx.settings.peers.push({ server_url: a.baseUrl, relationship: "upstream", api_key: TEST_KEYS.federation });
  silent = http.createServer((_req, res) => void hanging.push(res));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  if (silent) {
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  }
  await Promise.all([a?.stop(), b?.stop()]);
});

afterEach(() => {
  // Every outbound connect of either cluster went to loopback, or the guard has a bug.
  expect(wire.tripped).toEqual([]);
});

describe("two federated clusters", () => {
  it("publish their identity: did.json verifies the server's signatures, the federation document names policy and peers", async () => {
    const didDoc = await a.api("/.well-known/did.json", { key: null });
    expect(didDoc.status).toBe(200);
    const did = `did:web:127.0.0.1%3A${new URL(a.baseUrl).port}`;
    expect(didDoc.body.id).toBe(did);
    const method = didDoc.body.verificationMethod[0];
    expect(method.id).toBe(`${did}#key-1`);
    expect(method.type).toBe("Ed25519VerificationKey2020");
    const key = ed25519PublicKey(rawFromMultibase(method.publicKeyMultibase)!);
    const message = Buffer.from("signed by cluster a");
    expect(crypto.verify(null, message, key, crypto.sign(null, message, a.federation.ctx.identity.privateKey))).toBe(true);
    expect(JSON.stringify(didDoc.body)).not.toContain("PRIVATE");

    const doc = await a.api("/.well-known/openintent-federation.json", { key: null });
    expect(doc.status).toBe(200);
    expect(doc.body).toMatchObject({ server_did: did, server_url: a.baseUrl, trust_policy: "allowlist", peers: [{ server_url: b.baseUrl, relationship: "downstream" }] });
    expect(doc.body.public_key).toBe(method.publicKeyMultibase);
    const discovery = await a.api("/.well-known/openintent.json", { key: null });
    expect(discovery.body.capabilities.federation).toMatchObject({ document: "/.well-known/openintent-federation.json", identity: "did:web" });
    expect(discovery.body.spec_parts).toContain("4.11");
  });

  it("dispatch: a signed envelope creates the intent on the peer, assigned to the agent; a retry with the key gets the same answer", async () => {
    const worker = uniqueTag("worker");
    await registerAgent(b, { agent_id: worker, capabilities: ["research"] });
    const intent = await createIntent(a);
    const key = uniqueTag("key");
    const body = { intent_id: intent.id, target_server: b.baseUrl, agent_id: worker, delegation_scope: { permissions: ["intent.read", "intent.update_state", "admin.delete"], max_delegation_depth: 3 }, federation_policy: { max_cost: 50 } };
    const first = await sdk(a).send("federationDispatch", { idempotency_key: key, body });
    expect(first.status).toBe(200);
    expect(first.data).toMatchObject({ status: "accepted", intent_id: intent.id, target_server: b.baseUrl, agent_id: worker, idempotency_key: key });
    const remoteId = first.data.remote_intent_id;
    const remote = await sdk(b).send("intentsGet", { intent_id: remoteId });
    expect(remote.status).toBe(200);
    expect(remote.data).toMatchObject({ title: expect.stringMatching(/^fed-/), description: "federated work", created_by: a.federation.ctx.identity.did, status: "active", state: { step: 1 } });
    const assigned = await sdk(b).ops.intentsListAgents({ intent_id: remoteId });
    expect(JSON.stringify(assigned)).toContain(worker);

    // The same key again, as a client whose answer was lost would send it: the stored answer, no second intent.
    const retry = await sdk(a).send("federationDispatch", { idempotency_key: key, body });
    expect(retry.status).toBe(200);
    expect(retry.data).toEqual(first.data);
    const received = await receivedBy(b);
    // Raw on purpose: the key in the body and no Idempotency-Key header (the typed client always sends the header).
    const again = await a.api("/federation/dispatch", { body: { ...body, idempotency_key: key } });
    expect(again.body.remote_intent_id).toBe(remoteId);
    expect(await receivedBy(b)).toBe(received);
    // The same key with another body is refused, not answered with the stored result.
    await expectRejected(sdk(a).ops.federationDispatch({ idempotency_key: key, body: { ...body, federation_policy: { max_cost: 1 } } }), 422, "IDEMPOTENCY_KEY_REUSED");

    // federation.dispatched on the origin's intent, federation.received on the peer's (system-event path).
    const dispatched = await until("federation.dispatched", async () => (await systemEvents(a)).find((e) => e.intent_id === intent.id && e.event_type === "federation.dispatched"));
    expect(dispatched).toMatchObject({ source: "federation", payload: { dispatch_id: first.data.dispatch_id, remote_intent_id: remoteId } });
    // Shared contract point 1: subject, message id and schema header of the system-event path.
    const raw = await readStream(a.bus, a.bus.streamName(systemEventStream.name), (msg) => ({ subject: msg.subject, id: msg.headers?.get("Nats-Msg-Id"), schema: msg.headers?.get("Im-Schema"), event: msg.json<SystemEvent>() }));
    const wireEvent = raw.find((m) => m.event.id === dispatched.id)!;
    expect(wireEvent.subject).toBe(a.bus.subject(`im.sys.intent.${intent.id}.federation.dispatched`));
    expect(wireEvent.id).toBe(`sys:federation:${dispatched.id}`);
    expect(wireEvent.schema).toBe("im.system-event/1");
    const receivedEvent = await until("federation.received", async () => (await systemEvents(b)).find((e) => e.intent_id === remoteId && e.event_type === "federation.received"));
    // Delegation narrowed (the peer's grant intersected, depth reduced) and governance composed.
    expect(receivedEvent.payload.delegation_scope).toEqual({ permissions: ["intent.read", "intent.update_state"], denied_operations: [], max_delegation_depth: 1 });
    expect(receivedEvent.payload.governance).toEqual({ max_cost: 50 });
    expect(receivedEvent.actor).toBe(a.federation.ctx.identity.did);

    // Callbacks: a state change and the completion on the peer come back signed to the origin's log.
    let version = remote.data.version; // read after the assignment
    const patched = await sdk(b).send("intentsPatchState", { intent_id: remoteId, ifMatch: version, body: [{ op: "set", path: "/result", value: "done" }] });
    expect(patched.status).toBe(200);
    version = patched.data.version;
    expect((await sdk(b).send("intentsTransition", { intent_id: remoteId, ifMatch: version, body: { status: "completed" } })).status).toBe(200);
    const completed = await until("federation.completed", async () => (await systemEvents(a)).find((e) => e.intent_id === intent.id && e.event_type === "federation.completed"));
    expect(completed.payload).toMatchObject({ dispatch_id: first.data.dispatch_id, callback_type: "completed", remote_intent_id: remoteId });
    const callbacks = (await systemEvents(a)).filter((e) => e.intent_id === intent.id && e.event_type === "federation.callback");
    expect(callbacks.map((e) => e.payload.callback_type).sort()).toEqual(["completed", "state_delta"]);
    // End to end: the intents service appended them to the origin intent's own log, under their ids.
    const logged = await until("federation events in the intent log", async () => {
      const list = (await allEvents(a, intent.id)).filter((e) => e.event_type.startsWith("federation."));
      return list.length >= 4 ? list : undefined;
    });
    expect(logged.map((e) => e.event_type)).toEqual(expect.arrayContaining(["federation.dispatched", "federation.callback", "federation.completed"]));
    expect(logged.find((e) => e.event_type === "federation.dispatched")!.id).toBe(dispatched.id);
    expect((await enabledStatus(b)).callbacks).toMatchObject({ pending: 0, delivered: 2 });
    // The status carries the names the official clients read.
    expect(await sdk(a).ops.federationStatus()).toMatchObject({ enabled: true, server_did: a.federation.ctx.identity.did, trust_policy: "allowlist", peer_count: 1, active_dispatches: 0 });
    // callback_url (sent by the official clients) is accepted but must pass the guard like any outbound address.
    const probe = await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: b.baseUrl, callback_url: "http://[fd00:ec2::254]/latest" } }), 400, "SSRF_BLOCKED");
    expect(probe.details).toMatchObject({ field: "callback_url", refused_class: "metadata" });
  });

  it("calls back budget warnings and failure: federation.budget_warning and federation.failed on the origin's log", async () => {
    const worker = uniqueTag("worker");
    await registerAgent(b, { agent_id: worker });
    // The budget travels in the envelope's constraints, so the peer's intent has the same one.
    const created = await sdk(a).send("intentsCreate", { body: { title: uniqueTag("budget"), status: "active", constraints: { budget: { max_total_cents: 1000, alert_threshold_percent: 80 } } } });
    expect(created.status).toBe(201);
    const sent = await sdk(a).send("federationDispatch", { body: { intent_id: created.data.id, target_server: b.baseUrl, agent_id: worker } });
    expect(sent.status).toBe(200);
    const remoteId = sent.data.remote_intent_id;
    expect((await sdk(b).send("costsRecord", { intent_id: remoteId, body: { agent_id: worker, cost_type: "api_call", amount: 800, unit: "cents" } })).status).toBe(201);
    const warning = await until("federation.budget_warning", async () => (await systemEvents(a)).find((e) => e.intent_id === created.data.id && e.event_type === "federation.budget_warning"));
    expect(warning.payload).toMatchObject({ callback_type: "budget_warning", remote_intent_id: remoteId, remote_event: { event_type: "budget_alert" } });

    const remote = await sdk(b).ops.intentsGet({ intent_id: remoteId });
    expect((await sdk(b).send("intentsTransition", { intent_id: remoteId, ifMatch: remote.version, body: { status: "abandoned", reason: "cannot be done" } })).status).toBe(200);
    const failed = await until("federation.failed", async () =>
      (await systemEvents(a)).find((e) => e.intent_id === created.data.id && e.event_type === "federation.failed" && e.payload.callback_type === "failed"),
    );
    expect(failed.payload).toMatchObject({ dispatch_id: sent.data.dispatch_id, remote_event: { event_type: "status_changed", payload: { to: "abandoned" } } });
  });

  it("a receive with a forged, tampered or replayed signature is 401 SIGNATURE_INVALID and creates nothing", async () => {
    const intent = await createIntent(a);
    const identity = a.federation.ctx.identity;
    const envelope = { ...strangerEnvelope(intent.id), idempotency_key: uniqueTag("forged"), intent_title: "forged" };
    const text = JSON.stringify(envelope);
    const targetUri = `${b.baseUrl}/api/v1/federation/receive`;
    const post = (headers: Record<string, string>, body = text) => b.api("/api/v1/federation/receive", { rawBody: body, headers, key: "federation" });
    const before = await receivedBy(b);

    // Signed with another key under A's key id.
    const forger = crypto.generateKeyPairSync("ed25519").privateKey;
    const forged = signRequest({ method: "POST", targetUri, body: text, idempotencyKey: envelope.idempotency_key }, { keyId: identity.keyId, privateKey: forger }, Date.now());
    const res = await post(forged);
    expectError(res, 401, "SIGNATURE_INVALID");
    expect(res.body.message).toContain("does not verify");

    // A's real key, but the body changed after signing (the digest no longer matches).
    const genuine = signRequest({ method: "POST", targetUri, body: text, idempotencyKey: envelope.idempotency_key }, identity, Date.now());
    expectError(await post(genuine, text.replace("forged", "changed")), 401, "SIGNATURE_INVALID");
    // …or the digest recomputed for the new body: the signature covers the digest.
    const changed = text.replace("forged", "changed");
    expectError(await post({ ...genuine, "content-digest": contentDigest(changed) }, changed), 401, "SIGNATURE_INVALID");
    // Signed for another endpoint (the target URI is covered).
    const elsewhere = signRequest({ method: "POST", targetUri: `${a.baseUrl}/api/v1/federation/receive`, body: text, idempotencyKey: envelope.idempotency_key }, identity, Date.now());
    expectError(await post(elsewhere), 401, "SIGNATURE_INVALID");
    // Too old.
    expectError(await post(signRequest({ method: "POST", targetUri, body: text, idempotencyKey: envelope.idempotency_key }, identity, Date.now() - 10 * 60_000)), 401, "SIGNATURE_INVALID");
    // No signature at all.
    expectError(await post({ "content-type": "application/json" }), 401, "SIGNATURE_INVALID");

    // The genuine request is accepted once; the same bytes again are a replay.
    const accepted = await post(genuine);
    expect(accepted.status).toBe(200);
    const replay = await post(genuine);
    expectError(replay, 401, "SIGNATURE_INVALID");
    expect(replay.body.message).toContain("replay");
    expect(await receivedBy(b)).toBe(before + 1);
  });

  it("refuses loops: a dispatch to this server or to a local agent, and a receive for an agent that is itself federated", async () => {
    const intent = await createIntent(a);
    await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: a.baseUrl } }), 409, "FEDERATION_LOOP");
    const local = uniqueTag("local");
    await registerAgent(a, { agent_id: local });
    await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: b.baseUrl, agent_id: local } }), 409, "FEDERATION_LOOP");
    // On B, an agent registered with origin_server_url is a federated agent: B does not forward to it.
    const proxy = uniqueTag("proxy");
    await registerAgent(b, { agent_id: proxy, origin_server_url: `${a.baseUrl}/` });
    const res = await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: b.baseUrl, agent_id: proxy } }), 502, "DISPATCH_FAILED");
    expect(res.details).toMatchObject({ remote_status: 409, remote_error: { code: "FEDERATION_LOOP" } });
  });

  it("applies the trust policy: under allowlist a server that is not a peer is refused", async () => {
    const peers = b.federation.ctx.settings.peers;
    const saved = peers.splice(0, peers.length);
    try {
      const intent = await createIntent(a);
      const res = await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: b.baseUrl } }), 502, "DISPATCH_FAILED");
      expect(res.details).toMatchObject({ remote_status: 403, remote_error: { code: "UNTRUSTED_SERVER" } });
      // A stranger's claim is refused before anything is fetched for it (no lookup of its name).
      const stranger = { envelope_version: "1", source_server: "https://stranger.example.com", source_did: "did:web:stranger.example.com" };
      const claim = await b.api("/api/v1/federation/receive", { body: { ...strangerEnvelope(intent.id), ...stranger }, key: "federation" });
      expectError(claim, 403, "UNTRUSTED_SERVER");
      expect(resolver.lookups).not.toContain("stranger.example.com");

      b.federation.ctx.settings.trustPolicy = "trustless";
      const trustless = await sdk(a).send("federationDispatch", { body: { intent_id: intent.id, target_server: b.baseUrl, delegation_scope: { permissions: ["intent.read", "task.create"], max_delegation_depth: 5 } } });
      expect(trustless.status).toBe(200);
      const narrowed = await until("federation.received", async () => (await systemEvents(b)).find((e) => e.intent_id === trustless.data.remote_intent_id && e.event_type === "federation.received"));
      // A non-peer under trustless gets only the minimal grant (read and state updates, depth 1), narrowed further.
      expect(narrowed.payload).toMatchObject({ trust_policy: "trustless", delegation_scope: { permissions: ["intent.read"], denied_operations: [], max_delegation_depth: 0 } });

      b.federation.ctx.settings.trustPolicy = "open";
      const open = await sdk(a).send("federationDispatch", { body: { intent_id: intent.id, target_server: b.baseUrl, delegation_scope: { permissions: ["intent.read", "task.create"], max_delegation_depth: 5 } } });
      expect(open.status).toBe(200);
      const granted = await until("federation.received", async () => (await systemEvents(b)).find((e) => e.intent_id === open.data.remote_intent_id && e.event_type === "federation.received"));
      expect(granted.payload.delegation_scope).toEqual({ permissions: ["intent.read", "task.create"], denied_operations: [], max_delegation_depth: 1 });
    } finally {
      peers.push(...saved);
      b.federation.ctx.settings.trustPolicy = "allowlist";
    }
  });

  it("answers 502 DISPATCH_TIMEOUT when the peer never answers, within the deadline, and records federation.failed", async () => {
    const intent = await createIntent(a);
    const started = Date.now();
    const res = sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: silentUrl } });
    await expectRejected(res, 502, "DISPATCH_TIMEOUT");
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1400);
    expect(elapsed).toBeLessThan(5000);
    expect(hanging.length).toBeGreaterThan(0);
    const failed = await until("federation.failed", async () => (await systemEvents(a)).find((e) => e.intent_id === intent.id && e.event_type === "federation.failed"));
    expect(failed.payload).toMatchObject({ stage: "dispatch", code: "DISPATCH_TIMEOUT" });
  });

  it("a peer still receiving an earlier attempt (409 DISPATCH_IN_PROGRESS) is 409 with Retry-After, records no failure, and the retry gets the peer's answer", async () => {
    const keysSeen: Array<string | undefined> = [];
    const remoteIntentId = crypto.randomUUID();
    const busy = http.createServer((req, res) => {
      keysSeen.push(req.headers["idempotency-key"] as string | undefined);
      req.resume();
      req.on("end", () => {
        res.setHeader("Content-Type", "application/json");
        if (keysSeen.length === 1) {
          res.statusCode = 409;
          res.end(JSON.stringify({ code: "DISPATCH_IN_PROGRESS", message: "being received", details: {} }));
        } else {
          res.end(JSON.stringify({ accepted: true, local_intent_id: remoteIntentId }));
        }
      });
    });
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    try {
      const busyUrl = `http://127.0.0.1:${(busy.address() as AddressInfo).port}`;
      const intent = await createIntent(a);
      const key = uniqueTag("busy-peer");
      const body = { intent_id: intent.id, target_server: busyUrl };
      // Raw on purpose: the Retry-After header of an error answer is a wire detail the typed client hides.
      const first = await a.api("/federation/dispatch", { body, headers: { "Idempotency-Key": key } });
      expectError(first, 409, "DISPATCH_IN_PROGRESS");
      expect(first.headers.get("retry-after")).toBe("1");
      const retry = await sdk(a).send("federationDispatch", { idempotency_key: key, body });
      expect(retry.status).toBe(200);
      expect(retry.data).toMatchObject({ status: "accepted", remote_intent_id: remoteIntentId, idempotency_key: key });
      expect(keysSeen).toEqual([key, key]);
      const dispatched = await until("federation.dispatched", async () => (await systemEvents(a)).find((e) => e.intent_id === intent.id && e.event_type === "federation.dispatched"));
      expect(dispatched.payload.remote_intent_id).toBe(remoteIntentId);
      expect((await systemEvents(a)).filter((e) => e.intent_id === intent.id && e.event_type === "federation.failed")).toEqual([]);
    } finally {
      busy.closeAllConnections();
      await new Promise((r) => busy.close(r));
    }
  });

  it("the SSRF guard refuses every probe class through the dispatch route and origin_server_url at registration (loopback allowance off)", async () => {
    const intent = await createIntent(a);
    const ctx = a.federation.ctx;
    const savedOutbound = ctx.outbound;
    ctx.settings.allowLoopback = false;
    ctx.outbound = { ...savedOutbound, allowLoopback: false };
    a.registry.ctx.outboundPolicy = {};
    const before = wire.calls.length;
    try {
      for (const [url, refusedClass] of URL_PROBES) {
        const res = await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: url } }), 400, "SSRF_BLOCKED");
        expect(res.details.refused_class, url).toBe(refusedClass);
        const reg = sdk(a, "agent").ops.agentsRegister({ body: { agent_id: uniqueTag("probe"), origin_server_url: url } });
        if (refusedClass === "scheme" || refusedClass === "invalid_url") {
          // The contract's URL check answers first for what is not an http(s) URL at all.
          await expect(reg, url).rejects.toMatchObject({ status: 400 });
        } else {
          const refused = await expectRejected(reg, 400, "SSRF_BLOCKED");
          expect(refused.details.refused_class, url).toBe(refusedClass);
        }

      }
      // Names whose resolver answers are refused, in every class; https so the scheme rule does not answer first.
      for (const [i, [address, refusedClass]] of RESOLVED_PROBES.entries()) {
        const res = await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: `https://r${i}.probe.example.com` } }), 400, "SSRF_BLOCKED");
        expect(res.details.refused_class, address).toBe(refusedClass);
      }
      // DNS rebinding: one refused answer among several refuses the call.
      await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: "https://rebind.probe.example.com" } }), 400, "SSRF_BLOCKED");
      // Plain http to a public name is refused without the test-only allowance.
      await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: "http://peer.example.com" } }), 400, "SSRF_BLOCKED");
      // No refused probe ever reached the connect step.
      expect(wire.calls.length).toBe(before);
    } finally {
      ctx.settings.allowLoopback = true;
      ctx.outbound = savedOutbound;
      a.registry.ctx.outboundPolicy = { allowLoopback: true };
    }
  });

  it("lists local agents by federation visibility, and a private agent cannot be dispatched to", async () => {
    const tag = uniqueTag("vis");
    for (const visibility of ["public", "unlisted", "private"]) {
      await registerAgent(b, { agent_id: `${tag}-${visibility}`, metadata: { federation_visibility: visibility } });
    }
    await registerAgent(b, { agent_id: `${tag}-federated`, origin_server_url: a.baseUrl });
    const listed = async (visibility?: string) =>
      (await sdk(b).ops.federationAgents({ query: { limit: 100, visibility } })).agents.filter((x) => x.agent_id.startsWith(tag));
    expect(await listed()).toEqual([expect.objectContaining({ agent_id: `${tag}-public`, visibility: "public" })]);
    expect((await listed("unlisted,private")).map((x) => x.agent_id).sort()).toEqual([`${tag}-private`, `${tag}-unlisted`]);
    await expectRejected(sdk(b).ops.federationAgents({ query: { visibility: "everyone" } }), 400, "VALIDATION_FAILED");
    const intent = await createIntent(a);
    const res = await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: b.baseUrl, agent_id: `${tag}-private` } }), 502, "DISPATCH_FAILED");
    expect(res.details).toMatchObject({ remote_status: 404 });
    expect((await sdk(a).send("federationDispatch", { body: { intent_id: intent.id, target_server: b.baseUrl, agent_id: `${tag}-unlisted` } })).status).toBe(200);
  });

  it("refuses a received body over the federation limit with 413, before reading it whole", async () => {
    const res = await b.api("/api/v1/federation/receive", { rawBody: JSON.stringify({ x: "y".repeat(300 * 1024) }), headers: { "content-type": "application/json" }, key: "federation" });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("PAYLOAD_TOO_LARGE");
  });

  it("receive and callbacks ask for a peer's key first (SPEC 5.1): 401 without or with a bad key, 403 for another role; then the signature", async () => {
    const intent = await createIntent(a);
    const envelope = { ...strangerEnvelope(intent.id), idempotency_key: uniqueTag("keyed") };
    const text = JSON.stringify(envelope);
    const signed = signRequest({ method: "POST", targetUri: `${b.baseUrl}/api/v1/federation/receive`, body: text, idempotencyKey: envelope.idempotency_key }, a.federation.ctx.identity, Date.now());
    const post = (key: keyof typeof TEST_KEYS | null, headers: Record<string, string> = signed, body = text) => b.api("/api/v1/federation/receive", { rawBody: body, headers, key });
    const before = await receivedBy(b);
    // A genuinely signed envelope without a key, with an unknown key, with a key of a person: refused before anything is read.
    expectError(await post(null), 401, "UNAUTHORIZED");
    const bad = await b.api("/api/v1/federation/receive", { rawBody: text, headers: { ...signed, "X-API-Key": "not-a-key-of-this-server" }, key: null });
    expectError(bad, 401, "UNAUTHORIZED");
    for (const key of ["admin", "agent"] as const) {
      const res = await post(key);
      expectError(res, 403, "FORBIDDEN");
      expect(res.body.details).toMatchObject({ required_roles: ["federation"] });
    }
    // The key comes before the body: an oversized body without one is a 401, not a 413.
    expectError(await post(null, { "content-type": "application/json" }, JSON.stringify({ x: "y".repeat(300 * 1024) })), 401, "UNAUTHORIZED");
    expect(await receivedBy(b)).toBe(before);
    // With the peer's key the signature is checked next: a missing one is 401 SIGNATURE_INVALID; the signed request is accepted once.
    expectError(await post("federation", { "content-type": "application/json" }), 401, "SIGNATURE_INVALID");
    const accepted = await post("federation");
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(await receivedBy(b)).toBe(before + 1);
    // Callbacks alike: the key first, then the dispatch and its signature.
    const callback = (key: keyof typeof TEST_KEYS | null) => a.api(`/api/v1/federation/callbacks/${crypto.randomUUID()}`, { body: {}, key });
    expectError(await callback(null), 401, "UNAUTHORIZED");
    expectError(await callback("operator"), 403, "FORBIDDEN");
    expectError(await callback("federation"), 404, "DISPATCH_NOT_FOUND");
  });

  it("sends the key a peer gave it with every dispatch (FEDERATION_PEERS api_key); without one the peer's gateway refuses it", async () => {
    const peer = a.federation.ctx.settings.peers.find((p) => p.server_url === b.baseUrl)!;
    const saved = peer.api_key;
    delete peer.api_key;
    try {
      const intent = await createIntent(a);
      const res = await expectRejected(sdk(a).ops.federationDispatch({ body: { intent_id: intent.id, target_server: b.baseUrl } }), 502, "DISPATCH_FAILED");
      expect(res.details).toMatchObject({ remote_status: 401, remote_error: { code: "UNAUTHORIZED" } });
      // The refusal names no key (none was sent, and none is ever repeated).
      expect(JSON.stringify(res.body)).not.toContain(TEST_KEYS.federation);
    } finally {
      peer.api_key = saved;
    }
    const intent = await createIntent(a);
    expect((await sdk(a).send("federationDispatch", { body: { intent_id: intent.id, target_server: b.baseUrl } })).status).toBe(200);
  });

  it("keeps idempotency and identity across a restart and another replica, and loses no callback while the origin is down", async () => {
    const worker = uniqueTag("worker");
    await registerAgent(b, { agent_id: worker });
    const intent = await createIntent(a);
    const key = uniqueTag("restart");
    const body = { intent_id: intent.id, target_server: b.baseUrl, agent_id: worker };
    const first = await sdk(a).send("federationDispatch", { idempotency_key: key, body });
    expect(first.status).toBe(200);
    const didBefore = (await a.api("/.well-known/did.json", { key: null })).body;

    // The origin's federation service goes away (a crash or a rolling restart): B's callbacks wait in its table.
    await a.federation.stop();
    const remoteId = first.data.remote_intent_id;
    const remote = await sdk(b).ops.intentsGet({ intent_id: remoteId });
    expect((await sdk(b).send("intentsPatchState", { intent_id: remoteId, ifMatch: remote.version, body: [{ op: "set", path: "/progress", value: 50 }] })).status).toBe(200);
    await until("a failed callback attempt", async () => ((await enabledStatus(b)).callbacks.pending > 0 && (await b.federation.callbacks.sweep()) === 0 ? true : undefined));

    // A new process with the same configuration and database: same did:web, same key, same stored answers.
    const restarted = await startFederationService({
      bus: a.bus,
      database: a.database,
      logger: createLogger("test", "silent"),
      clock: a.clock,
      settings: { ...a.federation.ctx.settings },
      key: { pem: keyOfA, dataDir: "/nonexistent" },
      connect: wire.connect,
      callbackIntervalMs: 200,
    });
    a.federation = restarted;
    expect((await a.api("/.well-known/did.json", { key: null })).body).toEqual(didBefore);
    const retry = await sdk(a).send("federationDispatch", { idempotency_key: key, body });
    expect(retry.status).toBe(200);
    expect(retry.data).toEqual(first.data);
    // A second replica on the same database answers the retry from the stored row too.
    const replica = await startFederationService({
      bus: a.bus,
      database: a.database,
      logger: createLogger("test", "silent"),
      clock: a.clock,
      settings: { ...a.federation.ctx.settings },
      key: { pem: keyOfA, dataDir: "/nonexistent" },
      connect: wire.connect,
    });
    try {
      const answer = await dispatch(replica.ctx, body, key, { principal: "admin", roles: ["admin"], actor: "admin", agent_id: null });
      expect(answer).toEqual(first.data);
    } finally {
      await replica.stop();
    }

    // The callback held back while A was down is delivered on a later attempt.
    (b.clock as ManualClock).advance(5_000);
    const callback = await until("the delayed callback", async () => {
      await b.federation.callbacks.sweep();
      return (await systemEvents(a)).find((e) => e.intent_id === intent.id && e.event_type === "federation.callback");
    });
    expect(callback.payload).toMatchObject({ callback_type: "state_delta", remote_intent_id: remoteId });
    expect((callback.payload.remote_event as { payload: unknown }).payload).toMatchObject({ patches: [{ op: "set", path: "/progress", value: 50 }] });
  });

  it("sends one dispatch per key at a time, re-sends after a failure, and takes over a dispatch a crashed process left", async () => {
    const intent = await createIntent(a);
    const key = uniqueTag("concurrent");
    const body = { intent_id: intent.id, target_server: silentUrl };
    const send = () => sdk(a).ops.federationDispatch({ idempotency_key: key, body });
    await Promise.all([
      expectRejected(send(), 502, "DISPATCH_TIMEOUT"),
      new Promise((r) => setTimeout(r, 200)).then(() => expectRejected(send(), 409, "DISPATCH_IN_PROGRESS")),
    ]);
    // After the failure, the same key sends again (attempt 2), with the same dispatch id.
    await expectRejected(send(), 502, "DISPATCH_TIMEOUT");
    const failures = await until("two federation.failed", async () => {
      const found = (await systemEvents(a)).filter((e) => e.intent_id === intent.id && e.event_type === "federation.failed");
      return found.length === 2 ? found : undefined;
    });
    expect(failures.map((e) => e.payload.attempt)).toEqual([1, 2]);
    expect(new Set(failures.map((e) => e.payload.dispatch_id)).size).toBe(1);

    // A row a crashed process left "sending" is taken over once its claim is older than the deadline.
    const worker = uniqueTag("worker");
    await registerAgent(b, { agent_id: worker });
    const stuckKey = uniqueTag("stuck");
    const stuckBody = { intent_id: intent.id, target_server: b.baseUrl, agent_id: worker };
    const sendStuck = () => sdk(a).ops.federationDispatch({ idempotency_key: stuckKey, body: { ...stuckBody, target_server: silentUrl } });
    expect((await expectRejected(sendStuck(), 502, "DISPATCH_TIMEOUT")).status).toBe(502);
    await a.database.query("stuck_dispatch", "update federation.dispatches set status = 'sending', claimed_at = $1 where idempotency_key = $2", [a.clock.now(), stuckKey]);
    await expectRejected(sendStuck(), 409, "DISPATCH_IN_PROGRESS");
    (a.clock as ManualClock).advance(1500 + 5001);
    await expectRejected(sendStuck(), 502, "DISPATCH_TIMEOUT");

  });

  it("never writes a signing key to a log line", () => {
    expect(logsOfA.length).toBeGreaterThan(0);
    expect(logsOfB.length).toBeGreaterThan(0);
    for (const [logs, cluster] of [[logsOfA, a], [logsOfB, b]] as const) {
      const key = cluster.federation.ctx.identity.privateKey;
      const pemBody = key.export({ format: "pem", type: "pkcs8" }).toString().split("\n").slice(1, -2).join("");
      const d = key.export({ format: "jwk" }).d!;
      const all = logs.join("\n");
      expect(all).not.toContain(pemBody);
      expect(all).not.toContain(d);
      expect(all).not.toContain(Buffer.from(d, "base64url").toString("base64"));
      // Nor the key a peer gave it (FEDERATION_PEERS api_key), sent with every envelope and callback.
      expect(all).not.toContain(TEST_KEYS.federation);
    }
    // B runs on a development key and says so; the loopback allowance announces itself.
    expect(logsOfB.join("\n")).toContain("using a development key");
    expect(logsOfA.join("\n")).not.toContain("using a development key");
    expect(logsOfA.join("\n")).toContain("TEST-ONLY");
  });
});
