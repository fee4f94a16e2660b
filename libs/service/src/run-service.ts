import { z } from "zod";
import { openDatabase, type DatabaseHandle } from "@intentmesh/db";
import { connectBus, type Bus } from "@intentmesh/bus";
import { baseConfigSchema, createLogger, natsAuthOf, parseConfig, runMain, serveMetrics, startTracing, stopOnSignals, stopTracing, type BaseConfig, type Logger } from "@intentmesh/telemetry";

/** What a back-end service is started with: its parsed configuration and open connections. */
export interface ServiceDependencies<C> {
  config: C;
  logger: Logger;
  database: DatabaseHandle;
  bus: Bus;
}

export interface RunningService {
  stop(): Promise<void>;
}

/**
 * The entry point of one back-end service process, the same for every service: parse the
 * environment once (the variables every service reads plus the service's own, one sentence per
 * mistake), start tracing, open the logger, the database and the bus, start the service, and on
 * SIGTERM/SIGINT stop it, then the bus, the database and tracing, in that order. A configuration
 * or connection failure ends the process with a sentence naming the variable (runMain).
 */
export async function runService<E extends z.ZodRawShape, S extends RunningService>(
  name: string,
  ownVariables: z.ZodObject<E>,
  start: (dependencies: ServiceDependencies<BaseConfig & z.infer<z.ZodObject<E>>>) => Promise<S>,
): Promise<void> {
  await runMain(name, async () => {
    const config = parseConfig(name, baseConfigSchema.extend(ownVariables.shape)) as BaseConfig & z.infer<z.ZodObject<E>>;
    startTracing(name);
    const logger = createLogger(name, config.LOG_LEVEL);
    const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE });
    const bus = await connectBus(config.NATS_URL, name, config.BUS_NAMESPACE, natsAuthOf(config));
    const service = await start({ config, logger, database, bus });
    // /healthz, /readyz (this process's own dependencies: its database and NATS) and /metrics.
    const readiness = async () => {
      const nats = !bus.nc.isClosed() && !bus.nc.isDraining();
      const databaseUp = await database.ping().then(
        () => true,
        () => false,
      );
      return { ready: nats && databaseUp, nats: nats ? "ok" : "disconnected", database: databaseUp ? "ok" : "unreachable" };
    };
    const metricsServer = config.METRICS_PORT ? await serveMetrics(config.METRICS_PORT, "0.0.0.0", readiness) : undefined;
    stopOnSignals(logger, [
      () => service.stop(),
      () => new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve())),
      () => bus.close(),
      () => database.close(),
      stopTracing,
    ]);
  });
}
