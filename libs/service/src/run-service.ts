import { z } from "zod";
import { openDatabase } from "@intentmesh/db";
import { connectBus } from "@intentmesh/bus";
import type { RunningService, ServiceConnections, ServiceDefinition } from "./definition";
import { baseConfigSchema, createLogger, natsAuthOf, parseConfig, runMain, serveMetrics, startTracing, stopOnSignals, stopTracing, type BaseConfig } from "@intentmesh/telemetry";

/**
 * The entry point of one back-end service process, the same for every service: parse the
 * environment once (the variables every service reads plus the service's own, one sentence per
 * mistake), start tracing, open the logger, the database and the bus, start the service, and on
 * SIGTERM/SIGINT stop it, then the bus, the database and tracing, in that order. A configuration
 * or connection failure ends the process with a sentence naming the variable (runMain).
 */
export async function runService<Env extends z.ZodObject, StartOptions extends ServiceConnections, S extends RunningService>(definition: ServiceDefinition<Env, StartOptions, S>): Promise<void> {
  const { name } = definition;
  await runMain(name, async () => {
    const config = parseConfig(name, baseConfigSchema.extend(definition.env.shape)) as BaseConfig & z.infer<Env>;
    startTracing(name);
    const logger = createLogger(name, config.LOG_LEVEL);
    const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE, statementNames: config.DATABASE_STATEMENT_NAMES === "on" });
    const bus = await connectBus(config.NATS_URL, name, config.BUS_NAMESPACE, natsAuthOf(config));
    // Every own option of a service is optional (its defaults apply), so connections and what
    // the environment sets are a whole start.
    const service = await definition.start({ logger, database, bus, ...definition.options(config) } as Parameters<typeof definition.start>[0]);
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
