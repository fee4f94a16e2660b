import crypto from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ManualClock, streams } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { agentHeaders } from "../support/agents";
import { readStream } from "../support/service-process";
import { allEvents, createIntent, expectError, expectRejected, UNKNOWN_ID } from "../support/e2e-helpers";
import type { Intentmesh } from "@intentmesh/sdk";

/**
 * Issue 25, RFC 0019 verifiable event logs, through the gateway as the Python client calls it
 * (CLIENTS.md section 7). Everything this file checks about hashes, Merkle trees and signatures
 * it checks with its own implementation below, written from the RFC: nothing of the server's
 * code is imported, so a server bug shared by writer and verifier cannot hide.
 */

// ---------------------------------------------------------------------------------------------
// An independent verifier, from RFC 0019 (and RFC 8785 for canonical JSON) alone.
// ---------------------------------------------------------------------------------------------

/** RFC 8785: sorted keys (UTF-16 code units), no whitespace, ECMAScript numbers and strings. */
function jcs(value: unknown): string {
  if (Array.isArray(value)) return "[" + value.map(jcs).join(",") + "]";
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return "{" + entries.map(([k, v]) => JSON.stringify(k) + ":" + jcs(v)).join(",") + "}";
  }
  return JSON.stringify(value);
}

const sha256 = (...parts: Buffer[]) => crypto.createHash("sha256").update(Buffer.concat(parts)).digest();
const tag = (digest: Buffer) => "sha256:" + digest.toString("base64url");
const untag = (value: string) => Buffer.from(value.replace(/^sha256:/, ""), "base64url");

/** RFC 0019 1.3: SHA-256 over the canonical JSON of every field but event_hash. */
function rfcEventHash(event: Record<string, unknown>): string {
  const { event_hash: _omitted, ...rest } = event;
  return tag(sha256(Buffer.from(jcs(rest), "utf8")));
}

/** RFC 0019 2.2 over a whole log: the sequence of the first event that fails a check, or null. */
function firstBreak(events: Record<string, any>[]): number | null {
  let previous: string | null = null;
  for (const [i, event] of events.entries()) {
    if (event.sequence !== i + 1) return i + 1;
    if (event.previous_event_hash !== previous) return event.sequence;
    if (rfcEventHash(event) !== event.event_hash) return event.sequence;
    previous = event.event_hash;
  }
  return null;
}

/** RFC 0019 3.4: leaves padded to a power of two with the last leaf, parent = SHA-256(left || right). */
function rfcMerkleRoot(hashes: string[]): string {
  let level: Buffer[] = hashes.map(untag);
  let width = 1;
  while (width < level.length) width *= 2;
  while (level.length < width) level.push(level[level.length - 1]!);
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(sha256(level[i]!, level[i + 1]!));
    level = next;
  }
  return tag(level[0]!);
}

/** RFC 0019 4.2. */
function rfcProofHolds(proof: { event_hash: string; merkle_root: string; proof_hashes: { hash: string; position: string }[] }): boolean {
  let current = untag(proof.event_hash);
  for (const entry of proof.proof_hashes) current = entry.position === "left" ? sha256(untag(entry.hash), current) : sha256(current, untag(entry.hash));
  return tag(current) === proof.merkle_root;
}

/**
 * The Python client's MerkleProof.verify() (openintent/models.py, v0.17), line for line: strip
 * "sha256:", urlsafe_b64decode(raw + "=="), "left" hashes sibling + current and anything else
 * current + sibling, and compare "sha256:" + urlsafe_b64encode(current).rstrip("=").
 */
function pythonMerkleProofVerify(proof: { event_hash: string; merkle_root: string; proof_hashes: { hash?: string; position?: string }[] }): boolean {
  const b64decode = (raw: string) => Buffer.from((raw + "==").replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, ""), "base64");
  let raw = proof.event_hash;
  if (raw.startsWith("sha256:")) raw = raw.slice(7);
  let current = b64decode(raw);
  for (const entry of proof.proof_hashes) {
    let siblingRaw = entry.hash ?? "";
    if (siblingRaw.startsWith("sha256:")) siblingRaw = siblingRaw.slice(7);
    const sibling = b64decode(siblingRaw);
    current = (entry.position ?? "left") === "left" ? sha256(sibling, current) : sha256(current, sibling);
  }
  const computed = "sha256:" + current.toString("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return computed === proof.merkle_root;
}

/** did:key of an Ed25519 key (multicodec 0xed01, base58btc "z") to the key itself. */
function keyOfDidKey(did: string): crypto.KeyObject {
  const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  expect(did).toMatch(/^did:key:z6Mk/);
  let n = 0n;
  for (const c of did.slice("did:key:z".length)) n = n * 58n + BigInt(alphabet.indexOf(c));
  const bytes = Buffer.from(n.toString(16).padStart(68, "0"), "hex");
  expect([...bytes.subarray(0, 2)]).toEqual([0xed, 0x01]);
  return crypto.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: bytes.subarray(2).toString("base64url") }, format: "jwk" });
}

/** RFC 0019 3.3: Ed25519 over the canonical JSON of all fields but signature (anchor as it was signed: null). */
function signatureHolds(checkpoint: Record<string, any>): boolean {
  const { signature, ...signed } = checkpoint;
  return crypto.verify(null, Buffer.from(jcs({ ...signed, anchor: null }), "utf8"), keyOfDidKey(checkpoint.signed_by), Buffer.from(signature, "base64url"));
}

// ---------------------------------------------------------------------------------------------

const SIGNING_KEY = crypto.generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString();
const clock = new ManualClock(new Date("2026-03-01T10:00:00.000Z"));
let cluster: TestCluster;
let db: pg.Client;
/** The typed client with the admin key. */
let admin: Intentmesh;

beforeAll(async () => {
  // Federation on with a configured key: the did.json it publishes names the key checkpoints are signed with.
  cluster = await startTestCluster({ clock, federation: { signingKeyPem: SIGNING_KEY }, checkpoints: { batchEvents: 5, maxAgeMs: 60_000 } });
  admin = cluster.sdk();
  db = new pg.Client({ connectionString: cluster.databaseUrl });
  await db.connect();
}, 60_000);
afterAll(async () => {
  await db?.end();
  await cluster?.stop();
});

/** The Python client's session (X-API-Key, X-Agent-ID, Content-Type with a body) on every request, on the typed client. */
const py = (key: keyof typeof TEST_KEYS = "admin") => cluster.sdk(key, "py-client");

const append = (intentId: string, payload: Record<string, unknown>, eventType = "comment") =>
  admin.send("intentsAppendEvent", { intent_id: intentId, body: { event_type: eventType, payload } });

async function appendMany(intentId: string, n: number) {
  for (let i = 0; i < n; i++) expect((await append(intentId, { i })).status).toBe(201);
}

const checkpoint = async (intentId: string) => {
  const res = await py().send("checkpointsCreate", { body: { intent_id: intentId, scope: "intent" } });
  expect(res.status).toBe(201);
  return res.data;
};

const verify = async (intentId: string) => {
  const res = await py("agent").send("eventsVerify", { intent_id: intentId });
  expect(res.status).toBe(200);
  return res.data;
};

async function until<T>(read: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const value = await read();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("the hash chain (RFC 0019 sections 1 and 2)", () => {
  it("is carried by the events of every writer, and an independent verifier accepts the log", async () => {
    const intent = await createIntent(cluster, { constraints: { budget: { max_total_cents: 100, alert_threshold_percent: 50 } }, state: { n: 1 } });
    await agentHeaders(cluster, "vlog-agent", "agent");
    const agent = cluster.sdk("agent", "vlog-agent");
    // The one-statement hot paths: append, state patch, status change.
    const first = await append(intent.id, { note: "ünïcode ✓", list: [1, 2.5, -0, 1e21, 1e-7, { z: 1, a: 2 }] });
    expect(first.status).toBe(201);
    // With the optional fields the hot path hashes around (trace_id sorts after sequence, parent_event_id before payload).
    const traced = await admin.send("intentsAppendEvent", {
      intent_id: intent.id,
      body: { event_type: "comment", payload: { quote: 'say "hi"\n\u0001' }, trace_id: "0af7651916cd43dd8448eb211c80319c", parent_event_id: first.data.id },
    });
    expect(traced.status).toBe(201);
    const patched = await admin.send("intentsPatchState", { intent_id: intent.id, ifMatch: 1, body: [{ op: "set", path: "/n", value: 0.1 }] });
    expect(patched.status).toBe(200);
    // The transaction path: an assignment and a lease.
    expect((await admin.send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: "vlog-agent" } })).status).toBe(201);
    expect((await agent.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "n", ttl_seconds: 60 } })).status).toBe(201);
    // The budget statement: one cost writes a budget_alert and the move to blocked in one statement.
    const cost = await agent.send("costsRecord", { intent_id: intent.id, body: { cost_type: "api_call", amount: 101.37, unit: "cents" } });
    expect(cost.status).toBe(201);
    // The system-event path: an audit channel's message is put into the log by the channels service.
    const ch = await agent.send("channelsCreate", { intent_id: intent.id, body: { name: "audited", options: { audit: true } } });
    expect(ch.status).toBe(201);
    const message = await agent.send("channelsSend", { channel_id: ch.data.id, body: { message_type: "broadcast", payload: { x: 1.5 } } });
    expect(message.status).toBe(201);
    const events = await until(async () => {
      const all = await allEvents(cluster, intent.id);
      return all.some((e) => e.event_type === "channel_message") ? all : undefined;
    }, "the audited message in the log");

    const types = events.map((e) => e.event_type);
    for (const type of ["intent_created", "comment", "state_patched", "agent_assigned", "lease_acquired", "budget_alert", "status_changed", "channel_message"]) expect(types).toContain(type);
    for (const [i, event] of events.entries()) {
      expect(event.sequence).toBe(i + 1);
      expect(event.event_hash).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
      expect(event.previous_event_hash).toBe(i === 0 ? null : events[i - 1]!.event_hash);
      expect(rfcEventHash(event), `event ${event.sequence} ${event.event_type}`).toBe(event.event_hash);
    }
    expect(firstBreak(events)).toBeNull();

    // The other read paths serve the same fields: a type filter, the tail, and the append's own answer.
    const filtered = await admin.ops.intentsListEvents({ intent_id: intent.id, query: { event_type: "budget_alert" } });
    const alert = events.find((e) => e.event_type === "budget_alert");
    expect(filtered.events).toEqual([alert]);
    const tail = await admin.ops.intentsListEvents({ intent_id: intent.id, query: { tail: true, limit: 2 } });
    expect(tail.events).toEqual(events.slice(-2));
    const appended = (await append(intent.id, { last: true })).data;
    expect(appended.previous_event_hash).toBe(events[events.length - 1]!.event_hash);
    expect(rfcEventHash(appended)).toBe(appended.event_hash);

    // What the relay publishes (SSE subscribers, other services) is the completed event too.
    const msgId = `intent:${intent.id}:e${appended.sequence}`;
    const published = async () =>
      (await readStream(cluster.bus, cluster.bus.streamName(streams.intents.name), (msg) => ({ msgId: msg.headers?.get("Nats-Msg-Id"), event: msg.json() }))).filter((m) => m.msgId === msgId);
    await vi.waitFor(async () => expect(await published()).toHaveLength(1), { timeout: 10_000 });
    expect((await published())[0]!.event).toEqual(appended);

    const verified = await verify(intent.id);
    expect(verified).toMatchObject({ intent_id: intent.id, chain_valid: true, valid: true, breaks: [], event_count: events.length + 1, first_sequence: 1, last_sequence: events.length + 1 });
  });

  it("stays one unbroken chain under concurrent appends from several writers", async () => {
    const intent = await createIntent(cluster);
    const writes = Array.from({ length: 40 }, (_, i) =>
      i % 4 === 3
        ? admin.send("intentsAssignAgent", { intent_id: intent.id, body: { agent_id: `racer-${i}` } })
        : append(intent.id, { i }),
    );
    for (const res of await Promise.all(writes)) expect(res.status, JSON.stringify(res.data)).toBe(201);
    const events = await allEvents(cluster, intent.id);
    expect(events).toHaveLength(41);
    expect(firstBreak(events)).toBeNull();
    expect((await verify(intent.id)).chain_valid).toBe(true);
  });

  it("is refused by the database for an in-place edit, and a row edited behind its back is reported exactly", async () => {
    const intent = await createIntent(cluster);
    await appendMany(intent.id, 5);
    const cp = await checkpoint(intent.id);
    const before = await allEvents(cluster, intent.id);
    const target = before[3]!; // sequence 4

    // The service's own code can never rewrite an event: the table refuses it.
    await expect(db.query("update intents.events set payload = '{}' where id = $1", [target.id])).rejects.toThrow(/immutable/);

    // A database administrator can (triggers off); one stored event row is edited.
    await db.query("set session_replication_role = replica");
    try {
      await db.query(`update intents.events set payload = '{"i": 99}'::jsonb, wire = replace(wire, '"payload":{"i":2}', '"payload":{"i":99}') where id = $1`, [target.id]);
    } finally {
      await db.query("set session_replication_role = origin");
    }

    const after = await allEvents(cluster, intent.id);
    expect(after[3]!.payload).toEqual({ i: 99 });
    expect(firstBreak(after)).toBe(4);
    const verified = await verify(intent.id);
    expect(verified.chain_valid).toBe(false);
    expect(verified.valid).toBe(false);
    expect(verified.breaks).toEqual([
      { sequence: 4, event_id: target.id, reason: "hash_mismatch", expected: target.event_hash, found: rfcEventHash(after[3]!), message: expect.any(String) },
    ]);
    // The checkpoint commits to the stored hashes, which were left alone: it still holds, and so do its proofs.
    expect(verified.checkpoint_breaks).toEqual([]);
    expect((await admin.send("checkpointsProof", { checkpoint_id: cp.checkpoint_id, event_id: after[0]!.id })).status).toBe(200);
    await append(intent.id, { more: 1 });
    await db.query("set session_replication_role = replica");
    try {
      await db.query(`update intents.events set wire = replace(wire, '"more":1', '"more":2') where intent_id = $1 and sequence = 7`, [intent.id]);
    } finally {
      await db.query("set session_replication_role = origin");
    }
    await expectRejected(admin.send("checkpointsCreate", { body: { intent_id: intent.id } }), 409, "LOG_TAMPERED");

    // A thorough administrator rewrites event 4 and re-hashes it and every event after it: the
    // chain is whole again, but no longer gives the root the server signed before.
    const rewritten = await createIntent(cluster);
    await appendMany(rewritten.id, 5);
    const signed = await checkpoint(rewritten.id);
    const original = await allEvents(cluster, rewritten.id);
    const forged: Record<string, any>[] = original.slice(0, 3);
    for (const event of original.slice(3)) {
      const { event_hash: _old, ...content } = { ...event, payload: event.sequence === 4 ? { i: 1000 } : event.payload, previous_event_hash: forged[forged.length - 1]!.event_hash };
      forged.push({ ...content, event_hash: rfcEventHash(content) });
    }
    await db.query("set session_replication_role = replica");
    try {
      for (const event of forged.slice(3)) {
        await db.query("update intents.events set payload = $2::jsonb, wire = $3, event_hash = $4, previous_event_hash = $5 where id = $1", [
          event.id,
          JSON.stringify(event.payload),
          JSON.stringify(event),
          event.event_hash,
          event.previous_event_hash,
        ]);
      }
    } finally {
      await db.query("set session_replication_role = origin");
    }
    const served = await allEvents(cluster, rewritten.id);
    expect(served).toEqual(forged);
    expect(firstBreak(served)).toBeNull();
    expect(rfcMerkleRoot(served.map((e) => e.event_hash))).not.toBe(signed.merkle_root);
    const reverified = await verify(rewritten.id);
    expect(reverified.breaks).toEqual([]);
    expect(reverified.chain_valid).toBe(false);
    expect(reverified.checkpoint_breaks).toEqual([expect.objectContaining({ checkpoint_id: signed.checkpoint_id, reason: "merkle_root_mismatch" })]);
    await expectRejected(admin.send("checkpointsProof", { checkpoint_id: signed.checkpoint_id, event_id: served[0]!.id }), 409, "LOG_TAMPERED");

    // A column edited without the served form is caught too (the row no longer tells one story).
    const other = await createIntent(cluster);
    await appendMany(other.id, 2);
    await db.query("set session_replication_role = replica");
    try {
      await db.query("update intents.events set actor = 'someone-else' where intent_id = $1 and sequence = 2", [other.id]);
    } finally {
      await db.query("set session_replication_role = origin");
    }
    expect((await verify(other.id)).breaks.map((b: { sequence: number; reason: string }) => [b.sequence, b.reason])).toEqual([[2, "row_mismatch"]]);
  });

  it("reports a deleted event as a gap, and events deleted from the end", async () => {
    const intent = await createIntent(cluster);
    await appendMany(intent.id, 4);
    await db.query("set session_replication_role = replica");
    try {
      await db.query("delete from intents.events where intent_id = $1 and sequence in (3, 5)", [intent.id]);
    } finally {
      await db.query("set session_replication_role = origin");
    }
    const verified = await verify(intent.id);
    expect(verified.breaks.map((b: { sequence: number; reason: string }) => [b.sequence, b.reason])).toEqual([
      [3, "sequence_gap"],
      [5, "events_missing_at_end"],
    ]);
  });
});

describe("checkpoints, proofs and consistency (RFC 0019 sections 3 to 6)", () => {
  it("signs a checkpoint with the server's identity; every event's proof holds by the RFC and by the Python client's algorithm", async () => {
    const intent = await createIntent(cluster);
    await appendMany(intent.id, 6);
    const events = await allEvents(cluster, intent.id);
    const cp = await checkpoint(intent.id);
    expect(cp).toMatchObject({ intent_id: intent.id, scope: "intent", event_count: 7, first_sequence: 1, last_sequence: 7, anchor: null });
    expect(cp.created_at).toBe("2026-03-01T10:00:00.000+00:00");
    expect(cp.merkle_root).toBe(rfcMerkleRoot(events.map((e) => e.event_hash)));
    expect(signatureHolds(cp)).toBe(true);
    expect(signatureHolds({ ...cp, last_sequence: 8 })).toBe(false);
    // The signer is the server identity federation publishes: did.json's key-1 is the did:key's key.
    const did = await cluster.api("/.well-known/did.json");
    expect(cp.signed_by).toBe(`did:key:${did.body.verificationMethod[0].publicKeyMultibase}`);

    for (const [i, event] of events.entries()) {
      const res = await py("agent").send("checkpointsProof", { checkpoint_id: cp.checkpoint_id, event_id: event.id });
      expect(res.status).toBe(200);
      expect(res.data).toMatchObject({ event_id: event.id, event_hash: event.event_hash, checkpoint_id: cp.checkpoint_id, merkle_root: cp.merkle_root, leaf_index: i });
      expect(res.data.proof_hashes).toHaveLength(3);
      expect(rfcProofHolds(res.data)).toBe(true);
      expect(pythonMerkleProofVerify(res.data)).toBe(true);
      expect(pythonMerkleProofVerify({ ...res.data, event_hash: events[(i + 1) % 7]!.event_hash })).toBe(false);
    }

    // Nothing new: no empty checkpoint. An event of another intent, or none, is in no proof.
    await expectRejected(py().send("checkpointsCreate", { body: { intent_id: intent.id, scope: "intent" } }), 409, "NOTHING_TO_CHECKPOINT");
    const stranger = await createIntent(cluster);
    const strangerEvents = await allEvents(cluster, stranger.id);
    await expectRejected(admin.send("checkpointsProof", { checkpoint_id: cp.checkpoint_id, event_id: strangerEvents[0]!.id }), 404, "EVENT_NOT_IN_CHECKPOINT");
    await expectRejected(admin.send("checkpointsProof", { checkpoint_id: UNKNOWN_ID, event_id: events[0]!.id }), 404, "CHECKPOINT_NOT_FOUND");
    await expectRejected(admin.send("checkpointsCreate", { body: { intent_id: UNKNOWN_ID } }), 404, "INTENT_NOT_FOUND");
    // Only an administrator creates them; server-scoped ones are not kept.
    await expectRejected(py("coordinator").send("checkpointsCreate", { body: { intent_id: intent.id } }), 403, "FORBIDDEN");
    // Raw: the types allow only scope "intent".
    expectError(await cluster.api("/admin/checkpoints", { body: { intent_id: intent.id, scope: "server" } }), 400, "VALIDATION_FAILED");
  });

  it("lists and reads checkpoints as the client parses them, proves one extends another, and records an anchor once", async () => {
    const intent = await createIntent(cluster);
    await appendMany(intent.id, 2);
    const first = await checkpoint(intent.id);
    await appendMany(intent.id, 4);
    const second = await checkpoint(intent.id);
    expect([second.first_sequence, second.last_sequence, second.event_count]).toEqual([4, 7, 4]);

    // list_checkpoints: a bare list of LogCheckpoint objects.
    const listed = await py("agent").send("checkpointsList", { query: { intent_id: intent.id, scope: "intent" } });
    expect(listed.status).toBe(200);
    expect(listed.data).toEqual([first, second]);
    expect(await admin.ops.checkpointsList({ query: { intent_id: intent.id, after: first.checkpoint_id } })).toEqual([second]);
    expect(await admin.ops.checkpointsList({ query: { intent_id: intent.id, scope: "server" } })).toEqual([]);
    expect(await py("agent").ops.checkpointsGet({ checkpoint_id: second.checkpoint_id })).toEqual(second);
    await expectRejected(admin.send("checkpointsGet", { checkpoint_id: UNKNOWN_ID }), 404, "CHECKPOINT_NOT_FOUND");

    // verify_consistency: the later checkpoint starts right after the earlier, chained across.
    const events = await allEvents(cluster, intent.id);
    const proof = await py("agent").send("checkpointsConsistency", { query: { from_checkpoint: first.checkpoint_id, to_checkpoint: second.checkpoint_id } });
    expect(proof.status).toBe(200);
    expect(proof.data).toEqual({
      from_checkpoint: first.checkpoint_id,
      to_checkpoint: second.checkpoint_id,
      consistent: true,
      boundary_event: { sequence: 4, event_hash: events[3]!.event_hash, previous_event_hash: events[2]!.event_hash },
      events_checked: 7,
      reason: null,
    });
    expect(proof.data.boundary_event?.previous_event_hash).toBe(events[first.last_sequence - 1]!.event_hash);
    await expectRejected(admin.send("checkpointsConsistency", { query: { from_checkpoint: second.checkpoint_id, to_checkpoint: first.checkpoint_id } }), 422, "CHECKPOINTS_NOT_COMPARABLE");
    const elsewhere = await createIntent(cluster);
    const foreign = await checkpoint(elsewhere.id);
    await expectRejected(admin.send("checkpointsConsistency", { query: { from_checkpoint: first.checkpoint_id, to_checkpoint: foreign.checkpoint_id } }), 422, "CHECKPOINTS_NOT_COMPARABLE");

    // The anchor: recorded once, never replaced, and the signature still holds (it was made with anchor null).
    const anchor = { provider: "rfc3161-notary", reference: "receipt-0001", timestamp_proof: "MIIB-proof", anchored_at: "2026-03-01T10:05:00Z" };
    const anchored = await admin.send("checkpointsAnchor", { checkpoint_id: first.checkpoint_id, body: anchor });
    expect(anchored.status).toBe(200);
    expect(anchored.data.anchor).toEqual({ type: "external-timestamp", ...anchor, anchored_at: "2026-03-01T10:05:00.000+00:00" });
    expect(signatureHolds(anchored.data)).toBe(true);
    await expectRejected(admin.send("checkpointsAnchor", { checkpoint_id: first.checkpoint_id, body: { ...anchor, reference: "other" } }), 409, "CHECKPOINT_ANCHORED");
    await expectRejected(cluster.sdk("operator").send("checkpointsAnchor", { checkpoint_id: second.checkpoint_id, body: anchor }), 403, "FORBIDDEN");
    expect((await admin.ops.checkpointsGet({ checkpoint_id: first.checkpoint_id })).anchor?.reference).toBe("receipt-0001");
    // Verification checked both checkpoints of the intent.
    expect(await verify(intent.id)).toMatchObject({ chain_valid: true, checkpoints_checked: 2, checkpoint_breaks: [] });
  });

  it("are made on schedule: every N events, or when the oldest pending event is old enough, never empty, once under racing sweeps", async () => {
    const intent = await createIntent(cluster);
    await appendMany(intent.id, 11); // 12 events with intent_created
    const sweeper = cluster.intents.checkpointSweeper;
    const mine = () => admin.ops.checkpointsList({ query: { intent_id: intent.id } });
    // Two sweeps at once (two replicas): the batches are made once each.
    await Promise.all([sweeper.sweep(), sweeper.sweep()]);
    expect((await mine()).map((c) => [c.first_sequence, c.last_sequence])).toEqual([
      [1, 5],
      [6, 10],
    ]);
    // Two pending events, younger than the age trigger: nothing yet.
    await sweeper.sweep();
    expect(await mine()).toHaveLength(2);
    clock.advance(61_000);
    await sweeper.sweep();
    expect((await mine()).map((c) => [c.first_sequence, c.last_sequence])).toEqual([
      [1, 5],
      [6, 10],
      [11, 12],
    ]);
    await sweeper.sweep();
    expect(await mine()).toHaveLength(3);
    for (const cp of await mine()) expect(signatureHolds(cp)).toBe(true);
  });
});

describe("the Python client's RFC 0019 calls (client.py, models.py from_dict)", () => {
  it("get_events, verify_event_chain, list_checkpoints, get_checkpoint, get_merkle_proof and verify_consistency read what they parse", async () => {
    const intent = await createIntent(cluster);
    await appendMany(intent.id, 3);
    // get_events(intent_id, event_type=None, since=None, limit=100): GET /intents/{id}/events?limit=100
    const page = await py("agent").send("intentsListEvents", { intent_id: intent.id, query: { limit: 100 } });
    expect(page.status).toBe(200);
    const events = page.data.events;
    for (const event of events) {
      // IntentEvent.from_dict: event_hash, previous_event_hash, sequence (the RFC 0019 fields).
      expect(Object.keys(event)).toEqual(expect.arrayContaining(["id", "intent_id", "event_type", "actor", "payload", "created_at", "event_hash", "previous_event_hash", "sequence"]));
    }
    // verify_event_chain: ChainVerification.from_dict reads valid (or chain_valid), event_count, first/last_sequence, breaks.
    const chain = await verify(intent.id);
    expect(chain).toMatchObject({ intent_id: intent.id, valid: true, chain_valid: true, event_count: 4, first_sequence: 1, last_sequence: 4, breaks: [] });
    // The admin's checkpoint: no SDK method, RAW POST /admin/checkpoints {intent_id, scope}.
    const first = await checkpoint(intent.id);
    await appendMany(intent.id, 1);
    const second = await checkpoint(intent.id);
    // list_checkpoints(intent_id, scope): a bare list, each LogCheckpoint.from_dict.
    const listed = await py("agent").send("checkpointsList", { query: { intent_id: intent.id, scope: "intent" } });
    expect(Array.isArray(listed.data)).toBe(true);
    const keys = ["checkpoint_id", "intent_id", "scope", "merkle_root", "event_count", "first_sequence", "last_sequence", "created_at", "signed_by", "signature", "anchor"];
    for (const cp of listed.data) expect(Object.keys(cp).sort()).toEqual([...keys].sort());
    // get_checkpoint(checkpoint_id)
    expect(await py("agent").ops.checkpointsGet({ checkpoint_id: first.checkpoint_id })).toEqual(first);
    // get_merkle_proof(checkpoint_id, event_id): MerkleProof.from_dict, then .verify().
    const proof = await py("agent").ops.checkpointsProof({ checkpoint_id: first.checkpoint_id, event_id: events[2]!.id });
    expect(proof).toMatchObject({ event_id: events[2]!.id, event_hash: events[2]!.event_hash, checkpoint_id: first.checkpoint_id, merkle_root: first.merkle_root, leaf_index: 2 });
    expect(pythonMerkleProofVerify(proof)).toBe(true);
    // verify_consistency(from_checkpoint, to_checkpoint): ConsistencyProof.from_dict.
    const consistent = await py("agent").ops.checkpointsConsistency({ query: { from_checkpoint: first.checkpoint_id, to_checkpoint: second.checkpoint_id } });
    expect(consistent).toMatchObject({ from_checkpoint: first.checkpoint_id, to_checkpoint: second.checkpoint_id, consistent: true, boundary_event: { sequence: 5 } });
    // Hostile ids are refused before anything is read.
    await expectRejected(py("agent").send("checkpointsGet", { checkpoint_id: "not-an-id" }), 400, "VALIDATION_FAILED");
    await expectRejected(py("agent").send("checkpointsConsistency", { query: { from_checkpoint: first.checkpoint_id } }), 400, "VALIDATION_FAILED");
    await expectRejected(py("agent").send("eventsVerify", { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");
  });
});

describe("the official MCP server's RFC 0019 paths (mcp-server/src/client.ts)", () => {
  it("getHashChain, verifyInclusion and getCheckpoint (an id or latest) read the intent's chain and checkpoints", async () => {
    const intent = await createIntent(cluster);
    // Fewer events than the sweeper's batch (5), so only the admin's requests checkpoint them.
    await appendMany(intent.id, 3);
    const events = await allEvents(cluster, intent.id);

    // The chain of a range: the stored fields, in order, and what is left after it.
    const range = await admin.send("eventsHashChain", { intent_id: intent.id, query: { from: 2, to: 4 } });
    expect(range.status).toBe(200);
    expect(range.data).toMatchObject({ intent_id: intent.id, algorithm: "sha256", from_sequence: 2, to_sequence: 4, last_sequence: 4, has_more: false });
    expect(range.data.links).toEqual(
      events.slice(1, 4).map((e) => ({ sequence: e.sequence, event_id: e.id, event_type: e.event_type, created_at: e.created_at, previous_event_hash: e.previous_event_hash, event_hash: e.event_hash })),
    );
    expect(await admin.ops.eventsHashChain({ intent_id: intent.id, query: { from: 1, to: 2 } })).toMatchObject({ to_sequence: 2, has_more: true });
    expect((await admin.ops.eventsHashChain({ intent_id: intent.id })).links).toHaveLength(4);
    await expectRejected(admin.send("eventsHashChain", { intent_id: intent.id, query: { from: 3, to: 2 } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin.send("eventsHashChain", { intent_id: UNKNOWN_ID }), 404, "INTENT_NOT_FOUND");

    // Nothing checkpointed yet: no proof, no latest checkpoint.
    await expectRejected(admin.send("eventsProof", { intent_id: intent.id, event_id: events[0]!.id }), 404, "EVENT_NOT_IN_CHECKPOINT");
    await expectRejected(admin.send("intentCheckpointLatest", { intent_id: intent.id }), 404, "CHECKPOINT_NOT_FOUND");

    const first = await checkpoint(intent.id);
    await appendMany(intent.id, 2);
    const second = await checkpoint(intent.id);
    const latest = await admin.send("intentCheckpointLatest", { intent_id: intent.id });
    expect(latest.status).toBe(200);
    expect(latest.data).toEqual(second);
    expect(await admin.ops.intentCheckpointGet({ intent_id: intent.id, checkpoint_id: first.checkpoint_id })).toEqual(first);

    // The proof comes from the checkpoint covering the event, and an independent verifier accepts it.
    for (const [event, cp] of [[events[2]!, first], [(await allEvents(cluster, intent.id))[5]!, second]] as const) {
      const proof = await admin.send("eventsProof", { intent_id: intent.id, event_id: event.id });
      expect(proof.status).toBe(200);
      expect(proof.data).toMatchObject({ event_id: event.id, event_hash: event.event_hash, checkpoint_id: cp.checkpoint_id, merkle_root: cp.merkle_root });
      expect(rfcProofHolds(proof.data)).toBe(true);
    }

    // Another intent's checkpoint or event is not found under this one.
    const stranger = await createIntent(cluster);
    const strangerEvents = await allEvents(cluster, stranger.id);
    await expectRejected(admin.send("intentCheckpointGet", { intent_id: stranger.id, checkpoint_id: first.checkpoint_id }), 404, "CHECKPOINT_NOT_FOUND");
    await expectRejected(admin.send("eventsProof", { intent_id: intent.id, event_id: strangerEvents[0]!.id }), 404, "EVENT_NOT_IN_CHECKPOINT");
  });
});
