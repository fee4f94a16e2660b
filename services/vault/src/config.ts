import { z } from "zod";
import { parseAllowedNetworks } from "@intentmesh/ssrf";
import { StartupError, documented } from "@intentmesh/telemetry";
import type { IdentitySettings, ToolProxySettings } from "./context";

/** The vault service's own variables (README, configuration). */
export const vaultEnvSchema = z.object({
  VAULT_KEK: documented(
    z.string().optional(),
    "key-encryption keys of the credential vaults: `id:base64(32 bytes)`, comma- or line-separated, the first is the primary ([docs/vaults.md](docs/vaults.md))",
    "a development key under `DATA_DIR` (compose and the chart require one)",
  ),
  VAULT_KEK_FILE: documented(z.string().optional(), "a file holding those keys"),
  VAULT_KEK_PRIMARY: documented(z.string().optional(), "the key id new credentials are wrapped under (rotation without downtime)", "the first key"),
  VAULT_TOOL_ALLOWED_NETWORKS: documented(z.string().default(""), "CIDRs the tool proxy may call despite their class (internal tools); metadata addresses stay refused"),
  VAULT_TOOL_TIMEOUT_MS: documented(z.coerce.number().int().min(100).max(15_000).default(10_000), "default deadline of one tool call (at most 15000; a credential's `timeout_ms` may lower it)"),
  VAULT_TOOL_MAX_RESPONSE_BYTES: documented(z.coerce.number().int().min(1024).max(512 * 1024).default(256 * 1024), "the largest tool answer the proxy reads"),
  IDENTITY_CHALLENGE_TTL_SECONDS: documented(z.coerce.number().int().min(10).max(3600).default(300), "how long an identity registration challenge may be answered ([docs/identity.md](docs/identity.md))"),
  IDENTITY_ROTATION_OVERLAP_SECONDS: documented(z.coerce.number().int().min(0).max(30 * 86_400).default(86_400), "how long a rotated-out identity key still verifies"),
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
