import { runService } from "@intentmesh/service";
import { startVaultService } from "./service";
import { identitySettingsFromEnv, proxySettingsFromEnv, vaultEnvSchema } from "./config";
import { loadKeyRing } from "./crypto/keyring-config";

// Entry point of the vault service alone (one Kubernetes deployment).
await runService("vault", vaultEnvSchema, ({ config, ...connections }) => {
  const { ring, development } = loadKeyRing({ keys: config.VAULT_KEK, file: config.VAULT_KEK_FILE, primary: config.VAULT_KEK_PRIMARY, dataDir: config.DATA_DIR });
  if (development) connections.logger.warn("vault: no VAULT_KEK or VAULT_KEK_FILE: credentials are sealed under a development key kept in DATA_DIR; set VAULT_KEK_FILE in production");
  return startVaultService({ ...connections, keys: ring, proxy: proxySettingsFromEnv(config), identity: identitySettingsFromEnv(config) });
});
