import { defineService } from "@intentmesh/service";
import { startVaultService } from "./service";
import { identitySettingsFromEnv, proxySettingsFromEnv, vaultEnvSchema } from "./config";

/**
 * The vault service: credential vaults, tool grants and the tool proxy (RFC-0014), agent identity
 * (RFC-0018). docs/vaults.md, docs/identity.md.
 */
export const vaultService = defineService({
  name: "vault",
  env: vaultEnvSchema,
  options: (config) => ({
    kek: { keys: config.VAULT_KEK, file: config.VAULT_KEK_FILE, primary: config.VAULT_KEK_PRIMARY, dataDir: config.DATA_DIR },
    proxy: proxySettingsFromEnv(config),
    identity: identitySettingsFromEnv(config),
  }),
  start: startVaultService,
});
