import crypto from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "@intentmesh/contracts";
import { pinnedConnector } from "@intentmesh/ssrf";
import { startLoopbackServer, tripwire, type LoopbackServer } from "../../../libs/ssrf/test/support";
import { DidResolutionError, DidResolver } from "../src/did-resolver";
import { didDocument, didFromServerUrl, serverIdentity } from "../src/identity";

/** A peer on loopback serving a did.json; every connect goes through a tripwire (loopback only). */
const servers: LoopbackServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function peer(document: (url: string) => unknown) {
  let url = "";
  const server = await startLoopbackServer((req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(req.url === "/.well-known/did.json" ? document(url) : {}));
  });
  url = server.url;
  servers.push(server);
  return server;
}

describe("DidResolver", () => {
  const wire = tripwire(pinnedConnector);
  const outbound = () => ({ allowLoopback: true, connect: wire.connect, timeoutMs: 2000 });

  it("fetches the signer's key from its did.json through the guard and caches it for the TTL", async () => {
    const key = crypto.generateKeyPairSync("ed25519");
    const server = await peer((url) => didDocument(serverIdentity(url, key.privateKey, "configured")));
    const clock = new ManualClock(new Date());
    const resolver = new DidResolver(clock, 60_000, outbound);
    const identity = serverIdentity(server.url, key.privateKey, "configured");
    const found = await resolver.publicKey(server.url, identity.keyId);
    expect(found.export({ format: "jwk" }).x).toBe(key.publicKey.export({ format: "jwk" }).x);
    await resolver.publicKey(server.url, identity.keyId);
    expect(server.requests.length).toBe(1);
    clock.advance(61_000);
    await resolver.publicKey(server.url, identity.keyId);
    expect(server.requests.length).toBe(2);
    expect(wire.tripped).toEqual([]);
  });

  it("refetches at once for an unknown key id (rotation), and refuses a key the document does not publish", async () => {
    const key = crypto.generateKeyPairSync("ed25519");
    const server = await peer((url) => didDocument(serverIdentity(url, key.privateKey, "configured")));
    const resolver = new DidResolver(new ManualClock(new Date()), 60_000, outbound);
    const identity = serverIdentity(server.url, key.privateKey, "configured");
    await resolver.publicKey(server.url, identity.keyId);
    await expect(resolver.publicKey(server.url, `${identity.did}#key-2`)).rejects.toThrow(DidResolutionError);
    expect(server.requests.length).toBe(2);
  });

  it("refuses a key id of another DID, a document for another DID, and a document that is not one", async () => {
    const key = crypto.generateKeyPairSync("ed25519");
    const resolver = new DidResolver(new ManualClock(new Date()), 60_000, outbound);
    const honest = await peer((url) => didDocument(serverIdentity(url, key.privateKey, "configured")));
    await expect(resolver.publicKey(honest.url, "did:web:evil.example.org#key-1")).rejects.toThrow(/is not a key of/);
    const impostor = await peer(() => didDocument(serverIdentity("https://victim.example.org", key.privateKey, "configured")));
    const impostorId = serverIdentity(impostor.url, key.privateKey, "configured");
    await expect(resolver.publicKey(impostor.url, impostorId.keyId)).rejects.toThrow(/is for did:web:victim.example.org/);
    const junk = await peer(() => ({ hello: "world" }));
    await expect(resolver.publicKey(junk.url, serverIdentity(junk.url, key.privateKey, "configured").keyId)).rejects.toThrow(/not a DID document/);
  });

  it("never fetches a did.json from a refused address", async () => {
    const refusing = tripwire("none");
    const resolver = new DidResolver(new ManualClock(new Date()), 60_000, () => ({ connect: refusing.connect }));
    for (const url of ["http://169.254.169.254", "http://[fd00:ec2::254]", "https://10.0.0.1", "http://127.0.0.1:9"]) {
      await expect(resolver.publicKey(url, `${didFromServerUrl(url)}#key-1`), url).rejects.toMatchObject({ code: "SSRF_BLOCKED" });
    }
    expect(refusing.calls).toEqual([]);
  });
});
