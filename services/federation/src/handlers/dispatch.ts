import crypto, { randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { AppError, type CommandResult, federationCommands, federationEvents, intentsCommands, type Caller, type DispatchBody, isoTimestamp } from "@intentmesh/contracts";
import { enqueueSystemEvents } from "@intentmesh/bus";
import { guardedFetch } from "@intentmesh/ssrf";
import type { FederationContext } from "../context";
import { dispatches, outbox } from "../db/schema";
import { asOutboundAppError, federationErrors, remoteError } from "../errors";
import { federationEvent } from "../events";
import { didFromServerUrl } from "../identity";
import { signRequest } from "../signatures";
import type { Envelope } from "../envelope";
import { assertEnabled, localAgent, peerServerUrl } from "./guards";
import { peerKeyHeader } from "../settings";

type DispatchRow = typeof dispatches.$inferSelect;

/**
 * POST /api/v1/federation/dispatch: sends an intent to an agent on another server as a signed
 * envelope and answers with the receiver's verdict (synchronously: SPEC 8's 10-second timeout and
 * SPEC 7's 502 need the outcome). The idempotency key (body or Idempotency-Key header) is a
 * unique row per principal: a retry on any replica after any restart gets the stored answer; a
 * retry after a failure sends again with the same dispatch id and key, which the receiver
 * deduplicates.
 */
export async function dispatch(ctx: FederationContext, body: DispatchBody, headerKey: string | null, caller: Caller) {
  assertEnabled(ctx);
  const target = peerServerUrl(ctx, body.target_server, "target_server");
  if (body.callback_url) peerServerUrl(ctx, body.callback_url, "callback_url");
  if (target === ctx.identity.serverUrl) throw federationErrors.loop("target_server is this server: a dispatch to oneself would loop", { target_server: target });
  if (body.agent_id) {
    const agent = await localAgent(ctx, body.agent_id);
    if (agent && !agent.origin_server_url) {
      throw federationErrors.loop(`agent ${body.agent_id} is registered on this server; assign it locally instead of dispatching`, { agent_id: body.agent_id });
    }
  }
  // Read with the caller's rights: only an intent the caller may read can be sent away.
  const intent = await ctx.client.request(intentsCommands.get, caller, { intent_id: body.intent_id });

  const key = body.idempotency_key ?? headerKey ?? randomUUID();
  const { idempotency_key: _key, callback_url: _callback, ...fingerprinted } = body;
  const requestHash = crypto.createHash("sha256").update(JSON.stringify({ ...fingerprinted, target_server: target })).digest("hex");
  const row = await claim(ctx, caller.principal, key, requestHash, { intentId: intent.id, targetServer: target, agentId: body.agent_id ?? null });
  if (row.status === "accepted") return row.answer!;

  const envelope: Envelope = {
    envelope_version: "1",
    dispatch_id: row.dispatchId,
    idempotency_key: key,
    source_server: ctx.identity.serverUrl,
    source_did: ctx.identity.did,
    target_server: target,
    intent_id: intent.id,
    intent_title: intent.title,
    intent_description: intent.description,
    intent_state: intent.state,
    constraints: intent.constraints,
    agent_id: body.agent_id ?? null,
    delegation_scope: body.delegation_scope ?? { permissions: [], denied_operations: [], max_delegation_depth: 0 },
    governance: body.federation_policy ?? {},
    callback_url: `${ctx.identity.serverUrl}/api/v1/federation/callbacks/${row.dispatchId}`,
    trace_context: body.trace_context ?? {},
    created_at: isoTimestamp(ctx.clock.now()),
  };
  const text = JSON.stringify(envelope);
  const targetUri = `${target}/api/v1/federation/receive`;
  const headers = signRequest({ method: "POST", targetUri, body: text, idempotencyKey: key }, ctx.identity, ctx.clock.now().getTime());

  let failure: AppError;
  try {
    // SPEC 5.1 on the peer's side: the key it gave this server (FEDERATION_PEERS[].api_key), beside the signature.
    const peerKey = peerKeyHeader(ctx.settings.peers, targetUri);
    const response = await guardedFetch(targetUri, { method: "POST", headers: { ...headers, ...peerKey, accept: "application/json" }, body: text }, { ...ctx.outbound, maxRedirects: 0 });
    let answer: unknown;
    try {
      answer = response.json();
    } catch {
      answer = null;
    }
    const remoteIntentId = (answer as { local_intent_id?: unknown } | null)?.local_intent_id;
    if (response.status === 200 && typeof remoteIntentId === "string") {
      return await accept(ctx, row, envelope, remoteIntentId, caller);
    }
    if (response.status === 409 && remoteError(answer)?.code === "DISPATCH_IN_PROGRESS") {
      // The peer is still creating the intent of an earlier attempt (this one timed out waiting):
      // nothing failed, the next retry with the same key gets the peer's stored answer.
      await release(ctx, row);
      throw federationErrors.inProgress(key);
    }
    failure = federationErrors.remoteRefused(response.status, answer);
  } catch (error) {
    const appError = asOutboundAppError(error);
    if (!appError) throw error;
    failure = appError;
  }
  await fail(ctx, row, envelope, { code: failure.code, status: failure.status, message: failure.message, details: failure.details }, caller);
  throw failure;
}

/**
 * Takes the dispatch row for this attempt: inserted new, or taken over from a failed attempt or
 * from a replica that stopped mid-call (its claim older than the call's deadline). A row being
 * sent right now by another request is 409 DISPATCH_IN_PROGRESS; an accepted one is returned as is.
 */
async function claim(
  ctx: FederationContext,
  principal: string,
  key: string,
  requestHash: string,
  fields: { intentId: string; targetServer: string; agentId: string | null },
): Promise<DispatchRow> {
  const now = ctx.clock.now();
  const [inserted] = await ctx.db
    .insert(dispatches)
    .values({
      dispatchId: randomUUID(),
      principal,
      idempotencyKey: key,
      ...fields,
      targetDid: didFromServerUrl(fields.targetServer),
      status: "sending",
      requestHash,
      attempts: 1,
      claimedAt: now,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing()
    .returning();
  if (inserted) return inserted;
  const [existing] = await ctx.db.select().from(dispatches).where(and(eq(dispatches.principal, principal), eq(dispatches.idempotencyKey, key)));
  if (!existing) throw new Error(`dispatch ${key} conflicted on insert but cannot be read`);
  if (existing.requestHash !== requestHash) throw federationErrors.keyReused(key);
  if (existing.status === "accepted") return existing;
  const stale = now.getTime() - existing.claimedAt.getTime() > ctx.settings.dispatchTimeoutMs + 5000;
  if (existing.status === "sending" && !stale) throw federationErrors.inProgress(key);
  // Conditional on what was read: of two retries racing for a failed row, one takes it.
  const [taken] = await ctx.db
    .update(dispatches)
    .set({ status: "sending", claimedAt: now, attempts: existing.attempts + 1, updatedAt: now })
    .where(and(eq(dispatches.dispatchId, existing.dispatchId), eq(dispatches.status, existing.status), eq(dispatches.attempts, existing.attempts)))
    .returning();
  if (!taken) throw federationErrors.inProgress(key);
  return taken;
}

async function accept(ctx: FederationContext, row: DispatchRow, envelope: Envelope, remoteIntentId: string, caller: Caller) {
  const now = ctx.clock.now();
  const answer: CommandResult<typeof federationCommands.dispatch> = {
    dispatch_id: row.dispatchId,
    status: "accepted",
    intent_id: envelope.intent_id,
    target_server: envelope.target_server,
    target_did: row.targetDid,
    agent_id: envelope.agent_id,
    remote_intent_id: remoteIntentId,
    idempotency_key: envelope.idempotency_key,
    message: `accepted by ${row.targetDid}`,
  };
  await ctx.db.transaction(async (tx) => {
    await tx.update(dispatches).set({ status: "accepted", answer, remoteIntentId, lastError: null, updatedAt: now }).where(eq(dispatches.dispatchId, row.dispatchId));
    await enqueueSystemEvents(tx, outbox, [
      federationEvent(envelope.intent_id, federationEvents.dispatched, caller.actor, {
        dispatch_id: row.dispatchId,
        target_server: envelope.target_server,
        target_did: row.targetDid,
        agent_id: envelope.agent_id,
        remote_intent_id: remoteIntentId,
        delegation_scope: envelope.delegation_scope,
        governance: envelope.governance,
      }, now),
    ]);
  });
  ctx.published();
  return answer;
}

/** Frees the row for the next retry without recording a failure: the peer is still at work on it. */
async function release(ctx: FederationContext, row: DispatchRow) {
  await ctx.db.update(dispatches).set({ status: "failed", updatedAt: ctx.clock.now() }).where(and(eq(dispatches.dispatchId, row.dispatchId), eq(dispatches.status, "sending")));
}

async function fail(ctx: FederationContext, row: DispatchRow, envelope: Envelope, failure: { code: string; status: number; message: string; details: Record<string, unknown> }, caller: Caller) {
  const now = ctx.clock.now();
  await ctx.db.transaction(async (tx) => {
    await tx.update(dispatches).set({ status: "failed", lastError: failure, updatedAt: now }).where(eq(dispatches.dispatchId, row.dispatchId));
    await enqueueSystemEvents(tx, outbox, [
      federationEvent(envelope.intent_id, federationEvents.failed, caller.actor, {
        dispatch_id: row.dispatchId,
        stage: "dispatch",
        target_server: envelope.target_server,
        agent_id: envelope.agent_id,
        code: failure.code,
        message: failure.message,
        attempt: row.attempts,
      }, now),
    ]);
  });
  ctx.published();
}
