import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { contentDigest, MAX_SKEW_SECONDS, parseSignedRequest, signRequest, SignatureError, SIGNATURE_LIFETIME_SECONDS } from "./signatures";

const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
const other = crypto.generateKeyPairSync("ed25519");
const keyId = "did:web:a.example.org#key-1";
const now = Date.UTC(2026, 0, 1);
const request = { method: "POST", targetUri: "https://b.example.org/api/v1/federation/receive", body: '{"hello":"world"}', idempotencyKey: "k-1" };

function signed(overrides: Partial<typeof request> = {}, at = now) {
  const r = { ...request, ...overrides };
  return { method: r.method, targetUri: r.targetUri, body: r.body, headers: signRequest(r, { keyId, privateKey }, at) };
}

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SignatureError);
    return (error as Error).message;
  }
  throw new Error("expected a SignatureError");
};

describe("RFC 9421 signatures (Ed25519)", () => {
  it("signs the method, target URI, Content-Digest, Content-Type and Idempotency-Key with created, expires, nonce and keyid", () => {
    const { headers } = signed();
    expect(headers["content-digest"]).toBe(`sha-256=:${crypto.createHash("sha256").update(request.body).digest("base64")}:`);
    expect(headers["signature-input"]).toMatch(
      /^fed=\("@method" "@target-uri" "content-digest" "content-type" "idempotency-key"\);created=\d+;expires=\d+;nonce="[^"]+";keyid="did:web:a\.example\.org#key-1";alg="ed25519"$/,
    );
    expect(headers.signature).toMatch(/^fed=:[A-Za-z0-9+/]{86}==:$/);
    const parsed = parseSignedRequest(signed(), now);
    expect(parsed).toMatchObject({ keyid: keyId, did: "did:web:a.example.org", created: now / 1000, expires: now / 1000 + SIGNATURE_LIFETIME_SECONDS });
    expect(parsed.verify(publicKey)).toBe(true);
  });

  it("builds the signature base of RFC 9421 section 2.5 (checked against an independent construction)", () => {
    const s = signed();
    const params = s.headers["signature-input"].slice("fed=".length);
    const base = [
      `"@method": POST`,
      `"@target-uri": ${request.targetUri}`,
      `"content-digest": ${contentDigest(request.body)}`,
      `"content-type": application/json`,
      `"idempotency-key": k-1`,
      `"@signature-params": ${params}`,
    ].join("\n");
    const signature = Buffer.from(s.headers.signature.slice(5, -1), "base64");
    expect(crypto.verify(null, Buffer.from(base), publicKey, signature)).toBe(true);
  });

  it("fails verification with another key, another body, another target URI or another method", () => {
    expect(parseSignedRequest(signed(), now).verify(other.publicKey)).toBe(false);
    const s = signed();
    expect(refusal(() => parseSignedRequest({ ...s, body: '{"hello":"mars"}' }, now))).toContain("Content-Digest");
    const digestToo = { ...s, body: '{"hello":"mars"}', headers: { ...s.headers, "content-digest": contentDigest('{"hello":"mars"}') } };
    expect(parseSignedRequest(digestToo, now).verify(publicKey)).toBe(false);
    expect(parseSignedRequest({ ...s, targetUri: "https://c.example.org/api/v1/federation/receive" }, now).verify(publicKey)).toBe(false);
    expect(parseSignedRequest({ ...s, method: "PUT" }, now).verify(publicKey)).toBe(false);
    expect(parseSignedRequest({ ...s, headers: { ...s.headers, "idempotency-key": "k-2" } }, now).verify(publicKey)).toBe(false);
  });

  it("refuses signatures outside the time window", () => {
    expect(refusal(() => parseSignedRequest(signed({}, now - (MAX_SKEW_SECONDS + 1) * 1000), now))).toContain("window");
    expect(refusal(() => parseSignedRequest(signed({}, now + (MAX_SKEW_SECONDS + 1) * 1000), now))).toContain("window");
    // Within the skew but past expires.
    expect(refusal(() => parseSignedRequest(signed({}, now - SIGNATURE_LIFETIME_SECONDS * 1000), now))).toContain("expired");
    expect(parseSignedRequest(signed({}, now - 60_000), now).verify(publicKey)).toBe(true);
  });

  it("refuses missing, malformed or weaker signature headers", () => {
    const s = signed();
    const without = (name: string) => {
      const headers = { ...s.headers };
      delete headers[name];
      return { ...s, headers };
    };
    refusal(() => parseSignedRequest(without("signature-input"), now));
    refusal(() => parseSignedRequest(without("signature"), now));
    refusal(() => parseSignedRequest(without("content-digest"), now));
    refusal(() => parseSignedRequest(without("idempotency-key"), now));
    // Fewer covered components (no content-digest): a signature that would not bind the body.
    const weaker = s.headers["signature-input"].replace(' "content-digest"', "");
    refusal(() => parseSignedRequest({ ...s, headers: { ...s.headers, "signature-input": weaker } }, now));
    // Another algorithm, a key id that is not did:web, an expires too far out.
    refusal(() => parseSignedRequest({ ...s, headers: { ...s.headers, "signature-input": s.headers["signature-input"].replace('alg="ed25519"', 'alg="hmac-sha256"') } }, now));
    refusal(() => parseSignedRequest({ ...s, headers: { ...s.headers, "signature-input": s.headers["signature-input"].replace(keyId, "https://a.example.org#key-1") } }, now));
    const far = s.headers["signature-input"].replace(/expires=\d+/, `expires=${now / 1000 + 86_400}`);
    expect(refusal(() => parseSignedRequest({ ...s, headers: { ...s.headers, "signature-input": far } }, now))).toContain("at most");
    refusal(() => parseSignedRequest({ ...s, headers: { ...s.headers, "content-type": "text/plain" } }, now));
    refusal(() => parseSignedRequest({ ...s, headers: { ...s.headers, signature: "fed=:AAAA:" } }, now));
    refusal(() => parseSignedRequest({ ...s, headers: { ...s.headers, "signature-input": "x".repeat(8000) } }, now));
  });

  it("gives each signature a new nonce", () => {
    const nonces = new Set(Array.from({ length: 50 }, () => /nonce="([^"]+)"/.exec(signed().headers["signature-input"])![1]));
    expect(nonces.size).toBe(50);
  });
});
