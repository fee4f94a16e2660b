import { createPublicKey, verify as verifySignatureBytes, type KeyObject } from "node:crypto";

/**
 * RFC-0018 key material, pure: public key spellings, did:key, canonical JSON, Ed25519 checks.
 * docs/identity.md says which bytes each signature covers.
 */

/** DER prefix of an Ed25519 SubjectPublicKeyInfo: what "MCowBQYDK2VwAyEA..." (the clients' docs) decodes to, before the 32 key bytes. */
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
/** multicodec ed25519-pub, varint-encoded: the prefix of a did:key's key bytes. */
const MULTICODEC_ED25519 = Buffer.from([0xed, 0x01]);

/** base64 or base64url, padded or not, into bytes; null when the text is neither. */
export function decodeBase64Any(text: string): Buffer | null {
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) return null;
  const normal = text.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  if (normal.length % 4 === 1) return null;
  return Buffer.from(normal, "base64");
}

export const base64url = (bytes: Buffer): string => bytes.toString("base64url");

/**
 * The 32 bytes of an Ed25519 public key from any spelling a client sends: `ed25519:<base64url>`
 * (RFC-0018 §1.1), bare base64 or base64url of the 32 bytes (the MCP server), or base64 of the
 * SubjectPublicKeyInfo DER (the Python client's docs). Null when it is none of them.
 */
export function parsePublicKey(text: string): Buffer | null {
  const body = text.toLowerCase().startsWith("ed25519:") ? text.slice("ed25519:".length) : text;
  const bytes = decodeBase64Any(body);
  if (!bytes) return null;
  if (bytes.length === 32) return bytes;
  if (bytes.length === 44 && bytes.subarray(0, 12).equals(SPKI_PREFIX)) return bytes.subarray(12);
  return null;
}

/** The one spelling a key is stored and answered in: `ed25519:<base64url, no padding>`. */
export const canonicalPublicKey = (raw: Buffer): string => `ed25519:${base64url(raw)}`;

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

export function base58btc(bytes: Buffer): string {
  let value = BigInt(`0x${bytes.toString("hex") || "0"}`);
  let out = "";
  while (value > 0n) {
    out = BASE58[Number(value % 58n)]! + out;
    value /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    out = `1${out}`;
  }
  return out;
}

/** did:key of an Ed25519 key (W3C did:key method): `did:key:z` + base58btc(0xed01 | key). */
export const didKeyOf = (raw: Buffer): string => `did:key:z${base58btc(Buffer.concat([MULTICODEC_ED25519, raw]))}`;

/** The Ed25519 public key a did:key names; null for anything else. */
export function publicKeyOfDid(did: string): Buffer | null {
  const match = /^did:key:z([1-9A-HJ-NP-Za-km-z]+)(#.*)?$/.exec(did);
  if (!match) return null;
  let value = 0n;
  for (const ch of match[1]!) value = value * 58n + BigInt(BASE58.indexOf(ch));
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  const bytes = Buffer.from(hex, "hex");
  if (bytes.length !== 34 || !bytes.subarray(0, 2).equals(MULTICODEC_ED25519)) return null;
  return bytes.subarray(2);
}

function keyObject(raw: Buffer): KeyObject {
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: base64url(raw) }, format: "jwk" });
}

/** The 64 bytes of a signature in base64url or base64; null otherwise. */
export function parseSignature(text: string): Buffer | null {
  const bytes = decodeBase64Any(text);
  return bytes && bytes.length === 64 ? bytes : null;
}

/** True when `signature` is an Ed25519 signature of `message` by `publicKey`. Never throws. */
export function verifyEd25519(publicKey: Buffer, message: Buffer, signature: Buffer): boolean {
  try {
    return verifySignatureBytes(null, message, keyObject(publicKey), signature);
  } catch {
    return false;
  }
}

/**
 * Canonical JSON as RFC-0018 §3.2 and Security 5 ask (RFC 8785, JCS): object keys sorted by
 * UTF-16 code units, no whitespace, strings and numbers as ECMAScript serializes them (what
 * JSON.stringify writes for a number already is JCS's form).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(",")}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(",")}}`;
}

/**
 * The same text with every character above U+007F escaped as \uXXXX: what Python's
 * `json.dumps(sort_keys=True, separators=(",", ":"))` writes (ensure_ascii is its default), so a
 * Python agent that canonicalizes that way verifies too (docs/identity.md).
 */
export const asciiEscaped = (json: string): string => json.replace(/[\u0080-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** The byte strings a signature over `value` may cover: JCS, and its ASCII-escaped form when that differs. */
export function canonicalForms(value: unknown): Buffer[] {
  const jcs = canonicalJson(value);
  const ascii = asciiEscaped(jcs);
  return ascii === jcs ? [Buffer.from(jcs, "utf8")] : [Buffer.from(jcs, "utf8"), Buffer.from(ascii, "utf8")];
}

/** True when the signature verifies over any canonical form of `value`. */
export function verifyCanonical(publicKey: Buffer, value: unknown, signature: Buffer): boolean {
  return canonicalForms(value).some((message) => verifyEd25519(publicKey, message, signature));
}
