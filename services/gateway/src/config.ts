import { z } from "zod";
import { baseConfigSchema } from "@intentmesh/telemetry";
import { parseCorsOrigins } from "./cors";

export const gatewayConfigSchema = baseConfigSchema.extend({
  HOST: z.string().default("0.0.0.0"),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  API_KEYS: z.string().optional(),
  API_KEYS_FILE: z.string().optional(),
  BODY_LIMIT: z.string().regex(/^\d+(b|kb|mb)$/i, "must look like 512kb or 1mb").default("1mb"),
  SSE_PING_SECONDS: z.coerce.number().min(0.01).default(15),
  BUS_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  /** Federation runs in this cluster (the federation service reads the same variable): the discovery document says so. */
  /** Browser origins allowed to call the API (CORS): unset is off, `*` any, else exact origins separated by commas. */
  CORS_ORIGINS: z
    .string()
    .optional()
    .refine((value) => !value || value.split(",").every((o) => o.trim() === "*" || /^https?:\/\/[^/\s]+$/.test(o.trim())), "must be * or origins like https://app.example.org, separated by commas"),
  FEDERATION_ENABLED: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
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
