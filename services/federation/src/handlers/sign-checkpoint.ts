import crypto from "node:crypto";
import { appError, canonicalJson, didKeyOf, type CheckpointStatement } from "@intentmesh/contracts";
import type { FederationContext } from "../context";
import type { ServerIdentity } from "../identity";

/**
 * Signs an RFC 0019 checkpoint (section 3.3): Ed25519 over the canonical JSON (RFC 8785) of every
 * field but `signature`, with `signed_by` the did:key of this server's key and `anchor` null, as
 * a checkpoint is when it is created (the anchor is added later, and verified on its own).
 *
 * The private key stays in this service. What it signs is built here from a checkpoint's fields,
 * so no caller obtains a signature over bytes of its choosing (the same key signs federation
 * requests, RFC 9421, whose signature bases never start like a JSON object).
 */
export function signCheckpoint(ctx: FederationContext, checkpoint: CheckpointStatement) {
  let identity: ServerIdentity;
  try {
    identity = ctx.checkpointSigner();
  } catch (error) {
    // The reason is about files and configuration, never the key itself.
    ctx.logger.error({ err: error }, "checkpoints: no signing key could be loaded");
    throw appError("SIGNING_UNAVAILABLE", "the server has no signing key to sign checkpoints with: configure FEDERATION_SIGNING_KEY or FEDERATION_SIGNING_KEY_FILE");
  }
  const signedBy = didKeyOf(identity.publicKeyRaw);
  const statement = canonicalJson({ ...checkpoint, signed_by: signedBy, anchor: null });
  const signature = crypto.sign(null, Buffer.from(statement, "utf8"), identity.privateKey).toString("base64url");
  return { signed_by: signedBy, signature };
}
