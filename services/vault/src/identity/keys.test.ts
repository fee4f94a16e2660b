import { generateKeyPairSync, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { asciiEscaped, canonicalJson, canonicalPublicKey, didKeyOf, parsePublicKey, parseSignature, publicKeyOfDid, verifyCanonical, verifyEd25519 } from "./keys";

// RFC 8032 §7.1, TEST 1: the empty message.
const RFC8032_PUBLIC = Buffer.from("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "hex");
const RFC8032_SIGNATURE = Buffer.from("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b", "hex");

describe("Ed25519 keys and signatures", () => {
  it("verifies the RFC 8032 test vector and nothing altered", () => {
    expect(verifyEd25519(RFC8032_PUBLIC, Buffer.alloc(0), RFC8032_SIGNATURE)).toBe(true);
    expect(verifyEd25519(RFC8032_PUBLIC, Buffer.from("x"), RFC8032_SIGNATURE)).toBe(false);
    const flipped = Buffer.from(RFC8032_SIGNATURE);
    flipped[0]! ^= 1;
    expect(verifyEd25519(RFC8032_PUBLIC, Buffer.alloc(0), flipped)).toBe(false);
    expect(verifyEd25519(Buffer.alloc(32), Buffer.alloc(0), RFC8032_SIGNATURE)).toBe(false);
  });

  it("reads every spelling of a public key the clients send, and nothing else", () => {
    const { publicKey } = generateKeyPairSync("ed25519");
    const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
    const spki = publicKey.export({ format: "der", type: "spki" }).toString("base64");
    expect(spki.startsWith("MCowBQYDK2VwAyEA")).toBe(true);
    for (const text of [`ed25519:${raw.toString("base64url")}`, `Ed25519:${raw.toString("base64")}`, raw.toString("base64"), raw.toString("base64url"), spki]) {
      expect(parsePublicKey(text)?.equals(raw), text).toBe(true);
    }
    expect(canonicalPublicKey(raw)).toBe(`ed25519:${raw.toString("base64url")}`);
    expect(parsePublicKey(Buffer.alloc(31).toString("base64"))).toBeNull();
    expect(parsePublicKey("ed25519:not base64!")).toBeNull();
    expect(parseSignature(RFC8032_SIGNATURE.toString("base64url"))?.equals(RFC8032_SIGNATURE)).toBe(true);
    expect(parseSignature(Buffer.alloc(63).toString("base64"))).toBeNull();
  });

  it("derives did:key (multicodec ed25519-pub, base58btc) and reads it back", () => {
    const did = didKeyOf(RFC8032_PUBLIC);
    expect(did.startsWith("did:key:z6Mk")).toBe(true);
    expect(publicKeyOfDid(did)?.equals(RFC8032_PUBLIC)).toBe(true);
    expect(publicKeyOfDid(`${did}#${did.slice(8)}`)?.equals(RFC8032_PUBLIC)).toBe(true);
    expect(publicKeyOfDid("did:web:example.com")).toBeNull();
    const leadingZero = Buffer.alloc(32);
    expect(publicKeyOfDid(didKeyOf(leadingZero))?.equals(leadingZero)).toBe(true);
  });
});

describe("canonical JSON (RFC 8785)", () => {
  it("sorts keys at every level, drops whitespace, writes numbers as ECMAScript does", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: "é" }, n: 1.0, e: 1e21, f: 0.000001 })).toBe('{"a":{"c":"é","d":[3,{"y":null,"z":true}]},"b":1,"e":1e+21,"f":0.000001,"n":1}');
    expect(canonicalJson({ action: "rotate", old_public_key: "o", new_public_key: "n" })).toBe('{"action":"rotate","new_public_key":"n","old_public_key":"o"}');
    expect(asciiEscaped('{"c":"é😀"}')).toBe('{"c":"\\u00e9\\ud83d\\ude00"}');
  });

  it("a signature over the JCS bytes or over Python's ASCII-escaped form verifies; over anything else it does not", () => {
    const { publicKey, privateKey } = generateKeyPairSync("ed25519");
    const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
    const value = { name: "café", n: 2 };
    const jcs = sign(null, Buffer.from(canonicalJson(value)), privateKey);
    const python = sign(null, Buffer.from(asciiEscaped(canonicalJson(value))), privateKey);
    const pretty = sign(null, Buffer.from(JSON.stringify(value, null, 2)), privateKey);
    expect(verifyCanonical(raw, value, jcs)).toBe(true);
    expect(verifyCanonical(raw, value, python)).toBe(true);
    expect(verifyCanonical(raw, value, pretty)).toBe(false);
    expect(verifyCanonical(raw, { ...value, n: 3 }, jcs)).toBe(false);
  });
});
