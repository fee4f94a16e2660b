import { appError } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { derivedUuid, errors, federationEvents, intentsCommands, parseJsonStrict, type SignedRequest } from "@intentmesh/contracts";
import { enqueueSystemEvents, validationError } from "@intentmesh/bus";
import type { FederationContext } from "../context";
import { composeGovernance, delegationScope, narrowDelegation } from "../domain";
import { outbox, receivedDispatches } from "../db/schema";
import { Envelope } from "../envelope";
import { federationEvent } from "../events";
import { federationErrors } from "../errors";
import { didFromServerUrl } from "../identity";
import { verifySignedRequest } from "../verify";
import { assertEnabled, localAgent, peerServerUrl, SERVICE_CALLER } from "./guards";

/** How long a receive may stay half-done (intent being created) before a retry of the peer takes it over. */
const STALE_CREATING_MS = 60_000;

/**
 * POST /api/v1/federation/receive (docs/federation.md 4.5): verify the signature, apply the
 * trust policy, refuse loops, deduplicate on (source_did, idempotency_key), compose governance
 * and narrow the delegation, create the local intent (and its assignment) through the intents
 * service, and remember the origin for callbacks.
 */
export async function receive(ctx: FederationContext, request: SignedRequest) {
  assertEnabled(ctx);
  const raw = parseJsonStrict(request.body, "the envelope");
  const parsed = Envelope.safeParse(raw);
  if (!parsed.success) throw validationError(parsed.error);
  const envelope = parsed.data;
  const source = peerServerUrl(ctx, envelope.source_server, "source_server");
  if (source === ctx.identity.serverUrl) throw federationErrors.loop("the envelope comes from this server itself");
  if (didFromServerUrl(source) !== envelope.source_did) throw federationErrors.signatureInvalid(`source_did ${envelope.source_did} is not the did:web of ${source}`);
  // Under allowlist, a sender that is not a peer is refused before its did.json is fetched: an
  // unsigned claim must not make this server call an address of the claimant's choosing.
  const peer = ctx.settings.peers.find((p) => peerUrl(p.server_url) === source);
  const trust = ctx.settings.trustPolicy;
  if (trust === "allowlist" && !peer) throw federationErrors.untrusted(envelope.source_did);
  await verifySignedRequest(ctx, request, `${ctx.identity.serverUrl}/api/v1/federation/receive`, source);
  if (request.headers["idempotency-key"] !== envelope.idempotency_key) throw federationErrors.signatureInvalid("the signed Idempotency-Key differs from the envelope's");

  const grant = trust === "trustless" && !peer ? ctx.settings.trustlessGrant : ctx.settings.peerGrant;

  const [existing] = await ctx.db.select().from(receivedDispatches).where(and(eq(receivedDispatches.sourceDid, envelope.source_did), eq(receivedDispatches.idempotencyKey, envelope.idempotency_key)));
  if (existing?.status === "accepted") return existing.answer!;

  if (envelope.agent_id) {
    const agent = await localAgent(ctx, envelope.agent_id);
    if (!agent || visibilityOf(agent.metadata, ctx.settings.visibilityDefault) === "private") throw errors.notFound("agent", envelope.agent_id);
    if (agent.origin_server_url) {
      throw federationErrors.loop(`agent ${envelope.agent_id} is itself a federated agent (of ${agent.origin_server_url}); this server does not forward dispatches`, { agent_id: envelope.agent_id });
    }
  }
  const narrowed = narrowDelegation(delegationScope(grant.permissions, grant.denied_operations, grant.max_delegation_depth), delegationScope(envelope.delegation_scope.permissions, envelope.delegation_scope.denied_operations, envelope.delegation_scope.max_delegation_depth));
  if (!narrowed.ok) throw federationErrors.depthExhausted(narrowed.message);
  const governance = composeGovernance([envelope.governance, ctx.settings.localPolicy]) as Record<string, unknown>;
  const callbackUrl = peerServerUrl(ctx, envelope.callback_url, "callback_url");
  if (new URL(callbackUrl).origin !== new URL(source).origin) {
    throw appError("VALIDATION_ERROR", "callback_url must be on the origin of source_server: this server calls no third party on a peer's word", { field: "callback_url" });
  }

  const row = await claim(ctx, envelope, existing, { callbackUrl, governance, scope: narrowed.scope });
  try {
    // One intent per dispatch, whatever happens: its id derives from the sender and the key, so a
    // retry after a crash between this create and the commit below finds the intent made then.
    const intent = await ctx.client.request(intentsCommands.create, { ...SERVICE_CALLER, actor: envelope.source_did }, {
      intent_id: derivedUuid(`federation-receive:${envelope.source_did}:${envelope.idempotency_key}`),
      body: {
        title: envelope.intent_title,
        description: envelope.intent_description,
        created_by: envelope.source_did,
        constraints: envelope.constraints,
        state: envelope.intent_state,
        status: "active",
      },
    });
    if (envelope.agent_id) {
      await ctx.client.request(intentsCommands.assignAgent, { ...SERVICE_CALLER, actor: envelope.source_did }, { intent_id: intent.id, if_match: intent.version, body: { agent_id: envelope.agent_id, role: "federated" } });
    }
    const answer = {
      dispatch_id: envelope.dispatch_id,
      accepted: true as const,
      local_intent_id: intent.id,
      server_did: ctx.identity.did,
      delegation_scope: narrowed.scope,
      governance,
      message: "intent created",
    };
    const now = ctx.clock.now();
    await ctx.db.transaction(async (tx) => {
      await tx.update(receivedDispatches).set({ status: "accepted", localIntentId: intent.id, answer }).where(eq(receivedDispatches.id, row.id));
      await enqueueSystemEvents(tx, outbox, [
        federationEvent(intent.id, federationEvents.received, envelope.source_did, {
          dispatch_id: envelope.dispatch_id,
          source_server: source,
          source_did: envelope.source_did,
          origin_intent_id: envelope.intent_id,
          agent_id: envelope.agent_id,
          delegation_scope: narrowed.scope,
          governance,
          trust_policy: trust,
        }, now),
      ]);
    });
    ctx.published();
    return answer;
  } catch (error) {
    // Nothing was accepted: free the key so the peer's retry starts again.
    await ctx.db.delete(receivedDispatches).where(and(eq(receivedDispatches.id, row.id), eq(receivedDispatches.status, "creating")));
    throw error;
  }
}

type ReceivedRow = typeof receivedDispatches.$inferSelect;

async function claim(
  ctx: FederationContext,
  envelope: Envelope,
  existing: ReceivedRow | undefined,
  fields: { callbackUrl: string; governance: Record<string, unknown>; scope: unknown },
): Promise<ReceivedRow> {
  const now = ctx.clock.now();
  if (existing) {
    if (now.getTime() - existing.createdAt.getTime() < STALE_CREATING_MS) {
      throw appError("DISPATCH_IN_PROGRESS", "this dispatch is being received right now; retry in a few seconds to get its answer");
    }
    await ctx.db.delete(receivedDispatches).where(and(eq(receivedDispatches.id, existing.id), eq(receivedDispatches.status, "creating")));
  }
  const [row] = await ctx.db
    .insert(receivedDispatches)
    .values({
      id: randomUUID(),
      sourceDid: envelope.source_did,
      idempotencyKey: envelope.idempotency_key,
      dispatchId: envelope.dispatch_id,
      sourceServer: envelope.source_server,
      callbackUrl: fields.callbackUrl,
      originIntentId: envelope.intent_id,
      agentId: envelope.agent_id,
      status: "creating",
      governance: fields.governance,
      delegationScope: fields.scope as Record<string, unknown>,
      createdAt: now,
    })
    .onConflictDoNothing()
    .returning();
  if (!row) throw appError("DISPATCH_IN_PROGRESS", "this dispatch is being received right now; retry in a few seconds to get its answer");
  return row;
}

const peerUrl = (url: string) => {
  const u = new URL(url);
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
};

/** An agent's federation visibility: metadata.federation_visibility, else the server's default. */
export function visibilityOf(metadata: Record<string, unknown>, fallback: "public" | "unlisted" | "private"): "public" | "unlisted" | "private" {
  const value = metadata.federation_visibility;
  return value === "public" || value === "unlisted" || value === "private" ? value : fallback;
}
