import { runService } from "@intentmesh/service";
import { StartupError } from "@intentmesh/telemetry";
import { startVaultService } from "./service";
import { identitySettingsFromEnv, proxySettingsFromEnv, vaultEnvSchema } from "./config";
import { loadKeyRing } from "./crypto/keyring-config";

// Entry point of the vault service alone (one Kubernetes deployment).
// A deployment names its key-encryption keys: with several replicas a generated key would differ
// per pod, so this entry point has no development fallback (pnpm start, one process, has one).
await runService("vault", vaultEnvSchema, ({ config, ...connections }) => {
  if (!config.VAULT_KEK?.trim() && !config.VAULT_KEK_FILE?.trim()) {
    throw new StartupError("VAULT_KEK", "VAULT_KEK (or VAULT_KEK_FILE) is required: id:base64 of 32 random bytes, e.g. kek-1:$(openssl rand -base64 32); see docs/vaults.md");
  }
  const { ring } = loadKeyRing({ keys: config.VAULT_KEK, file: config.VAULT_KEK_FILE, primary: config.VAULT_KEK_PRIMARY, dataDir: config.DATA_DIR });
  return startVaultService({ ...connections, keys: ring, proxy: proxySettingsFromEnv(config), identity: identitySettingsFromEnv(config) });
});
