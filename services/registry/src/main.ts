import { baseConfigSchema, openDatabase, parseConfig } from "@intentmesh/db";
import { connectBus } from "@intentmesh/bus";
import { createLogger, runMain, startTracing, stopOnSignals, stopTracing } from "@intentmesh/telemetry";
import { z } from "zod";
import { startRegistryService } from "./service";

// Entry point of the registry service alone (one Kubernetes deployment): config -> logger ->
// db -> bus -> handlers -> shutdown.
await runMain("registry", async () => {
  const config = parseConfig(
    "registry",
    baseConfigSchema.extend({
      AGENT_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
      DRAIN_CHECK_SECONDS: z.coerce.number().int().min(1).default(5),
    }),
  );
  startTracing("registry");
  const logger = createLogger("registry", config.LOG_LEVEL);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE });
  const bus = await connectBus(config.NATS_URL, "registry", config.BUS_NAMESPACE);
  const service = await startRegistryService({
    bus,
    database,
    logger,
    sweepIntervalMs: config.AGENT_SWEEP_INTERVAL_MS,
    drainCheckSeconds: config.DRAIN_CHECK_SECONDS,
  });
  stopOnSignals(logger, [() => service.stop(), () => bus.close(), () => database.close(), stopTracing]);
});
