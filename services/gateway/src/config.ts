import { z } from "zod";
import { baseConfigSchema, documented } from "@intentmesh/telemetry";
import { parseCorsOrigins } from "./cors";

export const gatewayConfigSchema = baseConfigSchema.extend({
  HOST: documented(z.string().default("0.0.0.0"), "where HTTP listens"),
  PORT: documented(z.coerce.number().int().min(0).max(65535).default(8080), "the HTTP port"),
  API_KEYS: documented(z.string().optional(), "inline JSON list of `{key, principal, roles}` or `{key_sha256, principal, roles}`", "`pnpm start` generates `DATA_DIR/api-keys.json`"),
  API_KEYS_FILE: documented(z.string().optional(), "path to a file holding that list"),
  BODY_LIMIT: documented(z.string().regex(/^\d+(b|kb|mb)$/i, "must look like 512kb or 1mb").default("1mb"), "larger bodies get 413"),
  SSE_PING_SECONDS: documented(z.coerce.number().min(0.01).default(15), "interval of the `: ping` keep-alive comment"),
  BUS_TIMEOUT_MS: documented(z.coerce.number().int().min(100).default(5000), "how long the gateway waits for a service (504 after)"),
  /** Federation runs in this cluster (the federation service reads the same variable): the discovery document says so. */
  /** Browser origins allowed to call the API (CORS): unset is off, `*` any, else exact origins separated by commas. */
  CORS_ORIGINS: documented(
    z
      .string()
      .optional()
      .refine((value) => !value || value.split(",").every((o) => o.trim() === "*" || /^https?:\/\/[^/\s]+$/.test(o.trim())), "must be * or origins like https://app.example.org, separated by commas"),
    "browser origins allowed by CORS: `*` or exact origins separated by commas (docs/operations.md)",
    "CORS off",
  ),
  FEDERATION_ENABLED: documented(z.enum(["true", "false"]).default("false").transform((v) => v === "true"), "federation on; the discovery document then lists it"),
});
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;

/**
 * The gateway's options as its variables set them: the one mapping its own process
 * (src/main.ts) and README command 1 (scripts/start-cluster.ts) both use, so a documented
 * variable works however the gateway is started.
 */
export const gatewayOptionsFromConfig = (config: GatewayConfig) => ({
  bodyLimit: config.BODY_LIMIT,
  ssePingMs: config.SSE_PING_SECONDS * 1000,
  busTimeoutMs: config.BUS_TIMEOUT_MS,
  federation: config.FEDERATION_ENABLED,
  corsOrigins: parseCorsOrigins(config.CORS_ORIGINS),
});
