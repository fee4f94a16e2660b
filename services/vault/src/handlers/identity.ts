import { randomBytes, randomUUID } from "node:crypto";
import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { appError, errors, isoTimestamp, vaultEvents, type AgentIdentity, type Caller } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { isAdmin, type VaultContext } from "../context";
import { identityChallenges, identityKeys } from "../db/schema";
import { canonicalPublicKey, decodeBase64Any, didKeyOf, parsePublicKey, parseSignature, publicKeyOfDid, verifyCanonical, verifyEd25519 } from "../identity/keys";
import { vaultEvent, writeVaultEvents } from "../events";
import { parseTime } from "./vaults";

/**
 * RFC-0018 agent identity: Ed25519 public keys registered by challenge and response, rotated with
 * a signature of the old key (which keeps verifying new signatures for an overlap window),
 * revoked by the agent or an admin. Only public keys are stored. docs/identity.md.
 */

type KeyRow = typeof identityKeys.$inferSelect;

/** What the challenge signature covers, as answered to the client (docs/identity.md). */
export const CHALLENGE_SIGNS = "the UTF-8 bytes of the challenge text exactly as issued (the decoded 32 bytes are accepted too)";

/** Identity writes are the agent's own (X-Agent-ID or the key's principal) or an admin's. */
function assertActsFor(caller: Caller, agentId: string): void {
  if (caller.actor === agentId || caller.agent_id === agentId || isAdmin(caller)) return;
  throw errors.forbidden(`only agent ${agentId} itself (or an admin) manages its identity; acting as ${caller.actor}`, { agent_id: agentId });
}

function publicKeyOrRefuse(text: string, field: string): Buffer {
  const raw = parsePublicKey(text);
  if (!raw) throw errors.validation(`${field} is not an Ed25519 public key (ed25519:<base64url of 32 bytes>, or base64 of the key or of its SubjectPublicKeyInfo)`, [{ path: field, message: "not an Ed25519 public key", code: "custom" }]);
  return raw;
}

function signatureOrRefuse(text: string, field = "signature"): Buffer {
  const raw = parseSignature(text);
  if (!raw) throw errors.validation(`${field} is not a 64-byte Ed25519 signature in base64url (or base64)`, [{ path: field, message: "not a 64-byte signature", code: "custom" }]);
  return raw;
}

async function currentKey(db: VaultContext["db"] | Tx, agentId: string): Promise<KeyRow | undefined> {
  const [row] = await db
    .select()
    .from(identityKeys)
    .where(and(eq(identityKeys.agentId, agentId), isNull(identityKeys.retiredAt), isNull(identityKeys.revokedAt)));
  return row;
}

async function identityOf(db: VaultContext["db"] | Tx, agentId: string, now: Date): Promise<AgentIdentity> {
  const current = await currentKey(db, agentId);
  if (!current) throw appError("IDENTITY_NOT_FOUND", `agent ${agentId} has no registered identity`, { agent_id: agentId });
  const previous = await db
    .select()
    .from(identityKeys)
    .where(and(eq(identityKeys.agentId, agentId), sql`${identityKeys.retiredAt} is not null`, isNull(identityKeys.revokedAt)))
    .orderBy(desc(identityKeys.retiredAt))
    .limit(100);
  const overlap = previous.find((key) => key.overlapUntil && key.overlapUntil.getTime() > now.getTime());
  return {
    agent_id: agentId,
    public_key: current.publicKey,
    did: current.did,
    key_algorithm: "Ed25519",
    registered_at: isoTimestamp(current.registeredAt),
    key_expires_at: current.keyExpiresAt ? isoTimestamp(current.keyExpiresAt) : null,
    previous_keys: previous.map((key) => key.publicKey),
    overlap_until: overlap?.overlapUntil ? isoTimestamp(overlap.overlapUntil) : null,
    metadata: {},
  };
}

/** §2.2: a key to register; answers a single-use challenge (§2.3). 409 when the agent has a key (rotate instead). */
export async function registerIdentity(ctx: VaultContext, agentId: string, body: { public_key: string; key_expires_at?: string | null | undefined }, caller: Caller) {
  assertActsFor(caller, agentId);
  const raw = publicKeyOrRefuse(body.public_key, "public_key");
  const now = ctx.clock.now();
  const keyExpiresAt = parseTime(body.key_expires_at);
  if (keyExpiresAt && keyExpiresAt.getTime() <= now.getTime()) throw errors.validation("key_expires_at is in the past", [{ path: "key_expires_at", message: "must be in the future", code: "custom" }]);
  if (await currentKey(ctx.db, agentId)) throw appError("IDENTITY_EXISTS", `agent ${agentId} already has a registered key; rotate it (POST /agents/{id}/identity/rotate)`, { agent_id: agentId });
  const challenge = randomBytes(32).toString("base64url");
  const expiresAt = new Date(now.getTime() + ctx.identity.challengeTtlMs);
  await ctx.db.insert(identityChallenges).values({ id: randomUUID(), agentId, publicKey: canonicalPublicKey(raw), challenge, keyExpiresAt, createdAt: now, expiresAt });
  return { agent_id: agentId, challenge, challenge_expires_at: isoTimestamp(expiresAt), signs: CHALLENGE_SIGNS };
}

/**
 * §2.4-2.5: the signed challenge. The signature must verify over the challenge text (or its
 * decoded bytes) with the key being registered; then, in one transaction, the challenge is used
 * up (a conditional update: a replay finds it used) and the key becomes the agent's current key
 * (a partial unique index: of two concurrent registrations one wins, the other is a 409).
 */
export async function completeChallenge(ctx: VaultContext, agentId: string, body: { challenge: string; signature: string }, caller: Caller): Promise<AgentIdentity> {
  assertActsFor(caller, agentId);
  const signature = signatureOrRefuse(body.signature);
  const now = ctx.clock.now();
  const [challenge] = await ctx.db
    .select()
    .from(identityChallenges)
    .where(and(eq(identityChallenges.challenge, body.challenge), eq(identityChallenges.agentId, agentId)));
  if (!challenge || challenge.usedAt || challenge.expiresAt.getTime() <= now.getTime()) {
    throw appError("CHALLENGE_INVALID", "the challenge is unknown for this agent, already used or expired: register again for a new one", { agent_id: agentId });
  }
  const key = parsePublicKey(challenge.publicKey)!;
  const decoded = decodeBase64Any(challenge.challenge);
  const signed = verifyEd25519(key, Buffer.from(challenge.challenge, "utf8"), signature) || (decoded !== null && verifyEd25519(key, decoded, signature));
  if (!signed) throw appError("SIGNATURE_REJECTED", "the signature does not verify against the key being registered", { agent_id: agentId });
  const identity = await ctx.db.transaction(async (tx) => {
    const [used] = await tx
      .update(identityChallenges)
      .set({ usedAt: now })
      .where(and(eq(identityChallenges.id, challenge.id), isNull(identityChallenges.usedAt)))
      .returning();
    if (!used) throw appError("CHALLENGE_INVALID", "the challenge was used meanwhile: register again for a new one", { agent_id: agentId });
    const [inserted] = await tx
      .insert(identityKeys)
      .values({ id: randomUUID(), agentId, publicKey: challenge.publicKey, did: didKeyOf(key), registeredAt: now, keyExpiresAt: challenge.keyExpiresAt, registeredBy: caller.principal })
      .onConflictDoNothing()
      .returning();
    if (!inserted) throw appError("IDENTITY_EXISTS", `agent ${agentId} registered a key meanwhile; rotate it instead`, { agent_id: agentId });
    await writeVaultEvents(tx, [vaultEvent(vaultEvents.identityRegistered, { key: agentId, actor: caller.actor, agentId, payload: { agent_id: agentId, public_key: inserted.publicKey, did: inserted.did } })], now);
    return identityOf(tx, agentId, now);
  });
  ctx.published();
  return identity;
}

export async function getIdentity(ctx: VaultContext, agentId: string): Promise<AgentIdentity> {
  return identityOf(ctx.db, agentId, ctx.clock.now());
}

/** The keys that verify a new signature of the agent now: the current one (unless expired) and a rotated one within its overlap window. */
async function verifyingKeys(db: VaultContext["db"], agentId: string, now: Date): Promise<KeyRow[]> {
  const rows = await db
    .select()
    .from(identityKeys)
    .where(and(eq(identityKeys.agentId, agentId), isNull(identityKeys.revokedAt), sql`(${identityKeys.retiredAt} is null or ${identityKeys.overlapUntil} > ${now.toISOString()}::timestamptz)`))
    .orderBy(desc(identityKeys.registeredAt));
  return rows.filter((row) => !row.keyExpiresAt || row.keyExpiresAt.getTime() > now.getTime());
}

/** Which key (if any) verifies `signature` over the canonical JSON of `payload`. */
async function keyThatSigned(ctx: VaultContext, agentId: string, payload: unknown, signature: Buffer, verificationMethod?: string | null): Promise<KeyRow | null> {
  const keys = await verifyingKeys(ctx.db, agentId, ctx.clock.now());
  const named = verificationMethod ? publicKeyOfDid(verificationMethod.split("#")[0]!) : null;
  for (const key of keys) {
    if (named && key.did !== didKeyOf(named)) continue;
    if (verifyCanonical(parsePublicKey(key.publicKey)!, payload, signature)) return key;
  }
  return null;
}

/** §4.2: does this signature verify for the agent now? Answers valid false (200) when it does not. */
export async function verifySignature(ctx: VaultContext, agentId: string, body: { payload: Record<string, unknown>; signature: string }) {
  const now = ctx.clock.now();
  const current = await currentKey(ctx.db, agentId);
  if (!current) throw appError("IDENTITY_NOT_FOUND", `agent ${agentId} has no registered identity`, { agent_id: agentId });
  const signature = parseSignature(body.signature);
  const key = signature ? await keyThatSigned(ctx, agentId, body.payload, signature) : null;
  return { valid: key !== null, agent_id: agentId, did: (key ?? current).did, verified_at: isoTimestamp(now), public_key: key?.publicKey ?? null };
}

/**
 * §5: a new key, authorized by a signature of the current key over the canonical JSON of
 * {action: "rotate", new_public_key, old_public_key}, with the keys as the client wrote them
 * (the Python client) or, when it sent no old key (the MCP server's rotation_proof), the current
 * key in its stored spelling. The old key keeps verifying new signatures until the overlap
 * window ends, and historical ones for ever (previous_keys).
 */
export async function rotateKey(ctx: VaultContext, agentId: string, body: { new_public_key: string; old_public_key?: string | undefined; signature?: string | undefined; rotation_proof?: string | undefined }, caller: Caller): Promise<AgentIdentity> {
  assertActsFor(caller, agentId);
  const newRaw = publicKeyOrRefuse(body.new_public_key, "new_public_key");
  const signature = signatureOrRefuse((body.signature ?? body.rotation_proof)!, body.signature ? "signature" : "rotation_proof");
  const now = ctx.clock.now();
  const current = await currentKey(ctx.db, agentId);
  if (!current) throw appError("IDENTITY_NOT_FOUND", `agent ${agentId} has no registered identity to rotate; register one`, { agent_id: agentId });
  if (body.old_public_key !== undefined) {
    const oldRaw = publicKeyOrRefuse(body.old_public_key, "old_public_key");
    if (canonicalPublicKey(oldRaw) !== current.publicKey) throw appError("KEY_MISMATCH", `old_public_key is not agent ${agentId}'s current key`, { agent_id: agentId, current_public_key: current.publicKey });
  }
  const newKey = canonicalPublicKey(newRaw);
  if (newKey === current.publicKey) throw errors.validation("new_public_key is the current key", [{ path: "new_public_key", message: "must differ from the current key", code: "custom" }]);
  const [revokedBefore] = await ctx.db.select({ id: identityKeys.id }).from(identityKeys).where(and(eq(identityKeys.agentId, agentId), eq(identityKeys.publicKey, newKey), sql`${identityKeys.revokedAt} is not null`));
  if (revokedBefore) throw errors.validation("new_public_key was revoked for this agent and may not come back", [{ path: "new_public_key", message: "revoked key", code: "custom" }]);
  if (current.keyExpiresAt && current.keyExpiresAt.getTime() <= now.getTime()) throw appError("SIGNATURE_REJECTED", "the current key has expired and cannot authorize a rotation; an admin revokes it, then register again", { agent_id: agentId });
  const oldSpellings = body.old_public_key !== undefined ? [body.old_public_key, current.publicKey] : [current.publicKey];
  const newSpellings = [body.new_public_key, newKey];
  const currentRaw = parsePublicKey(current.publicKey)!;
  const authorized = oldSpellings.some((old) => newSpellings.some((next) => verifyCanonical(currentRaw, { action: "rotate", new_public_key: next, old_public_key: old }, signature)));
  if (!authorized) throw appError("SIGNATURE_REJECTED", "the rotation is not signed by the agent's current key", { agent_id: agentId });
  const identity = await ctx.db.transaction(async (tx) => {
    const [retired] = await tx
      .update(identityKeys)
      .set({ retiredAt: now, overlapUntil: new Date(now.getTime() + ctx.identity.rotationOverlapMs) })
      .where(and(eq(identityKeys.id, current.id), isNull(identityKeys.retiredAt), isNull(identityKeys.revokedAt)))
      .returning();
    if (!retired) throw appError("KEY_MISMATCH", `agent ${agentId}'s key changed meanwhile`, { agent_id: agentId });
    const [inserted] = await tx
      .insert(identityKeys)
      .values({ id: randomUUID(), agentId, publicKey: newKey, did: didKeyOf(newRaw), registeredAt: now, keyExpiresAt: null, registeredBy: caller.principal })
      .returning();
    await writeVaultEvents(
      tx,
      [
        vaultEvent(vaultEvents.identityRotated, {
          key: agentId,
          actor: caller.actor,
          agentId,
          payload: { agent_id: agentId, public_key: inserted!.publicKey, did: inserted!.did, previous_public_key: current.publicKey, overlap_until: isoTimestamp(retired.overlapUntil!) },
        }),
      ],
      now,
    );
    return identityOf(tx, agentId, now);
  });
  ctx.published();
  return identity;
}

/**
 * RFC-0018 Security 3: force revocation, without the key's signature (the agent itself or an
 * admin, when the key is compromised). The current key and every key still in an overlap window
 * stop verifying at once; the agent registers again, with a challenge, to have an identity.
 */
export async function revokeIdentity(ctx: VaultContext, agentId: string, reason: string | undefined, caller: Caller) {
  assertActsFor(caller, agentId);
  const now = ctx.clock.now();
  const result = await ctx.db.transaction(async (tx) => {
    const current = await currentKey(tx, agentId);
    if (!current) throw appError("IDENTITY_NOT_FOUND", `agent ${agentId} has no registered identity`, { agent_id: agentId });
    await tx
      .update(identityKeys)
      .set({ revokedAt: now, revokeReason: reason ?? null })
      .where(and(eq(identityKeys.agentId, agentId), isNull(identityKeys.revokedAt), sql`(${identityKeys.retiredAt} is null or ${identityKeys.overlapUntil} > ${now.toISOString()}::timestamptz)`));
    await writeVaultEvents(tx, [vaultEvent(vaultEvents.identityRevoked, { key: agentId, actor: caller.actor, agentId, payload: { agent_id: agentId, public_key: current.publicKey, did: current.did, reason: reason ?? null } })], now);
    return { agent_id: agentId, revoked: true as const, public_key: current.publicKey, revoked_at: isoTimestamp(now) };
  });
  ctx.published();
  return result;
}

/**
 * For the intents service (RFC-0018 §3.4): the proof of a signed event. Never an error for a
 * bad signature: the asker decides (403 PROOF_INVALID).
 */
export async function checkSignature(ctx: VaultContext, input: { agent_id: string; payload: Record<string, unknown>; signature: string; verification_method?: string | null | undefined }) {
  const current = await currentKey(ctx.db, input.agent_id);
  if (!current) return { valid: false, has_identity: false, did: null, reason: `agent ${input.agent_id} has no registered identity` };
  const signature = parseSignature(input.signature);
  if (!signature) return { valid: false, has_identity: true, did: current.did, reason: "the signature is not a 64-byte Ed25519 signature in base64url" };
  const key = await keyThatSigned(ctx, input.agent_id, input.payload, signature, input.verification_method);
  return key
    ? { valid: true, has_identity: true, did: key.did, reason: null }
    : { valid: false, has_identity: true, did: current.did, reason: "the signature does not verify against a current key of the agent (or the named verification_method)" };
}


