import { randomBytes } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { CLUSTER_SERVICES } from "@intentmesh/contracts";
import { BENCH_DIR, freePort, startNode, stopAll, type Child } from "./processes";

const adminUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const natsUrl = process.env.NATS_URL || "nats://127.0.0.1:4222";
export const LOG_DIR = path.join(BENCH_DIR, "results", "logs");

export interface BenchCluster {
  /** The database of this run (dropped by stop()). */
  databaseUrl: string;
  dbName: string;
  /** The admin connection the run's database was created on (BENCH_STATEMENTS reads pg_stat_statements there). */
  adminUrl: string;
  /** The gateway's address and the headers of its admin key. */
  base: string;
  headers: Record<string, string>;
  /** Every service process, in CLUSTER_SERVICES order, and the gateway. */
  services: Child[];
  gateway: Child;
  /** Stops every process and drops the database. */
  stop(): Promise<void>;
}

/**
 * The whole cluster as `pnpm start` runs it, for the benchmarks that start their own
 * (bench:graph, bench:memory): a fresh database and bus namespace named after `prefix`, every
 * service of services/cluster.ts and one gateway with a bench admin key. `nodeFlags` adds node
 * flags per process name (CPU profiles).
 */
export async function startBenchCluster(prefix: string, nodeFlags: (name: string) => string[] = () => []): Promise<BenchCluster> {
  const namespace = `bench${prefix}${randomBytes(4).toString("hex")}`;
  const dbName = `im_bench_${prefix}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${dbName}`);
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;
  const apiKey = `bench_${randomBytes(24).toString("base64url")}`;
  const port = await freePort();
  const common = { NATS_URL: natsUrl, DATABASE_URL: dbUrl.toString(), BUS_NAMESPACE: namespace, LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: undefined };
  const services = CLUSTER_SERVICES.map((name) =>
    startNode({ name: `${prefix}-${name}`, script: `services/${name}/src/main.ts`, env: common, logDir: LOG_DIR, nodeFlags: nodeFlags(name) }),
  );
  const gateway = startNode({
    name: `${prefix}-gateway`,
    script: "services/gateway/src/main.ts",
    env: { ...common, API_KEYS: JSON.stringify([{ key: apiKey, principal: "bench", roles: ["admin"] }]), PORT: String(port), HOST: "127.0.0.1" },
    logDir: LOG_DIR,
    nodeFlags: nodeFlags("gateway"),
  });
  return {
    databaseUrl: dbUrl.toString(),
    dbName,
    adminUrl,
    base: `http://127.0.0.1:${port}`,
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    services,
    gateway,
    async stop() {
      await stopAll();
      await admin.query(`drop database if exists ${dbName} with (force)`).catch(() => undefined);
      await admin.end();
    },
  };
}
