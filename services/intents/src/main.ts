import { baseConfigSchema, openDatabase, parseConfig } from "@intentmesh/db";
import { connectBus } from "@intentmesh/bus";
import { createLogger, runMain, startTracing, stopOnSignals, stopTracing } from "@intentmesh/telemetry";
import { z } from "zod";
import { startIntentsService } from "./service";

// Entry point of the intents service alone (one Kubernetes deployment): config -> logger ->
// db -> bus -> handlers -> shutdown.
await runMain("intents", async () => {
  const config = parseConfig("intents", baseConfigSchema.extend({ LEASE_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(1000) }));
  startTracing("intents");
  const logger = createLogger("intents", config.LOG_LEVEL);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE });
  const bus = await connectBus(config.NATS_URL, "intents", config.BUS_NAMESPACE);
  const service = await startIntentsService({ bus, database, logger, leaseSweepIntervalMs: config.LEASE_SWEEP_INTERVAL_MS });
  stopOnSignals(logger, [() => service.stop(), () => bus.close(), () => database.close(), stopTracing]);
});
