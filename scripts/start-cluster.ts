/**
 * README command 1: the whole cluster on one machine, in one process. The gateway and every
 * service run here, sharing one database handle (each in its own schema): PostgreSQL when
 * DATABASE_URL is set, else an embedded PGlite under ./.data. NATS comes from NATS_URL; when
 * nothing answers there and nats-server is on PATH, one is started with JetStream under ./.data.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import type { z } from "zod";
import path from "node:path";
import { openDatabase } from "@intentmesh/db";
import { connectBus, natsReachable } from "@intentmesh/bus";
import { StartupError, createLogger, natsAuthOf, parseConfig, redactUrl, runMain, startTracing, stopOnSignals, stopTracing, type Logger } from "@intentmesh/telemetry";
import { clusterServices } from "../services/cluster";
import { createGateway } from "../services/gateway/src/app";
import { createKeysFile, loadApiKeys } from "../services/gateway/src/api-keys";
import { gatewayConfigSchema, gatewayOptionsFromConfig, type GatewayConfig } from "../services/gateway/src/config";
import type { AnyServiceDefinition } from "@intentmesh/service";

await runMain("intentmesh", async () => {
  // The gateway's variables and every service's own: each means here what it means in that
  // service's own process (services/<name>/src/manifest.ts).
  const services: AnyServiceDefinition[] = Object.values(clusterServices);
  const schema = services.reduce<z.ZodObject>((all, service) => all.extend(service.env.shape), gatewayConfigSchema);
  const config = parseConfig("intentmesh", schema) as GatewayConfig & Record<string, unknown>;
  startTracing("intentmesh");
  const logger = createLogger("intentmesh", config.LOG_LEVEL);

  // Only the default address may be given a nats-server of our own: an explicit NATS_URL that does
  // not answer is a mistake to report, not a port to take over.
  const natsUrlGiven = Boolean(process.env.NATS_URL?.trim());
  if (!natsUrlGiven) await ensureLocalNats(config.NATS_URL, config.DATA_DIR, logger);
  const keysFile = config.API_KEYS || config.API_KEYS_FILE ? config.API_KEYS_FILE : ensureKeysFile(config.DATA_DIR, logger);
  const keys = loadApiKeys(config.API_KEYS, keysFile);

  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE, statementNames: config.DATABASE_STATEMENT_NAMES === "on" });
  const bus = await connectBus(config.NATS_URL, "intentmesh", config.BUS_NAMESPACE, natsAuthOf(config));
  const running: { stop(): Promise<void> }[] = [];
  for (const service of services) {
    running.push(await service.start({ bus, database, logger: createLogger(service.name, config.LOG_LEVEL), ...service.options(config) }));
  }
  const gateway = await createGateway({ bus, keys, logger: createLogger("gateway", config.LOG_LEVEL), ...gatewayOptionsFromConfig(config) });
  await gateway.listen(config.PORT, config.HOST);
  const shownHost = config.HOST === "0.0.0.0" ? "127.0.0.1" : config.HOST;
  logger.info(
    { url: `http://${shownHost}:${config.PORT}`, database: database.kind, nats: redactUrl(config.NATS_URL) },
    `intentmesh is up: http://${shownHost}:${config.PORT}/api/v1 (docs at /docs, the operator console at /console)`,
  );
  stopOnSignals(logger, [() => gateway.stop(), ...running.reverse().map((service) => () => service.stop()), () => bus.close(), () => database.close(), stopTracing]);
});

/** Starts a nats-server with JetStream under the data directory when nothing answers the default NATS address. */
async function ensureLocalNats(url: string, dataDir: string, logger: Logger): Promise<void> {
  if (await natsReachable(url)) return;
  const found = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" }).stdout.trim();
  if (!found) {
    throw new StartupError(
      "NATS_URL",
      `nothing answers NATS at ${url} and nats-server is not on PATH: install it (apt-get install nats-server) and run it with JetStream (nats-server -js), or set NATS_URL to a running server`,
    );
  }
  const { hostname, port } = new URL(url.split(",")[0]!.replace(/^nats:/, "http:"));
  const storeDir = path.resolve(dataDir, "nats");
  fs.mkdirSync(storeDir, { recursive: true });
  const child = spawn(found, ["-a", hostname || "127.0.0.1", "-p", port || "4222", "-js", "-sd", storeDir], { stdio: "ignore", detached: false });
  process.once("exit", () => child.kill());
  logger.info({ url, storeDir }, "started nats-server with JetStream");
  for (let i = 0; i < 50; i++) {
    if (await natsReachable(url)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new StartupError("NATS_URL", `nats-server was started but does not answer at ${url}: is the port taken by something else? Set NATS_URL to a running server`);
}

function ensureKeysFile(dataDir: string, logger: Logger): string {
  const file = path.resolve(dataDir, "api-keys.json");
  if (!fs.existsSync(file)) {
    createKeysFile(file);
    logger.info({ file }, `no API keys were configured: created ${file} with one random key per role (admin, coordinator, operator, agent)`);
  } else {
    logger.info({ file }, `using the API keys in ${file}`);
  }
  return file;
}
