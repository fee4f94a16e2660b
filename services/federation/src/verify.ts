import type { SignedRequest } from "@intentmesh/contracts";
import { isOutboundError } from "@intentmesh/ssrf";
import type { FederationContext } from "./context";
import { seenNonces } from "./db/schema";
import { DidResolutionError } from "./did-resolver";
import { didFromServerUrl } from "./identity";
import { federationErrors } from "./errors";
import { parseSignedRequest, SignatureError, type ParsedSignature } from "./signatures";

/**
 * Verifies an RFC 9421 signature of a request this server received at `targetUri` (its own
 * public URL of the endpoint, so a signature made for another server or endpoint fails), made
 * by the server at `signerServerUrl`: the keyid's DID must be that server's did:web, its key is
 * fetched from that server's did.json through the SSRF guard, and the nonce must be new
 * (stored until the signature expires). Every failure is 401 SIGNATURE_INVALID.
 */
export async function verifySignedRequest(ctx: FederationContext, request: SignedRequest, targetUri: string, signerServerUrl: string): Promise<ParsedSignature> {
  let parsed: ParsedSignature;
  try {
    parsed = parseSignedRequest({ method: request.method, targetUri, headers: request.headers, body: request.body }, ctx.clock.now().getTime());
  } catch (error) {
    if (error instanceof SignatureError) throw federationErrors.signatureInvalid(error.message);
    throw error;
  }
  const did = didFromServerUrl(signerServerUrl);
  if (parsed.did !== did) throw federationErrors.signatureInvalid(`keyid ${parsed.keyid} is not a key of ${did}`);
  let key;
  try {
    key = await ctx.dids.publicKey(signerServerUrl, parsed.keyid);
  } catch (error) {
    if (error instanceof DidResolutionError || isOutboundError(error)) {
      throw federationErrors.signatureInvalid(`the signer's key could not be obtained: ${error.message}`);
    }
    throw error;
  }
  if (!parsed.verify(key)) throw federationErrors.signatureInvalid("the Ed25519 signature does not verify with the signer's published key");
  // After the signature holds, so a forger cannot fill the table.
  const [fresh] = await ctx.db
    .insert(seenNonces)
    .values({ keyId: parsed.keyid, nonce: parsed.nonce, expiresAt: new Date(parsed.expires * 1000) })
    .onConflictDoNothing()
    .returning({ nonce: seenNonces.nonce });
  if (!fresh) throw federationErrors.signatureInvalid("this signature was already used (replay)");
  return parsed;
}
