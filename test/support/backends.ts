import { execSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import pg from "pg";

/**
 * Where tests find NATS and PostgreSQL: NATS_URL and DATABASE_URL from the environment (CI and
 * these machines), else containers started with testcontainers where a Docker engine answers.
 * The global setup resolves them once and hands them to every test file through the environment.
 */
export interface Backends {
  natsUrl: string;
  databaseUrl: string;
  stop(): Promise<void>;
}

export async function resolveBackends(): Promise<Backends> {
  let natsUrl = process.env.NATS_URL;
  let databaseUrl = process.env.DATABASE_URL;
  if (natsUrl && databaseUrl) return { natsUrl, databaseUrl, stop: async () => undefined };
  if (!dockerAnswers()) {
    // No Docker: servers on their standard local ports, when they answer, are the environment's.
    natsUrl ??= (await natsAnswers(LOCAL_NATS)) ? LOCAL_NATS : undefined;
    databaseUrl ??= (await postgresAnswers(LOCAL_POSTGRES)) ? LOCAL_POSTGRES : undefined;
    if (natsUrl && databaseUrl) return { natsUrl, databaseUrl, stop: async () => undefined };
    throw new Error(
      "tests need NATS (with JetStream) and PostgreSQL: set NATS_URL and DATABASE_URL, run them on their standard local ports, or run a Docker engine for testcontainers",
    );
  }
  const { GenericContainer, Wait } = await import("testcontainers");
  const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
  const nats = natsUrl
    ? undefined
    : await new GenericContainer("nats:2.10-alpine").withCommand(["-js"]).withExposedPorts(4222).withWaitStrategy(Wait.forLogMessage(/Server is ready/)).start();
  const postgres = databaseUrl ? undefined : await new PostgreSqlContainer("postgres:16-alpine").start();
  return {
    natsUrl: natsUrl ?? `nats://${nats!.getHost()}:${nats!.getMappedPort(4222)}`,
    databaseUrl: databaseUrl ?? postgres!.getConnectionUri(),
    stop: async () => {
      await nats?.stop();
      await postgres?.stop();
    },
  };
}

const LOCAL_NATS = "nats://127.0.0.1:4222";
const LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres";

async function natsAnswers(url: string): Promise<boolean> {
  const { natsReachable } = await import("@intentmesh/bus");
  return natsReachable(url);
}

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

function dockerAnswers(): boolean {
  try {
    execSync("docker info", { stdio: "ignore", timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/** A database of its own for one test file, dropped at the end. */
export async function createTestDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `im_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** A bus namespace of its own for one test file: its subjects and streams touch no other file's. */
export const testNamespace = () => `t${randomBytes(5).toString("hex")}`;
