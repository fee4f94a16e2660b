import { baseConfigSchema, openDatabase, parseConfig } from "@intentmesh/db";
import { connectBus } from "@intentmesh/bus";
import { createLogger, runMain, startTracing, stopOnSignals, stopTracing } from "@intentmesh/telemetry";
import { startFederationService } from "./service";
import { federationEnvSchema, settingsFromEnv } from "./settings";

// Entry point of the federation service alone (one Kubernetes deployment): config -> logger ->
// db -> bus -> handlers -> shutdown. The test-only loopback allowance is not read from here.
await runMain("federation", async () => {
  const config = parseConfig("federation", baseConfigSchema.merge(federationEnvSchema));
  startTracing("federation");
  const logger = createLogger("federation", config.LOG_LEVEL);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE });
  const bus = await connectBus(config.NATS_URL, "federation", config.BUS_NAMESPACE);
  const service = await startFederationService({
    bus,
    database,
    logger,
    settings: settingsFromEnv(config),
    key: { pem: config.FEDERATION_SIGNING_KEY, file: config.FEDERATION_SIGNING_KEY_FILE, dataDir: config.DATA_DIR },
  });
  stopOnSignals(logger, [() => service.stop(), () => bus.close(), () => database.close(), stopTracing]);
});
