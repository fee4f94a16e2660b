import path from "node:path";
import { fileURLToPath } from "node:url";
import { streams, systemEventStream, vaultCommands as commands, vaultStream, type Clock } from "@intentmesh/contracts";
import type { Bus, OutboxRelay, RelayOptions } from "@intentmesh/bus";
import { openServiceCore } from "@intentmesh/service";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { IdentitySettings, ToolProxySettings, VaultContext } from "./context";
import type { KeyRing } from "./crypto/envelope";
import { loadKeyRing, type KeyRingSource } from "./crypto/keyring-config";
import { outbox } from "./db/schema";
import { startAgentProjection } from "./agent-projection";
import { CostRetrySweeper } from "./costs";
import { createCredential, createVault, getCredential, getCredentialByName, getVault, listCredentials, listVaults, revokeCredential, rotateCredential } from "./handlers/vaults";
import { agentGrants, createGrant, getGrant, grantTool, grantedTools, listGrants, resumeGrant, revokeGrant, suspendGrant } from "./handlers/grants";
import { invokeTool, listInvocations, recordInvocation } from "./handlers/invoke";
import { checkSignature, completeChallenge, getIdentity, registerIdentity, revokeIdentity, rotateKey, verifySignature } from "./handlers/identity";
import { RewrapSweeper, rewrapCommand } from "./handlers/keys";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export const DEFAULT_PROXY: ToolProxySettings = { outbound: {}, timeoutMs: 10_000, maxTimeoutMs: 15_000, maxResponseBytes: 256 * 1024 };
export const DEFAULT_IDENTITY: IdentitySettings = { challengeTtlMs: 5 * 60_000, rotationOverlapMs: 24 * 3_600_000 };

export interface VaultServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  /** The key-encryption keys, given (tests); or */
  keys?: KeyRing;
  /** where to load them from: VAULT_KEK / VAULT_KEK_FILE, else a development key under DATA_DIR (crypto/keyring-config.ts). */
  kek?: KeyRingSource;
  proxy?: Partial<ToolProxySettings>;
  identity?: Partial<IdentitySettings>;
  /** How often pending tool costs are retried and old-key rows re-wrapped; default 30 s. */
  sweepIntervalMs?: number;
  relay?: Partial<RelayOptions>;
}

export interface VaultService {
  ctx: VaultContext;
  relay: OutboxRelay;
  costRetry: CostRetrySweeper;
  rewrap: RewrapSweeper;
  stop(): Promise<void>;
}

/** Migrates the schema, ensures the streams, serves every vault subject, starts the relay, the projection and the sweepers. */
export async function startVaultService(options: VaultServiceOptions): Promise<VaultService> {
  const keys = options.keys ?? keyRingOf(options);
  const core = await openServiceCore({
    name: "vault",
    ...options,
    migrationsFolder: MIGRATIONS_FOLDER,
    streams: [vaultStream, systemEventStream, streams.registry],
    outbox,
  });
  const ctx: VaultContext = {
    db: core.database.db,
    clock: core.clock,
    logger: core.logger,
    client: core.client,
    keys,
    proxy: { ...DEFAULT_PROXY, ...options.proxy },
    identity: { ...DEFAULT_IDENTITY, ...options.identity },
    published: core.published,
  };
  const interval = options.sweepIntervalMs ?? 30_000;
  const costRetry = new CostRetrySweeper(ctx, interval);
  const rewrap = new RewrapSweeper(ctx, interval);

  core.serve(commands, {
    createVault: (input, caller) => createVault(ctx, input.body, caller),
    listVaults: (_input, caller) => listVaults(ctx, caller),
    getVault: (input, caller) => getVault(ctx, input.vault_id, caller),
    createCredential: (input, caller) => createCredential(ctx, input.vault_id, input.body, caller),
    listCredentials: (input, caller) => listCredentials(ctx, input.vault_id, caller),
    getCredential: (input, caller) => getCredential(ctx, input.credential_id, caller),
    getCredentialByName: (input, caller) => getCredentialByName(ctx, input.vault_id, input.credential_name, caller),
    rotateCredential: (input, caller) => rotateCredential(ctx, input.credential_id, input.body, caller),
    revokeCredential: (input, caller) => revokeCredential(ctx, input.credential_id, caller),
    createGrant: (input, caller) => createGrant(ctx, input.body, caller),
    grantTool: (input, caller) => grantTool(ctx, input.intent_id, input.body, caller),
    getGrant: (input, caller) => getGrant(ctx, input.grant_id, caller),
    listGrants: (input, caller) => listGrants(ctx, input.query, caller),
    agentGrants: (input, caller) => agentGrants(ctx, input.agent_id, caller),
    grantedTools: (input, caller) => grantedTools(ctx, input.query.agent_id, caller),
    revokeGrant: (input, caller) => revokeGrant(ctx, input.grant_id, caller),
    suspendGrant: (input, caller) => suspendGrant(ctx, input.grant_id, input.body.reason, caller),
    resumeGrant: (input, caller) => resumeGrant(ctx, input.grant_id, caller),
    invokeTool: (input, caller) => invokeTool(ctx, input.body, caller),
    recordInvocation: (input, caller) => recordInvocation(ctx, input.body, caller),
    listInvocations: (input, caller) => listInvocations(ctx, input.grant_id, input.query.limit, caller),
    rewrap: (input, caller) => rewrapCommand(ctx, input.body.limit, caller),
    registerIdentity: (input, caller) => registerIdentity(ctx, input.agent_id, input.body, caller),
    registerIdentityMcp: (input, caller) => registerIdentity(ctx, input.body.agent_id, input.body, caller),
    completeChallenge: (input, caller) => completeChallenge(ctx, input.agent_id, input.body, caller),
    completeChallengeMcp: (input, caller) => completeChallenge(ctx, input.body.agent_id, input.body, caller),
    getIdentity: (input) => getIdentity(ctx, input.agent_id),
    verifySignature: (input) => verifySignature(ctx, input.agent_id, input.body),
    rotateKey: (input, caller) => rotateKey(ctx, input.agent_id, input.body, caller),
    revokeIdentity: (input, caller) => revokeIdentity(ctx, input.agent_id, input.body.reason, caller),
    checkSignature: (input) => checkSignature(ctx, input),
  });
  const projection = await startAgentProjection(core.bus, ctx);
  const running = core.launch({
    workers: [costRetry, rewrap],
    running: [projection],
    started: { primary_key_id: keys.primaryId, key_ids: keys.ids.length, tool_networks_allowed: options.proxy?.outbound?.allowedNetworks?.map((n) => n.cidr) ?? [] },
  });
  return { ctx, relay: core.relay, costRetry, rewrap, stop: running.stop };
}

/** The key ring from configuration; a development key is generated (and loudly announced) only when none is configured. */
function keyRingOf(options: VaultServiceOptions): KeyRing {
  const { ring, development } = loadKeyRing(options.kek ?? { dataDir: ".data" });
  if (development) {
    options.logger.warn(
      "vault: no VAULT_KEK or VAULT_KEK_FILE: credentials are sealed under a development key generated under DATA_DIR. Outside one machine set VAULT_KEK (compose and the Helm chart require it): replicas with different keys cannot read each other's credentials",
    );
  }
  return ring;
}
