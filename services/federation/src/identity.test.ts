import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEV_KEY_FILE, didDocument, didDocumentUrl, didFromServerUrl, ed25519PublicKey, loadSigningKey, multibaseEd25519, rawFromMultibase, serverIdentity } from "./identity";

const dirs: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "im-fed-key-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("did:web identity", () => {
  it("derives the DID from the server URL (port percent-encoded, path segments colon-separated)", () => {
    expect(didFromServerUrl("https://fed.example.org")).toBe("did:web:fed.example.org");
    expect(didFromServerUrl("https://fed.example.org/")).toBe("did:web:fed.example.org");
    expect(didFromServerUrl("http://127.0.0.1:4100")).toBe("did:web:127.0.0.1%3A4100");
    expect(didFromServerUrl("https://example.org/teams/a")).toBe("did:web:example.org:teams:a");
    expect(didDocumentUrl("https://fed.example.org")).toBe("https://fed.example.org/.well-known/did.json");
    expect(didDocumentUrl("https://example.org/teams/a/")).toBe("https://example.org/teams/a/did.json");
  });

  it("publishes a did.json whose key verifies the server's signatures", () => {
    const { privateKey } = crypto.generateKeyPairSync("ed25519");
    const identity = serverIdentity("https://fed.example.org/", privateKey, "configured");
    const doc = didDocument(identity);
    expect(doc.id).toBe("did:web:fed.example.org");
    expect(doc.verificationMethod[0]!.id).toBe("did:web:fed.example.org#key-1");
    expect(doc.verificationMethod[0]!.publicKeyMultibase).toMatch(/^z6Mk/);
    const raw = rawFromMultibase(doc.verificationMethod[0]!.publicKeyMultibase)!;
    expect(raw.equals(Buffer.from(doc.verificationMethod[0]!.publicKeyBase64, "base64"))).toBe(true);
    const message = Buffer.from("hello");
    expect(crypto.verify(null, message, ed25519PublicKey(raw), crypto.sign(null, message, privateKey))).toBe(true);
    expect(JSON.stringify(doc)).not.toContain(privateKey.export({ format: "jwk" }).d!);
  });

  it("encodes multibase keys as the did:key test vector does", () => {
    // did:key spec example: the public key 0x2e6fcce3…, encoded z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp.
    const raw = Buffer.from("3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29", "hex");
    const encoded = multibaseEd25519(raw);
    expect(rawFromMultibase(encoded)!.equals(raw)).toBe(true);
    expect(encoded).toBe("z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp");
    expect(rawFromMultibase("z111")).toBeNull();
    expect(rawFromMultibase("m6Mk")).toBeNull();
  });

  it("generates a development key once under the data directory (mode 0600) and reuses it", () => {
    const dataDir = tmp();
    const first = loadSigningKey({ dataDir });
    expect(first.source).toBe("development");
    const file = path.join(dataDir, DEV_KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const second = loadSigningKey({ dataDir });
    expect(second.privateKey.export({ format: "jwk" }).x).toBe(first.privateKey.export({ format: "jwk" }).x);
  });

  it("takes a configured key (PEM or file) before any development key, the same on every replica", () => {
    const { privateKey } = crypto.generateKeyPairSync("ed25519");
    const pem = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
    const dataDir = tmp();
    const fromPem = loadSigningKey({ pem, dataDir });
    expect(fromPem.source).toBe("configured");
    const file = path.join(dataDir, "configured.pem");
    fs.writeFileSync(file, pem);
    const fromFile = loadSigningKey({ file, dataDir });
    expect(fromFile.privateKey.export({ format: "jwk" }).x).toBe(fromPem.privateKey.export({ format: "jwk" }).x);
    expect(fs.existsSync(path.join(dataDir, DEV_KEY_FILE))).toBe(false);
  });

  it("refuses a key that is not Ed25519, or not a key, without repeating it", () => {
    const rsa = crypto.generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ format: "pem", type: "pkcs8" }).toString();
    expect(() => loadSigningKey({ pem: rsa, dataDir: tmp() })).toThrow(/rsa key; federation signs with Ed25519/);
    const secret = "-----BEGIN PRIVATE KEY-----\nnot-really-a-key-SECRET\n-----END PRIVATE KEY-----";
    try {
      loadSigningKey({ pem: secret, dataDir: tmp() });
      throw new Error("expected a refusal");
    } catch (error) {
      expect((error as Error).message).toContain("FEDERATION_SIGNING_KEY");
      expect((error as Error).message).not.toContain("SECRET");
    }
  });
});
