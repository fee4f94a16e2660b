import { z } from "zod";
import { parseAllowedNetworks } from "@intentmesh/ssrf";
import { StartupError } from "@intentmesh/telemetry";
import type { IdentitySettings, ToolProxySettings } from "./context";

/** The vault service's own variables (README, configuration). */
export const vaultEnvSchema = z.object({
  VAULT_KEK: z.string().optional(),
  VAULT_KEK_FILE: z.string().optional(),
  VAULT_KEK_PRIMARY: z.string().optional(),
  VAULT_TOOL_ALLOWED_NETWORKS: z.string().default(""),
  VAULT_TOOL_TIMEOUT_MS: z.coerce.number().int().min(100).max(15_000).default(10_000),
  VAULT_TOOL_MAX_RESPONSE_BYTES: z.coerce.number().int().min(1024).max(512 * 1024).default(256 * 1024),
  IDENTITY_CHALLENGE_TTL_SECONDS: z.coerce.number().int().min(10).max(3600).default(300),
  IDENTITY_ROTATION_OVERLAP_SECONDS: z.coerce.number().int().min(0).max(30 * 86_400).default(86_400),
});
export type VaultEnv = z.infer<typeof vaultEnvSchema>;

export function proxySettingsFromEnv(env: VaultEnv): Partial<ToolProxySettings> {
  let allowedNetworks;
  try {
    allowedNetworks = parseAllowedNetworks(env.VAULT_TOOL_ALLOWED_NETWORKS.split(","));
  } catch (error) {
    throw new StartupError("VAULT_TOOL_ALLOWED_NETWORKS", `VAULT_TOOL_ALLOWED_NETWORKS: ${(error as Error).message}`);
  }
  return { outbound: { allowedNetworks }, timeoutMs: env.VAULT_TOOL_TIMEOUT_MS, maxTimeoutMs: 15_000, maxResponseBytes: env.VAULT_TOOL_MAX_RESPONSE_BYTES };
}

export function identitySettingsFromEnv(env: VaultEnv): Partial<IdentitySettings> {
  return { challengeTtlMs: env.IDENTITY_CHALLENGE_TTL_SECONDS * 1000, rotationOverlapMs: env.IDENTITY_ROTATION_OVERLAP_SECONDS * 1000 };
}
