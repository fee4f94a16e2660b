import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type ApiResponse, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError } from "../support/e2e-helpers";
import { canonicalJson } from "../../services/vault/src/identity/keys";

/**
 * RFC-0018 through the gateway, as the official Python client (register_identity,
 * complete_identity_challenge, get_identity, verify_signature, rotate_key) and the MCP server
 * (openintent_register_identity, openintent_verify_challenge, openintent_rotate_key) call it, with
 * real Ed25519 keys; and signed events (§3), verified where they are appended.
 */

let cluster: TestCluster;
let clock: ManualClock;
const OVERLAP_MS = 10 * 60_000;

beforeAll(async () => {
  clock = new ManualClock(new Date("2026-02-12T10:00:00.000Z"));
  cluster = await startTestCluster({ clock, vault: { identity: { rotationOverlapMs: OVERLAP_MS } } });
});
afterAll(async () => {
  await cluster?.stop();
});

interface Keys {
  privateKey: KeyObject;
  raw: Buffer;
  /** ed25519:<base64url>, the RFC's spelling. */
  text: string;
  spki: string;
}
function newKeys(): Keys {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  return { privateKey, raw, text: `ed25519:${raw.toString("base64url")}`, spki: publicKey.export({ format: "der", type: "spki" }).toString("base64") };
}
const signText = (keys: Keys, text: string) => sign(null, Buffer.from(text, "utf8"), keys.privateKey).toString("base64url");
const signJson = (keys: Keys, value: unknown) => signText(keys, canonicalJson(value));

function client(key: keyof typeof TEST_KEYS, agentId: string) {
  const headers = { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId, "Content-Type": "application/json" };
  return async (method: string, path: string, json?: unknown): Promise<ApiResponse> => {
    const res = await fetch(`${cluster.baseUrl}/api/v1${path}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
}

/** The Python client's five identity calls, exactly as client.py sends them. */
function python(agentId: string, key: keyof typeof TEST_KEYS = "agent") {
  const call = client(key, agentId);
  return {
    register_identity: (agent: string, public_key: string, key_algorithm = "Ed25519", key_expires_at?: string) =>
      call("POST", `/agents/${agent}/identity`, { public_key, key_algorithm, ...(key_expires_at ? { key_expires_at } : {}) }),
    complete_identity_challenge: (agent: string, challenge: string, signature: string) => call("POST", `/agents/${agent}/identity/challenge`, { challenge, signature }),
    get_identity: (agent: string) => call("GET", `/agents/${agent}/identity`),
    verify_signature: (agent: string, payload: Record<string, unknown>, signature: string) => call("POST", `/agents/${agent}/identity/verify`, { payload, signature }),
    rotate_key: (agent: string, new_public_key: string, old_public_key: string, signature: string) =>
      call("POST", `/agents/${agent}/identity/rotate`, { action: "rotate", new_public_key, old_public_key, signature }),
  };
}

const ok = (res: ApiResponse, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

async function registered(agentId: string): Promise<Keys> {
  const keys = newKeys();
  const py = python(agentId);
  const challenge = ok(await py.register_identity(agentId, keys.text));
  ok(await py.complete_identity_challenge(agentId, challenge.challenge, signText(keys, challenge.challenge)), 201);
  return keys;
}

describe("the Python client's identity calls", () => {
  it("register_identity, complete_identity_challenge, get_identity: challenge and response prove the key; only the public key is kept", async () => {
    const keys = newKeys();
    const py = python("crypto-1");
    const challenge = ok(await py.register_identity("crypto-1", keys.text));
    expect(challenge.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Date(challenge.challenge_expires_at).getTime() - clock.now().getTime()).toBe(5 * 60_000);
    // A signature by another key is refused, and writes nothing: the challenge still works.
    expectError(await py.complete_identity_challenge("crypto-1", challenge.challenge, signText(newKeys(), challenge.challenge)), 403, "SIGNATURE_REJECTED");
    expectError(await py.get_identity("crypto-1"), 404, "IDENTITY_NOT_FOUND");
    const identity = ok(await py.complete_identity_challenge("crypto-1", challenge.challenge, signText(keys, challenge.challenge)), 201);
    expect(identity).toMatchObject({ agent_id: "crypto-1", public_key: keys.text, key_algorithm: "Ed25519", previous_keys: [], key_expires_at: null });
    expect(identity.did).toMatch(/^did:key:z6Mk[1-9A-HJ-NP-Za-km-z]+$/);
    expect(ok(await py.get_identity("crypto-1"))).toEqual(identity);
    // Single use: the same challenge again is refused; a second registration is a 409 (rotate instead).
    expectError(await py.complete_identity_challenge("crypto-1", challenge.challenge, signText(keys, challenge.challenge)), 403, "CHALLENGE_INVALID");
    expectError(await py.register_identity("crypto-1", newKeys().text), 409, "IDENTITY_EXISTS");
  });

  it("a challenge expires; the SubjectPublicKeyInfo spelling of a key and a signature over the decoded challenge bytes are accepted", async () => {
    const keys = newKeys();
    const py = python("crypto-2");
    const stale = ok(await py.register_identity("crypto-2", keys.spki));
    clock.advance(5 * 60_000 + 1);
    expectError(await py.complete_identity_challenge("crypto-2", stale.challenge, signText(keys, stale.challenge)), 403, "CHALLENGE_INVALID");
    const fresh = ok(await py.register_identity("crypto-2", keys.spki));
    const overBytes = sign(null, Buffer.from(fresh.challenge, "base64url"), keys.privateKey).toString("base64url");
    expect(ok(await py.complete_identity_challenge("crypto-2", fresh.challenge, overBytes), 201).public_key).toBe(keys.text);
  });

  it("only the agent itself (or an admin) registers its identity", async () => {
    expectError(await client("agent", "someone-else")("POST", "/agents/crypto-9/identity", { public_key: newKeys().text }), 403, "FORBIDDEN");
    expect((await client("admin", "admin")("POST", "/agents/crypto-9/identity", { public_key: newKeys().text })).status).toBe(200);
  });

  it("verify_signature: the canonical JSON of the payload, signed by the registered key", async () => {
    const keys = await registered("crypto-3");
    const py = python("crypto-3");
    const payload = { event_type: "state_change", data: { b: 2, a: [1, "x"] }, note: "café" };
    const verdict = ok(await py.verify_signature("crypto-3", payload, signJson(keys, payload)));
    expect(verdict).toMatchObject({ valid: true, agent_id: "crypto-3", public_key: keys.text });
    expect(verdict.did).toMatch(/^did:key:/);
    // Python's json.dumps(sort_keys=True, separators=(",", ":")) escapes non-ASCII: that form verifies too.
    const pythonForm = canonicalJson(payload).replace(/[\u0080-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
    expect(ok(await py.verify_signature("crypto-3", payload, signText(keys, pythonForm))).valid).toBe(true);
    expect(ok(await py.verify_signature("crypto-3", { ...payload, note: "cafe" }, signJson(keys, payload))).valid).toBe(false);
    expect(ok(await py.verify_signature("crypto-3", payload, signJson(newKeys(), payload)))).toMatchObject({ valid: false, public_key: null });
    expectError(await py.verify_signature("nobody-3", payload, signJson(keys, payload)), 404, "IDENTITY_NOT_FOUND");
  });

  it("rotate_key: signed by the old key; the old key verifies new signatures only within the overlap window", async () => {
    const old = await registered("crypto-4");
    const next = newKeys();
    const py = python("crypto-4");
    const unsigned = { action: "rotate", new_public_key: next.text, old_public_key: old.text };
    expectError(await py.rotate_key("crypto-4", next.text, old.text, signJson(next, unsigned)), 403, "SIGNATURE_REJECTED");
    expectError(await py.rotate_key("crypto-4", next.text, newKeys().text, signJson(old, unsigned)), 409, "KEY_MISMATCH");
    const rotated = ok(await py.rotate_key("crypto-4", next.text, old.text, signJson(old, unsigned)));
    expect(rotated).toMatchObject({ public_key: next.text, previous_keys: [old.text] });
    expect(new Date(rotated.overlap_until).getTime() - clock.now().getTime()).toBe(OVERLAP_MS);
    const payload = { n: 1 };
    expect(ok(await py.verify_signature("crypto-4", payload, signJson(next, payload))).valid).toBe(true);
    expect(ok(await py.verify_signature("crypto-4", payload, signJson(old, payload)))).toMatchObject({ valid: true, public_key: old.text });
    clock.advance(OVERLAP_MS + 1);
    expect(ok(await py.verify_signature("crypto-4", payload, signJson(old, payload))).valid).toBe(false);
    expect(ok(await py.get_identity("crypto-4"))).toMatchObject({ public_key: next.text, previous_keys: [old.text], overlap_until: null });
  });

  it("revocation: nothing verifies, the agent registers again by challenge", async () => {
    const keys = await registered("crypto-5");
    const py = python("crypto-5");
    const revoked = ok(await client("admin", "admin")("DELETE", "/agents/crypto-5/identity", { reason: "compromised" }));
    expect(revoked).toMatchObject({ agent_id: "crypto-5", revoked: true, public_key: keys.text });
    expectError(await py.get_identity("crypto-5"), 404, "IDENTITY_NOT_FOUND");
    expectError(await py.verify_signature("crypto-5", { a: 1 }, signJson(keys, { a: 1 })), 404, "IDENTITY_NOT_FOUND");
    const fresh = await registered("crypto-5");
    expect(ok(await py.get_identity("crypto-5")).public_key).toBe(fresh.text);
    // The revoked key may not come back through a rotation.
    const back = { action: "rotate", new_public_key: keys.text, old_public_key: fresh.text };
    expectError(await py.rotate_key("crypto-5", keys.text, fresh.text, signJson(fresh, back)), 400, "VALIDATION_FAILED");
  });
});

describe("the MCP server's identity tools", () => {
  it("openintent_register_identity, openintent_verify_challenge, openintent_rotate_key", async () => {
    const keys = newKeys();
    const mcp = client("agent", "mcp-agent-1");
    // MCP sends the bare base64 key and key_type "ed25519".
    const challenge = ok(await mcp("POST", "/identity/register", { agent_id: "mcp-agent-1", public_key: keys.raw.toString("base64"), key_type: "ed25519" }));
    expectError(await mcp("POST", "/identity/verify", { agent_id: "mcp-agent-1", challenge: challenge.challenge, signature: "A".repeat(86) }), 403, "SIGNATURE_REJECTED");
    const identity = ok(await mcp("POST", "/identity/verify", { agent_id: "mcp-agent-1", challenge: challenge.challenge, signature: sign(null, Buffer.from(challenge.challenge), keys.privateKey).toString("base64") }), 201);
    expect(identity.public_key).toBe(keys.text);
    const next = newKeys();
    const nextText = next.raw.toString("base64");
    // No old key in the body: the proof covers the current key in its stored spelling.
    const proof = signJson(keys, { action: "rotate", new_public_key: nextText, old_public_key: keys.text });
    const rotated = ok(await mcp("POST", "/identity/mcp-agent-1/rotate", { new_public_key: nextText, rotation_proof: proof }));
    expect(rotated).toMatchObject({ public_key: next.text, previous_keys: [keys.text] });
  });
});

describe("signed events (RFC-0018 §3)", () => {
  it("an event with a proof is appended only when the proof verifies for its actor; unsigned events stay valid", async () => {
    const keys = await registered("signer-1");
    const intent = await createIntent(cluster, { title: "signed work" });
    const post = client("agent", "signer-1");
    const body = { event_type: "state_change", actor: "signer-1", payload: { op: "set", path: "/status", value: "done" } };
    const proof = { type: "Ed25519Signature2026", created: clock.now().toISOString(), signature: signJson(keys, { ...body, intent_id: intent.id }) };
    const appended = ok(await post("POST", `/intents/${intent.id}/events`, { ...body, proof }), 201);
    expect(appended).toMatchObject({ event_type: "state_change", actor: "signer-1" });

    const before = (await allEvents(cluster, intent.id)).length;
    expectError(await post("POST", `/intents/${intent.id}/events`, { ...body, payload: { op: "set", path: "/status", value: "forged" }, proof }), 403, "PROOF_INVALID");
    // The same signed event on another intent does not verify either (the intent is signed).
    const other = await createIntent(cluster, { title: "elsewhere" });
    expectError(await post("POST", `/intents/${other.id}/events`, { ...body, proof }), 403, "PROOF_INVALID");
    // A proof from an agent without an identity is not a proof.
    const stranger = client("agent", "unsigned-1");
    expectError(await stranger("POST", `/intents/${intent.id}/events`, { ...body, actor: "unsigned-1", proof }), 403, "PROOF_INVALID");
    expect((await allEvents(cluster, intent.id)).length).toBe(before);
    ok(await post("POST", `/intents/${intent.id}/events`, body), 201);
  });
});
