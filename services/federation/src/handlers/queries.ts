import { count, isNull, isNotNull, sql } from "drizzle-orm";
import { FederationAgentsQuery, federationCommands, registryCommands, type Agent, type CommandResult } from "@intentmesh/contracts";
import { z } from "zod";
import type { FederationContext } from "../context";
import { dispatches, outgoingCallbacks, receivedDispatches } from "../db/schema";
import { didDocument, didFromServerUrl, multibaseEd25519 } from "../identity";
import { SIGNATURE_LIFETIME_SECONDS } from "../signatures";
import { assertEnabled, SERVICE_CALLER } from "./guards";
import { visibilityOf } from "./receive";

export const FEDERATION_PROTOCOL_VERSION = "0.1";

/** GET /.well-known/openintent-federation.json (docs/federation.md 4.2). */
export function discovery(ctx: FederationContext) {
  assertEnabled(ctx);
  const base = `${ctx.identity.serverUrl}/api/v1/federation`;
  return {
    server_did: ctx.identity.did,
    server_url: ctx.identity.serverUrl,
    protocol_version: FEDERATION_PROTOCOL_VERSION,
    trust_policy: ctx.settings.trustPolicy,
    visibility_default: ctx.settings.visibilityDefault,
    capabilities: ["dispatch", "receive", "callbacks", "did:web", "http-message-signatures"],
    signature: { standard: "RFC 9421", algorithm: "ed25519", content_digest: "RFC 9530 sha-256", max_age_seconds: SIGNATURE_LIFETIME_SECONDS, key_id: ctx.identity.keyId },
    supported_rfcs: ["RFC 9421", "RFC 9530", "did:web"],
    peers: ctx.settings.peers.map((p) => ({ server_url: p.server_url, server_did: didFromServerUrl(p.server_url), relationship: p.relationship })),
    endpoints: {
      status: `${base}/status`,
      agents: `${base}/agents`,
      dispatch: `${base}/dispatch`,
      receive: `${base}/receive`,
      callbacks: `${base}/callbacks/{dispatch_id}`,
      did: `${ctx.identity.serverUrl}/.well-known/did.json`,
    },
    public_key: multibaseEd25519(ctx.identity.publicKeyRaw),
  };
}

/** GET /.well-known/did.json. */
export function did(ctx: FederationContext) {
  assertEnabled(ctx);
  return didDocument(ctx.identity);
}

/**
 * GET /api/v1/federation/status: identity, policy and counters. Disabled, it answers too (200
 * `enabled: false`, as the other implementation does and the official MCP server and Python client
 * expect): no identity, no peers, zero counters; trust_policy stays a valid value because the
 * Python client's FederationStatus.from_dict parses it as its enum.
 */
export async function status(ctx: FederationContext): Promise<CommandResult<typeof federationCommands.status>> {
  if (!ctx.settings.enabled) {
    return {
      enabled: false,
      server_did: null,
      server_url: null,
      trust_policy: ctx.settings.trustPolicy,
      visibility_default: ctx.settings.visibilityDefault,
      peers: 0,
      peer_count: 0,
      active_dispatches: 0,
      total_dispatches: 0,
      total_received: 0,
    };
  }
  const byStatus = await ctx.db.select({ status: dispatches.status, n: count() }).from(dispatches).groupBy(dispatches.status);
  const [received] = await ctx.db.select({ n: count() }).from(receivedDispatches).where(sql`${receivedDispatches.status} = 'accepted'`);
  const [pending] = await ctx.db.select({ n: count() }).from(outgoingCallbacks).where(isNull(outgoingCallbacks.deliveredAt));
  const [delivered] = await ctx.db.select({ n: count() }).from(outgoingCallbacks).where(isNotNull(outgoingCallbacks.deliveredAt));
  const dispatched = Object.fromEntries(byStatus.map((r) => [r.status, Number(r.n)]));
  return {
    enabled: true,
    server_did: ctx.identity.did,
    server_url: ctx.identity.serverUrl,
    key_id: ctx.identity.keyId,
    key_source: ctx.identity.keySource,
    trust_policy: ctx.settings.trustPolicy,
    visibility_default: ctx.settings.visibilityDefault,
    peers: ctx.settings.peers.length,
    dispatches: { accepted: dispatched.accepted ?? 0, failed: dispatched.failed ?? 0, sending: dispatched.sending ?? 0 },
    received: Number(received?.n ?? 0),
    // The names the official clients read (CLIENTS.md section 1).
    peer_count: ctx.settings.peers.length,
    active_dispatches: dispatched.sending ?? 0,
    total_dispatches: Object.values(dispatched).reduce((a, b) => a + b, 0),
    total_received: Number(received?.n ?? 0),
    callbacks: { pending: Number(pending?.n ?? 0), delivered: Number(delivered?.n ?? 0) },
  };
}

/**
 * GET /api/v1/federation/agents: local agents (not federated ones) by federation visibility
 * (metadata.federation_visibility, else the server default); `visibility` filters, public by default.
 */
export async function agents(ctx: FederationContext, query: z.output<typeof FederationAgentsQuery>) {
  const { visibility, limit, offset } = query;
  // Disabled: no agent is offered to federation (an empty list, as the other implementation answers).
  if (!ctx.settings.enabled) return { server_did: null, agents: [], offset, limit, total_scanned: 0, has_more: false };
  const page = await ctx.client.request(registryCommands.list, SERVICE_CALLER, {
    query: { limit: String(limit), offset: String(offset), status: "active,draining,unhealthy" },
  });
  const records = await Promise.all(page.agents.map((a) => ctx.client.request(registryCommands.get, SERVICE_CALLER, { agent_id: a.agent_id }).catch(() => null)));
  const listed = records
    .filter((a): a is Agent => a !== null && !a.origin_server_url)
    .map((a) => ({ agent: a, visibility: visibilityOf(a.metadata, ctx.settings.visibilityDefault) }))
    .filter((x) => visibility.includes(x.visibility))
    .map(({ agent, visibility: v }) => ({
      agent_id: agent.agent_id,
      name: agent.name,
      role_id: agent.role_id,
      capabilities: agent.capabilities,
      status: agent.status,
      visibility: v,
      server_url: ctx.identity.serverUrl,
      server_did: ctx.identity.did,
    }));
  return { server_did: ctx.identity.did, agents: listed, offset, limit, total_scanned: page.agents.length, has_more: offset + page.agents.length < page.total };
}
