import { connectBus } from "@intentmesh/bus";
import { createLogger, natsAuthOf, parseConfig, runMain, startTracing, stopOnSignals, stopTracing } from "@intentmesh/telemetry";
import { gatewayConfigSchema, gatewayOptionsFromConfig } from "./config";
import { loadApiKeys } from "./api-keys";
import { createGateway } from "./app";

// Entry point of the gateway alone: config -> logger -> keys -> bus -> HTTP -> shutdown.
await runMain("gateway", async () => {
  const config = parseConfig("gateway", gatewayConfigSchema);
  startTracing("gateway");
  const logger = createLogger("gateway", config.LOG_LEVEL);
  const keys = loadApiKeys(config.API_KEYS, config.API_KEYS_FILE);
  const bus = await connectBus(config.NATS_URL, "gateway", config.BUS_NAMESPACE, natsAuthOf(config));
  const gateway = await createGateway({ bus, keys, logger, ...gatewayOptionsFromConfig(config) });
  await gateway.listen(config.PORT, config.HOST);
  logger.info({ host: config.HOST, port: config.PORT, keys: keys.size }, "gateway listening");
  stopOnSignals(logger, [() => gateway.stop(), () => bus.close(), stopTracing]);
});
