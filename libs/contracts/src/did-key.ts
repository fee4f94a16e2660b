import crypto, { type KeyObject } from "node:crypto";

/**
 * Ed25519 public keys as multibase (`z6Mk…`, base58btc of the multicodec ed25519-pub prefix and
 * the raw key) and as did:key DIDs (`did:key:z6Mk…`): the federation service publishes its key so
 * in did.json, and RFC 0019 checkpoints name their signer so (signed_by), which lets anyone
 * verify a checkpoint from the checkpoint alone.
 */

/** multibase base58btc ("z") of the multicodec ed25519-pub prefix 0xed 0x01 and the raw key. */
export function multibaseEd25519(raw: Buffer): string {
  return `z${base58btc(Buffer.concat([Buffer.from([0xed, 0x01]), raw]))}`;
}

/** The raw key of a `z6Mk…` multibase value, or null when it is not an Ed25519 public key. */
export function rawFromMultibase(value: string): Buffer | null {
  if (!value.startsWith("z") || value.length > 100) return null;
  const bytes = base58btcDecode(value.slice(1));
  if (!bytes || bytes.length !== 34 || bytes[0] !== 0xed || bytes[1] !== 0x01) return null;
  return bytes.subarray(2);
}

/** A public KeyObject from 32 raw Ed25519 bytes. */
export function ed25519PublicKey(raw: Buffer): KeyObject {
  return crypto.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
}

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

function base58btc(bytes: Buffer): string {
  let value = BigInt(`0x${bytes.toString("hex") || "0"}`);
  let out = "";
  while (value > 0n) {
    out = ALPHABET[Number(value % 58n)] + out;
    value /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    out = `1${out}`;
  }
  return out;
}

function base58btcDecode(text: string): Buffer | null {
  let value = 0n;
  for (const char of text) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) return null;
    value = value * 58n + BigInt(digit);
  }
  let hex = value === 0n ? "" : value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  const zeros = text.length - text.replace(/^1+/, "").length;
  return Buffer.concat([Buffer.alloc(zeros), Buffer.from(hex, "hex")]);
}

/** The did:key of an Ed25519 public key (W3C did:key method): `did:key:` and its multibase. */
export const didKeyOf = (raw: Buffer): string => `did:key:${multibaseEd25519(raw)}`;

/** The public key a `did:key:z6Mk…` names, or null when it names no Ed25519 key. */
export function publicKeyOfDidKey(did: string): KeyObject | null {
  if (!did.startsWith("did:key:")) return null;
  const raw = rawFromMultibase(did.slice("did:key:".length));
  return raw ? ed25519PublicKey(raw) : null;
}
