import { runService } from "@intentmesh/service";
import { startFederationService } from "./service";
import { federationEnvSchema, settingsFromEnv } from "./settings";

// Entry point of the federation service alone (one Kubernetes deployment). The test-only
// loopback allowance is not read from here.
await runService("federation", federationEnvSchema, ({ config, ...connections }) =>
  startFederationService({
    ...connections,
    settings: settingsFromEnv(config),
    key: { pem: config.FEDERATION_SIGNING_KEY, file: config.FEDERATION_SIGNING_KEY_FILE, dataDir: config.DATA_DIR },
  }),
);
