import crypto from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { federationCommands as commands, streams, systemEventStream, type Clock } from "@intentmesh/contracts";
import type { Bus, OutboxRelay, RelayOptions } from "@intentmesh/bus";
import { openServiceCore } from "@intentmesh/service";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Connector, GuardedFetchOptions, Resolver } from "@intentmesh/ssrf";
import type { Logger } from "@intentmesh/telemetry";
import { count, isNull } from "drizzle-orm";
import type { FederationContext } from "./context";
import { outbox, outgoingCallbacks } from "./db/schema";
import { DidResolver } from "./did-resolver";
import { loadSigningKey, serverIdentity, type KeySource, type ServerIdentity } from "./identity";
import { signCheckpoint } from "./handlers/sign-checkpoint";
import { defaultSettings, type FederationSettings } from "./settings";
import { CallbackSender } from "./callback-sender";
import { startCallbackProjection } from "./callback-projection";
import { dispatch } from "./handlers/dispatch";
import { receive } from "./handlers/receive";
import { receiveCallback } from "./handlers/callbacks-in";
import { agents, did, discovery, status } from "./handlers/queries";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");
export { defaultSettings, type FederationSettings } from "./settings";

export interface FederationServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  settings?: Partial<FederationSettings>;
  /** Where the signing key comes from (a PEM, a file, else a development key under dataDir). */
  key?: Partial<KeySource>;
  clock?: Clock;
  /** Test seam: name resolution of outbound calls (default: the system resolver). */
  resolve?: Resolver;
  /** Test seam: the connect step of outbound calls (tests pass a tripwire that refuses anything but loopback). */
  connect?: Connector;
  callbackIntervalMs?: number;
  relay?: Partial<RelayOptions>;
}

export interface FederationService {
  ctx: FederationContext;
  relay: OutboxRelay;
  callbacks: CallbackSender;
  stop(): Promise<void>;
}

/** Migrates the schema, loads the identity, serves every command subject, starts the relay, the callback projection and sender. */
export async function startFederationService(options: FederationServiceOptions): Promise<FederationService> {
  const settings = defaultSettings(options.settings);
  const core = await openServiceCore({
    name: "federation",
    ...options,
    migrationsFolder: MIGRATIONS_FOLDER,
    streams: [streams.intents, systemEventStream],
    outbox,
  });
  const { bus, database, logger, relay, clock } = core;
  // Disabled, nothing is signed or published: an in-memory key stands in, and no file is written
  // (a read-only container never needs a data directory for a service it does not use).
  // A configured key is the server's identity whether federation is on or not: it also signs the
  // intents' log checkpoints (RFC 0019).
  const keySource = { pem: options.key?.pem, file: options.key?.file, dataDir: options.key?.dataDir ?? ".data" };
  const configured = Boolean(keySource.pem?.trim() || keySource.file?.trim());
  const key = settings.enabled || configured
    ? loadSigningKey(keySource)
    : { privateKey: crypto.generateKeyPairSync("ed25519").privateKey, source: "development" as const, file: undefined };
  if (settings.enabled && key.source === "development") {
    logger.warn({ file: key.file }, "federation: no signing key configured (FEDERATION_SIGNING_KEY or FEDERATION_SIGNING_KEY_FILE); using a development key from the data directory, which replicas do not share");
  }
  if (settings.allowLoopback) logger.warn("federation: loopback peers and plain http are allowed: a TEST-ONLY setting that must never be on in production");
  const identity = serverIdentity(settings.serverUrl, key.privateKey, key.source);

  const outbound: GuardedFetchOptions = {
    allowLoopback: settings.allowLoopback,
    timeoutMs: settings.dispatchTimeoutMs,
    ...(options.resolve ? { resolve: options.resolve } : {}),
    ...(options.connect ? { connect: options.connect } : {}),
  };
  let checkpointIdentity: ServerIdentity | undefined = settings.enabled || configured ? identity : undefined;
  const checkpointSigner = (): ServerIdentity => {
    if (!checkpointIdentity) {
      const development = loadSigningKey({ dataDir: keySource.dataDir });
      logger.warn({ file: development.file }, "checkpoints: no signing key configured (FEDERATION_SIGNING_KEY or FEDERATION_SIGNING_KEY_FILE); signing with a development key from the data directory");
      checkpointIdentity = serverIdentity(settings.serverUrl, development.privateKey, development.source);
    }
    return checkpointIdentity;
  };
  let sender: CallbackSender | undefined;
  const ctx: FederationContext = {
    db: database.db,
    clock,
    logger,
    client: core.client,
    settings,
    identity,
    checkpointSigner,
    outbound,
    dids: new DidResolver(clock, settings.didCacheTtlMs, () => outbound),
    published: core.published,
    callbacksQueued: () => void sender?.sweep().catch((err: unknown) => logger.warn({ err }, "callback sender failed; next tick retries")),
  };
  sender = new CallbackSender(ctx, options.callbackIntervalMs ?? 1000);

  core.serve(commands, {
    discovery: async () => discovery(ctx),
    did: async () => did(ctx),
    status: () => status(ctx),
    agents: (input) => agents(ctx, input.query),
    dispatch: (input, caller) => dispatch(ctx, input.body, input.idempotency_key, caller),
    receive: (input) => receive(ctx, input.request),
    callback: (input) => receiveCallback(ctx, input.dispatch_id, input.request),
    signCheckpoint: async (input) => signCheckpoint(ctx, input.checkpoint),
  });
  const projection = settings.enabled ? await startCallbackProjection(bus, database.db, clock, logger, ctx.callbacksQueued) : undefined;
  const running = core.launch({
    workers: settings.enabled ? [sender] : [],
    running: projection ? [projection] : [],
    health: async () => {
      const [pending] = await database.db.select({ n: count() }).from(outgoingCallbacks).where(isNull(outgoingCallbacks.deliveredAt));
      return { enabled: settings.enabled, callbacks_pending: Number(pending?.n ?? 0) };
    },
    started: { enabled: settings.enabled, did: settings.enabled ? identity.did : undefined, trust_policy: settings.trustPolicy },
  });
  return { ctx, relay, callbacks: sender, stop: running.stop };
}
