import type { KeyObject } from "node:crypto";
import { z } from "zod";
import type { Clock } from "@intentmesh/contracts";
import { guardedFetch, type GuardedFetchOptions } from "@intentmesh/ssrf";
import { didDocumentUrl, didFromServerUrl, ed25519PublicKey, rawFromMultibase } from "./identity";

const VerificationMethod = z.object({
  id: z.string().max(1024),
  type: z.string().max(100),
  controller: z.string().max(1024).optional(),
  publicKeyMultibase: z.string().max(200).optional(),
  publicKeyBase64: z.string().max(200).optional(),
});
const DidDocument = z.object({ id: z.string().max(1024), verificationMethod: z.array(VerificationMethod).max(20) });

export class DidResolutionError extends Error {
  override readonly name = "DidResolutionError";
}

/**
 * Fetches a peer's did.json through the SSRF guard and keeps its keys for `ttlMs` (per process:
 * each replica fetches for itself; a peer's key rotation is seen within the TTL, and an unknown
 * key id fetches again at once).
 */
export class DidResolver {
  private readonly cache = new Map<string, { keys: Map<string, KeyObject>; fetchedAt: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly outbound: () => GuardedFetchOptions,
  ) {}

  /** The public key of `keyId` published by the server at `serverUrl`, whose DID must be the keyId's DID. */
  async publicKey(serverUrl: string, keyId: string): Promise<KeyObject> {
    const did = didFromServerUrl(serverUrl);
    if (!keyId.startsWith(`${did}#`)) throw new DidResolutionError(`keyid ${keyId} is not a key of ${did}`);
    const now = this.clock.now().getTime();
    let entry = this.cache.get(did);
    if (!entry || now - entry.fetchedAt > this.ttlMs || !entry.keys.has(keyId)) {
      entry = { keys: await this.fetchKeys(serverUrl, did), fetchedAt: now };
      this.cache.set(did, entry);
      if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value!);
    }
    const key = entry.keys.get(keyId);
    if (!key) throw new DidResolutionError(`${did} publishes no key ${keyId}`);
    return key;
  }

  private async fetchKeys(serverUrl: string, did: string): Promise<Map<string, KeyObject>> {
    const response = await guardedFetch(didDocumentUrl(serverUrl), { method: "GET", headers: { accept: "application/did+json, application/json" } }, { ...this.outbound(), maxResponseBytes: 64 * 1024, maxRedirects: 0 });
    if (response.status !== 200) throw new DidResolutionError(`${didDocumentUrl(serverUrl)} answered ${response.status}`);
    let document: z.infer<typeof DidDocument>;
    try {
      document = DidDocument.parse(response.json());
    } catch {
      throw new DidResolutionError(`${didDocumentUrl(serverUrl)} is not a DID document`);
    }
    if (document.id !== did) throw new DidResolutionError(`the DID document at ${didDocumentUrl(serverUrl)} is for ${document.id}, not ${did}`);
    const keys = new Map<string, KeyObject>();
    for (const method of document.verificationMethod) {
      const id = method.id.startsWith("#") ? `${did}${method.id}` : method.id;
      if (!id.startsWith(`${did}#`)) continue;
      const raw = method.publicKeyMultibase ? rawFromMultibase(method.publicKeyMultibase) : method.publicKeyBase64 ? Buffer.from(method.publicKeyBase64, "base64") : null;
      if (!raw || raw.length !== 32) continue;
      keys.set(id, ed25519PublicKey(raw));
    }
    return keys;
  }
}
