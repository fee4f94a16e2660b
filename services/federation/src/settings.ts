import { z } from "zod";
import { documented } from "@intentmesh/telemetry";
import { AgentVisibility, DelegationScopeBody, FederationPolicyBody, PEER_RELATIONSHIPS, TrustPolicy } from "@intentmesh/contracts";

/** A server this one knows, as configured (FEDERATION_PEERS). */
export const PeerConfig = z
  .object({
    server_url: z.string().url(),
    relationship: z.enum(PEER_RELATIONSHIPS).default("peer"),
  })
  .strict();
export type PeerConfig = z.infer<typeof PeerConfig>;

/** What the federation service is told at start (from environment in main.ts, from options in tests). */
export interface FederationSettings {
  /** Off: the service answers health and 404 FEDERATION_DISABLED to everything else. */
  enabled: boolean;
  /** This server's public URL (https in production): the did:web and every URL peers call derive from it. */
  serverUrl: string;
  trustPolicy: TrustPolicy;
  visibilityDefault: AgentVisibility;
  peers: PeerConfig[];
  /** This server's governance, composed with every envelope's (strictest wins). */
  localPolicy: z.infer<typeof FederationPolicyBody>;
  /** The most this server grants any peer (narrowed with what an envelope asks). */
  peerGrant: z.infer<typeof DelegationScopeBody>;
  /** Under `trustless`, the most an unknown (non-peer) server gets. */
  trustlessGrant: z.infer<typeof DelegationScopeBody>;
  /** Deadline of one outbound call (dispatch, callback, did.json); SPEC 8 says 10 s. */
  dispatchTimeoutMs: number;
  /** How long a fetched did.json is trusted before it is fetched again. */
  didCacheTtlMs: number;
  /**
   * TEST-ONLY: admit loopback peers (and plain http for them). Off by default; the service logs
   * a warning at start when it is on. Never set in production.
   */
  allowLoopback: boolean;
}

export const DEFAULT_PEER_GRANT = { permissions: ["intent.read", "intent.update_state", "intent.update_status", "task.create"], denied_operations: [], max_delegation_depth: 2 };
export const DEFAULT_TRUSTLESS_GRANT = { permissions: ["intent.read", "intent.update_state"], denied_operations: [], max_delegation_depth: 1 };

export function defaultSettings(overrides: Partial<FederationSettings> = {}): FederationSettings {
  return {
    enabled: false,
    serverUrl: "http://127.0.0.1:8080",
    trustPolicy: "allowlist",
    visibilityDefault: "public",
    peers: [],
    localPolicy: {},
    peerGrant: DEFAULT_PEER_GRANT,
    trustlessGrant: DEFAULT_TRUSTLESS_GRANT,
    dispatchTimeoutMs: 10_000,
    didCacheTtlMs: 300_000,
    allowLoopback: false,
    ...overrides,
  };
}

const json = <S extends z.ZodType>(schema: S) =>
  z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (!text?.trim()) return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be JSON" });
        return z.NEVER;
      }
    })
    .pipe(schema.optional());

/** Environment variables of the federation service (docs/federation.md, "Configuration"). */
export const federationEnvSchema = z.object({
  FEDERATION_ENABLED: documented(z.enum(["true", "false"]).default("false").transform((v) => v === "true"), "federation on; the discovery document then lists it"),
  // An empty value (compose passes unset variables as "") reads as absent.
  FEDERATION_SERVER_URL: documented(
    z
      .string()
      .optional()
      .transform((v) => v?.trim() || undefined)
      .pipe(z.string().url().optional()),
    "this server's public https URL (its did:web derives from it); required when enabled",
  ),
  FEDERATION_SIGNING_KEY: documented(z.string().optional(), "Ed25519 PKCS#8 PEM, the same on every replica", "a development key under `DATA_DIR`"),
  FEDERATION_SIGNING_KEY_FILE: documented(z.string().optional(), "a file holding that PEM"),
  FEDERATION_TRUST_POLICY: documented(TrustPolicy.default("allowlist"), "which servers may dispatch to this one (docs/federation.md 4.1)"),
  FEDERATION_VISIBILITY_DEFAULT: documented(AgentVisibility.default("public"), "visibility of an agent that sets none (docs/federation.md)"),
  FEDERATION_PEERS: documented(json(z.array(PeerConfig).max(1000)), "the servers this one knows, JSON (docs/federation.md 4.1)", "none"),
  FEDERATION_POLICY: documented(json(FederationPolicyBody), "this server's federation governance, JSON, composed with every envelope's", "none"),
  FEDERATION_PEER_GRANT: documented(json(DelegationScopeBody), "the most this server grants any peer, JSON", "docs/federation.md"),
  FEDERATION_DISPATCH_TIMEOUT_MS: documented(z.coerce.number().int().min(100).max(60_000).default(10_000), "deadline of one outbound federation call"),
});

/** Settings from the parsed environment. allowLoopback is never read from the environment. */
export function settingsFromEnv(config: z.infer<typeof federationEnvSchema>): Partial<FederationSettings> {
  if (config.FEDERATION_ENABLED && !config.FEDERATION_SERVER_URL) {
    throw new Error("FEDERATION_SERVER_URL is required when FEDERATION_ENABLED=true: it is this server's public https URL, from which its did:web derives");
  }
  return {
    enabled: config.FEDERATION_ENABLED,
    ...(config.FEDERATION_SERVER_URL ? { serverUrl: config.FEDERATION_SERVER_URL } : {}),
    trustPolicy: config.FEDERATION_TRUST_POLICY,
    visibilityDefault: config.FEDERATION_VISIBILITY_DEFAULT,
    peers: config.FEDERATION_PEERS ?? [],
    localPolicy: config.FEDERATION_POLICY ?? {},
    ...(config.FEDERATION_PEER_GRANT ? { peerGrant: config.FEDERATION_PEER_GRANT } : {}),
    dispatchTimeoutMs: config.FEDERATION_DISPATCH_TIMEOUT_MS,
    allowLoopback: false,
  };
}
