import { defineService } from "@intentmesh/service";
import { startFederationService } from "./service";
import { federationEnvSchema, settingsFromEnv } from "./settings";

/**
 * The federation service (SPEC 4.11, docs/federation.md). The test-only loopback allowance is
 * never read from the environment.
 */
export const federationService = defineService({
  name: "federation",
  env: federationEnvSchema,
  options: (config) => ({
    settings: settingsFromEnv(config),
    key: { pem: config.FEDERATION_SIGNING_KEY, file: config.FEDERATION_SIGNING_KEY_FILE, dataDir: config.DATA_DIR },
  }),
  start: startFederationService,
});
