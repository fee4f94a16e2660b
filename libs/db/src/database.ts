import path from "node:path";
import fs from "node:fs";
import pg from "pg";
import { sql } from "drizzle-orm";
import { scrapedGauge, traceSqlStatements } from "@intentmesh/telemetry";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { PGlite } from "@electric-sql/pglite";
import { StartupError, redactUrl } from "@intentmesh/telemetry";
import { StatementNames, nameRepeatedStatements } from "./statement-names";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Database = PgDatabase<PgQueryResultHKT, any>;
/** An open transaction of a Database. */
export type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];
/** Either the database or an open transaction: what a query helper may run on. */
export type Queryable = Database | Tx;

export interface DatabaseHandle {
  db: Database;
  kind: "postgres" | "pglite";
  /**
   * Runs one parametrized statement outside any transaction, as a named prepared statement on
   * PostgreSQL (parsed and planned once per connection). For the hot paths where a query
   * builder's per-call work shows up in profiles; one statement is atomic on its own.
   */
  query<T = Record<string, unknown>>(name: string, text: string, params: unknown[]): Promise<T[]>;
  /** Applies the committed migrations of one service; their bookkeeping lives outside the service's schema. */
  migrate(service: string, migrationsFolder: string): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** postgres://… When absent, an embedded PGlite database under dataDir is used. */
  url?: string;
  dataDir?: string;
  poolSize?: number;
  /**
   * PostgreSQL only: the statements this process repeats run as named prepared statements,
   * planned once per connection (statement-names.ts). On unless false, as
   * DATABASE_STATEMENT_NAMES (libs/telemetry config.ts) is; false for a pooler that cannot keep them.
   */
  statementNames?: boolean;
}

/** How long one attempt to open a PostgreSQL connection may take. */
export const CONNECT_TIMEOUT_MS = 5000;

/** Schema that holds each service's migration journal, so `migrate` never races CREATE SCHEMA of the service. */
export const MIGRATIONS_SCHEMA = "im_migrations";

// One embedded database per data directory and process: PGlite is single-process, so every
// service of a one-machine cluster shares it, each in its own schema.
const embedded = new Map<string, { pglite: PGlite; users: number; release: () => void }>();

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.url) return openPostgres(options.url, options.poolSize ?? 10, options.statementNames ?? true);
  return openPglite(path.resolve(options.dataDir ?? ".data", "pglite"));
}

async function openPostgres(url: string, poolSize: number, statementNames: boolean): Promise<DatabaseHandle> {
  // A connection attempt gives up after a few seconds: while PostgreSQL is down or unreachable
  // requests answer 503 at once instead of queueing behind connects that never finish.
  // A connection is retired after an hour: the statements it prepared (statement-names.ts) then
  // follow what the process runs now, not what it ran first.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, maxLifetimeSeconds: 3600 });
  // A dropped idle connection must not crash the process; the pool replaces it.
  pool.on("error", () => undefined);
  // Nor may a connection lost while checked out (in a transaction, between two statements): pg
  // emits 'error' on the client, and an 'error' event with no listener ends the process. The
  // statement in flight fails on its own and the pool discards the broken client on release.
  // Every statement gets a client span inside the request's trace (libs/telemetry sql-spans).
  const target = sqlTarget(url);
  // The statements this process repeats are planned once per connection (statement-names.ts),
  // unless DATABASE_STATEMENT_NAMES=off.
  const names = statementNames ? new StatementNames() : undefined;
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
    traceSqlStatements(client, target);
    if (names) nameRepeatedStatements(client, names);
  });
  openPools.add(pool);
  const db = drizzlePg(pool) as unknown as Database;
  db.transaction = releasingTransaction(pool);
  return {
    db,
    kind: "postgres",
    query: async <T>(name: string, text: string, params: unknown[]) => (await pool.query({ name, text, values: params })).rows as T[],
    // Services and their replicas start together; one session advisory lock for every service
    // (they share the journal schema) lets one migrate while the others wait, then find nothing
    // left to apply.
    migrate: async (service, migrationsFolder) => {
      const client = await pool.connect().catch((error: unknown) => {
        throw new StartupError("DATABASE_URL", `PostgreSQL at ${redactUrl(url)} cannot be reached (${describePgError(error)}): start it, or set DATABASE_URL to a server that answers`);
      });
      try {
        await client.query("select pg_advisory_lock(hashtext($1))", ["im-migrate"]);
        await migratePg(drizzlePg(client) as never, { migrationsFolder, migrationsSchema: MIGRATIONS_SCHEMA, migrationsTable: service });
      } finally {
        await client.query("select pg_advisory_unlock(hashtext($1))", ["im-migrate"]).catch(() => undefined);
        client.release();
      }
    },
    ping: async () => {
      await db.execute(sql`select 1`);
    },
    close: () => {
      openPools.delete(pool);
      return pool.end();
    },
  };
}

/** Database, host and port of a connection URL, for span attributes (never its user or password). */
function sqlTarget(url: string): { database?: string; host?: string; port?: number } {
  try {
    const parsed = new URL(url);
    return { database: decodeURIComponent(parsed.pathname.slice(1)) || undefined, host: parsed.hostname || undefined, port: parsed.port ? Number(parsed.port) : 5432 };
  } catch {
    return {};
  }
}

async function openPglite(dir: string): Promise<DatabaseHandle> {
  let entry = embedded.get(dir);
  if (!entry) {
    fs.mkdirSync(dir, { recursive: true });
    const release = lockDataDir(dir);
    entry = { pglite: await PGlite.create(dir), users: 0, release };
    embedded.set(dir, entry);
  }
  entry.users += 1;
  const shared = entry;
  const db = drizzlePglite(shared.pglite) as unknown as Database;
  return {
    db,
    kind: "pglite",
    query: async <T>(_name: string, text: string, params: unknown[]) => (await shared.pglite.query<T>(text, params)).rows,
    migrate: (service, migrationsFolder) =>
      migratePglite(db as never, { migrationsFolder, migrationsSchema: MIGRATIONS_SCHEMA, migrationsTable: service }),
    ping: async () => {
      await db.execute(sql`select 1`);
    },
    close: async () => {
      shared.users -= 1;
      if (shared.users === 0) {
        embedded.delete(dir);
        await shared.pglite.close();
        shared.release();
      }
    },
  };
}

/**
 * PGlite has no lock of its own, and two processes on one data directory corrupt it. A lock file
 * holding the owner's pid keeps a second process out with a sentence; a lock left by a process
 * that no longer runs is taken over.
 */
function lockDataDir(dir: string): () => void {
  const lockFile = path.join(dir, "intentmesh.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: "wx" });
      const release = () => fs.rmSync(lockFile, { force: true });
      process.once("exit", release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number(fs.readFileSync(lockFile, "utf8"));
      if (owner && owner !== process.pid && processRuns(owner)) {
        throw new Error(
          `the embedded database at ${dir} is in use by process ${owner}; stop that process, or set DATABASE_URL to share a PostgreSQL server`,
        );
      }
      fs.rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`cannot lock the embedded database at ${dir}`);
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Transactions that always give their connection back. drizzle's pool transaction sends BEGIN
 * before its try block, so a connection lost at BEGIN (PostgreSQL restarting) was never released:
 * each crash shrank the pool for good until the service wedged. Here the connection is taken and
 * released by us, around a drizzle transaction on that one client; a connection that failed
 * (an error that is not the caller's AppError) is destroyed rather than reused.
 */
function releasingTransaction(pool: pg.Pool): Database["transaction"] {
  const onClient = new WeakMap<pg.PoolClient, Database>();
  return (async (run: Parameters<Database["transaction"]>[0], config?: Parameters<Database["transaction"]>[1]) => {
    const client = await pool.connect();
    let failure: Error | undefined;
    try {
      let clientDb = onClient.get(client);
      if (!clientDb) {
        clientDb = drizzlePg(client) as unknown as Database;
        onClient.set(client, clientDb);
      }
      return await clientDb.transaction(run, config);
    } catch (error) {
      if ((error as Error)?.name !== "AppError") failure = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      client.release(failure);
    }
  }) as Database["transaction"];
}

/** What went wrong with a PostgreSQL connection, in a few words and never with a password. */
function describePgError(error: unknown): string {
  const e = error as { code?: string; message?: string };
  if (e?.code === "ECONNREFUSED") return "connection refused";
  if (e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN") return "host not found";
  if (e?.code === "28P01" || e?.code === "28000") return "authentication failed";
  if (e?.code === "3D000") return "the database does not exist";
  if (/timeout/i.test(e?.message ?? "")) return "no answer in time";
  return (e?.message ?? String(error)).slice(0, 200);
}

/** Rows of a raw `db.execute`, whichever driver ran it. */
export function rowsOf<T>(result: unknown): T[] {
  const r = result as { rows?: T[] } | T[];
  return Array.isArray(r) ? r : (r.rows ?? []);
}

/** The PostgreSQL pools open in this process, read when Prometheus scrapes. */
const openPools = new Set<pg.Pool>();
scrapedGauge("intentmesh_db_pool_connections", "PostgreSQL pool connections of this process: total, idle, and requests waiting for one", ["state"], (set) => {
  let total = 0;
  let idle = 0;
  let waiting = 0;
  for (const pool of openPools) {
    total += pool.totalCount;
    idle += pool.idleCount;
    waiting += pool.waitingCount;
  }
  set({ state: "total" }, total);
  set({ state: "idle" }, idle);
  set({ state: "waiting" }, waiting);
});
