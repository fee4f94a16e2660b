import crypto, { type KeyObject } from "node:crypto";

/**
 * RFC 9421 HTTP message signatures with Ed25519 (node:crypto), over the request's method, target
 * URI, Content-Digest (RFC 9530, sha-256 of the exact body bytes), Content-Type and
 * Idempotency-Key, with created / expires / nonce / keyid / alg parameters. One signature label,
 * `fed`. Only the narrow form this server produces is accepted: every covered component listed
 * below, in this order, and nothing else; a verifier that accepts less would let a signature of
 * one body or one endpoint be replayed on another.
 */
export const SIGNATURE_LABEL = "fed";
export const COVERED_COMPONENTS = ["@method", "@target-uri", "content-digest", "content-type", "idempotency-key"] as const;
/** How far `created` may lie from our clock, either way (clock skew between servers). */
export const MAX_SKEW_SECONDS = 300;
/** Lifetime of a signature we produce, and the longest we accept. */
export const SIGNATURE_LIFETIME_SECONDS = 300;

export interface OutgoingRequest {
  method: string;
  targetUri: string;
  body: string;
  idempotencyKey: string;
}

export interface SigningKey {
  keyId: string;
  privateKey: KeyObject;
}

export function contentDigest(body: string | Buffer): string {
  return `sha-256=:${crypto.createHash("sha256").update(body).digest("base64")}:`;
}

export interface SignedHeaders {
  "content-type": string;
  "content-digest": string;
  "idempotency-key": string;
  "signature-input": string;
  signature: string;
  [name: string]: string;
}

/** The headers that make `request` a signed request: Content-Type, Content-Digest, Idempotency-Key, Signature-Input, Signature. */
export function signRequest(request: OutgoingRequest, key: SigningKey, nowMs: number, nonce = crypto.randomBytes(16).toString("base64url")): SignedHeaders {
  const created = Math.floor(nowMs / 1000);
  const headers = {
    "content-type": "application/json",
    "content-digest": contentDigest(request.body),
    "idempotency-key": request.idempotencyKey,
  };
  const params = signatureParams({ created, expires: created + SIGNATURE_LIFETIME_SECONDS, nonce, keyid: key.keyId });
  const base = signatureBase(request.method, request.targetUri, headers, params);
  const signature = crypto.sign(null, Buffer.from(base, "utf8"), key.privateKey).toString("base64");
  return { ...headers, "signature-input": `${SIGNATURE_LABEL}=${params}`, signature: `${SIGNATURE_LABEL}=:${signature}:` };
}

interface Params {
  created: number;
  expires: number;
  nonce: string;
  keyid: string;
}

function signatureParams(p: Params): string {
  const list = COVERED_COMPONENTS.map((c) => `"${c}"`).join(" ");
  return `(${list});created=${p.created};expires=${p.expires};nonce="${p.nonce}";keyid="${p.keyid}";alg="ed25519"`;
}

function signatureBase(method: string, targetUri: string, headers: Record<string, string>, params: string): string {
  const lines = [`"@method": ${method.toUpperCase()}`, `"@target-uri": ${targetUri}`];
  for (const name of COVERED_COMPONENTS.slice(2)) lines.push(`"${name}": ${(headers[name] ?? "").trim()}`);
  lines.push(`"@signature-params": ${params}`);
  return lines.join("\n");
}

export class SignatureError extends Error {
  override readonly name = "SignatureError";
}

export interface ParsedSignature {
  keyid: string;
  /** The DID part of keyid (before '#'). */
  did: string;
  nonce: string;
  created: number;
  expires: number;
  /** Checks the Ed25519 signature with a public key. */
  verify(publicKey: KeyObject): boolean;
}

const INPUT = /^fed=(\("@method" "@target-uri" "content-digest" "content-type" "idempotency-key"\);created=(\d{1,12});expires=(\d{1,12});nonce="([A-Za-z0-9_\-+/=]{8,128})";keyid="([\x21\x23-\x5b\x5d-\x7e]{1,1024})";alg="ed25519")$/;
const SIGNATURE = /^fed=:([A-Za-z0-9+/]{86}==):$/;

/**
 * Checks everything but the key: the headers are present and well formed, the digest matches the
 * body, the time window holds. Throws SignatureError with a sentence naming what failed.
 */
export function parseSignedRequest(
  request: { method: string; targetUri: string; headers: Record<string, string>; body: string },
  nowMs: number,
): ParsedSignature {
  const h = request.headers;
  const input = INPUT.exec((h["signature-input"] ?? "").trim());
  if (!input) throw new SignatureError("Signature-Input is missing or does not cover @method, @target-uri, content-digest, content-type and idempotency-key with created, expires, nonce, keyid and alg=ed25519");
  const signature = SIGNATURE.exec((h.signature ?? "").trim());
  if (!signature) throw new SignatureError("Signature is missing or is not one Ed25519 signature labelled fed");
  if (!h["idempotency-key"]) throw new SignatureError("the signed Idempotency-Key header is missing");
  if ((h["content-type"] ?? "").split(";")[0]!.trim().toLowerCase() !== "application/json") throw new SignatureError("the signed Content-Type must be application/json");
  if ((h["content-digest"] ?? "").trim() !== contentDigest(request.body)) throw new SignatureError("Content-Digest does not match the body");
  const [, params, createdText, expiresText, nonce, keyid] = input as unknown as [string, string, string, string, string, string];
  const created = Number(createdText);
  const expires = Number(expiresText);
  const now = Math.floor(nowMs / 1000);
  if (Math.abs(now - created) > MAX_SKEW_SECONDS) throw new SignatureError("the signature's created time is outside the accepted window (5 minutes either way)");
  if (expires <= now) throw new SignatureError("the signature has expired");
  if (expires <= created || expires - created > SIGNATURE_LIFETIME_SECONDS) throw new SignatureError(`a signature may live at most ${SIGNATURE_LIFETIME_SECONDS} seconds`);
  const hash = keyid.indexOf("#");
  if (hash <= 0 || !keyid.startsWith("did:web:")) throw new SignatureError("keyid must be a did:web verification method (did:web:host#key)");
  const base = signatureBase(request.method, request.targetUri, h, params);
  const bytes = Buffer.from(signature[1]!, "base64");
  return {
    keyid,
    did: keyid.slice(0, hash),
    nonce,
    created,
    expires,
    verify: (publicKey) => {
      try {
        return crypto.verify(null, Buffer.from(base, "utf8"), publicKey, bytes);
      } catch {
        return false;
      }
    },
  };
}
