import crypto, { type KeyObject } from "node:crypto";
import { multibaseEd25519 } from "@intentmesh/contracts";
import fs from "node:fs";
import path from "node:path";

/**
 * The server's did:web identity and its Ed25519 signing key. The key comes from configuration
 * (a PEM file or a secret), identical on every replica, so all replicas sign alike and publish
 * one did.json; without configuration a development key is generated once under the data
 * directory. The private key never leaves this module's KeyObject: it is not logged, not put in
 * an error, and not serialised anywhere but the development key file (mode 0600).
 */
export interface ServerIdentity {
  serverUrl: string;
  did: string;
  /** The verification method that signs: `<did>#key-1`; the `keyid` of every signature. */
  keyId: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** The 32 raw bytes of the public key. */
  publicKeyRaw: Buffer;
  /** Where the key came from: "configured" or "development" (never the key itself). */
  keySource: "configured" | "development";
}

export interface KeySource {
  /** A PKCS#8 PEM given directly (FEDERATION_SIGNING_KEY, from a secret). */
  pem?: string;
  /** A file holding a PKCS#8 PEM (FEDERATION_SIGNING_KEY_FILE). */
  file?: string;
  /** Where a development key is kept when neither is given. */
  dataDir: string;
}

export const DEV_KEY_FILE = "federation/signing-key.pem";

/** Loads the configured key, or the development key (generating it on first use). Throws on a key that is not Ed25519. */
export function loadSigningKey(source: KeySource): { privateKey: KeyObject; source: ServerIdentity["keySource"]; file?: string } {
  if (source.pem?.trim()) return { privateKey: ed25519PrivateKey(source.pem, "FEDERATION_SIGNING_KEY"), source: "configured" };
  if (source.file?.trim()) return { privateKey: ed25519PrivateKey(fs.readFileSync(source.file, "utf8"), "FEDERATION_SIGNING_KEY_FILE"), source: "configured" };
  const file = path.resolve(source.dataDir, DEV_KEY_FILE);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const { privateKey } = crypto.generateKeyPairSync("ed25519");
    // wx: two replicas starting at once on a shared volume do not overwrite each other's key.
    try {
      fs.writeFileSync(file, privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600, flag: "wx" });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
  return { privateKey: ed25519PrivateKey(fs.readFileSync(file, "utf8"), file), source: "development", file };
}

function ed25519PrivateKey(pem: string, origin: string): KeyObject {
  let key: KeyObject;
  try {
    key = crypto.createPrivateKey(pem);
  } catch {
    // The PEM itself is never repeated: it is the secret.
    throw new Error(`${origin} does not hold a readable PKCS#8 PEM private key`);
  }
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`${origin} holds a ${key.asymmetricKeyType} key; federation signs with Ed25519`);
  return key;
}

/**
 * did:web of a server URL (did:web method spec): the host, a port percent-encoded as %3A, and
 * path segments joined by colons. `https://fed.example.org` -> `did:web:fed.example.org`.
 */
export function didFromServerUrl(serverUrl: string): string {
  const url = new URL(serverUrl);
  const host = url.port ? `${url.hostname}%3A${url.port}` : url.hostname;
  const segments = url.pathname.split("/").filter(Boolean).map(encodeURIComponent);
  return ["did:web", host, ...segments].join(":");
}

/** Where a server's did.json lives: `<server_url>/.well-known/did.json`, or `<server_url>/did.json` when the URL has a path. */
export function didDocumentUrl(serverUrl: string): string {
  const url = new URL(serverUrl);
  const base = url.pathname.replace(/\/+$/, "");
  return `${url.origin}${base ? `${base}/did.json` : "/.well-known/did.json"}`;
}

/** The origin and path of a server URL without a trailing slash: two spellings of one server compare equal. */
export function normalServerUrl(serverUrl: string): string {
  const url = new URL(serverUrl);
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

export function serverIdentity(serverUrl: string, privateKey: KeyObject, keySource: ServerIdentity["keySource"]): ServerIdentity {
  const normal = normalServerUrl(serverUrl);
  const did = didFromServerUrl(normal);
  const publicKey = crypto.createPublicKey(privateKey);
  const publicKeyRaw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  return { serverUrl: normal, did, keyId: `${did}#key-1`, privateKey, publicKey, publicKeyRaw, keySource };
}

/** The did.json of this server (did:web, Ed25519VerificationKey2020). */
export function didDocument(identity: ServerIdentity) {
  return {
    "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/ed25519-2020/v1"],
    id: identity.did,
    verificationMethod: [
      {
        id: identity.keyId,
        type: "Ed25519VerificationKey2020",
        controller: identity.did,
        publicKeyMultibase: multibaseEd25519(identity.publicKeyRaw),
        publicKeyBase64: identity.publicKeyRaw.toString("base64"),
      },
    ],
    authentication: [identity.keyId],
    assertionMethod: [identity.keyId],
  };
}

// Ed25519 keys as multibase and did:key values live in libs/contracts (did-key.ts): the intents
// service verifies checkpoint signatures with them too.
export { ed25519PublicKey, multibaseEd25519, rawFromMultibase } from "@intentmesh/contracts";
