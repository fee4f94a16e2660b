import { type ChildProcess } from "node:child_process";
import { expect, inject } from "vitest";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import type { Caller, ServiceName } from "@intentmesh/contracts";
import type { SQL } from "drizzle-orm";
import { createTestDatabase, testNamespace } from "./backends";
import { deleteNamespaceStreams } from "./cluster";
import { killServiceProcess, startServiceProcess, untilHealthy, untilOutboxDrained } from "./service-process";

/**
 * The one harness of the kill tests (lane `fault`): a database and a bus namespace of their own,
 * service processes started as `pnpm start` would start them, a kill -9 and a restart, writers
 * that keep writing through the outage, and the exactly-once assertion every kill test makes.
 */
export interface FaultHarness {
  bus: Bus;
  client: BusClient;
  database: DatabaseHandle;
  /** The environment a service process of this harness gets: its database, NATS and namespace. */
  env: Record<string, string>;
  /** Starts a service process (with extra environment; `replica` > 0 for a second process of it) and waits until the service answers its health command. */
  start(service: ServiceName, extraEnv?: Record<string, string>, replica?: number): Promise<ChildProcess>;
  /**
   * SIGKILLs the service's process, waits `whileDown` (milliseconds, default 200, or until a
   * condition such as "clients saw the outage"), starts it again with the same environment and
   * waits until it is healthy.
   */
  killAndRestart(service: ServiceName, whileDown?: number | (() => Promise<void>), replica?: number): Promise<void>;
  /** Waits until the service's outbox relay has published everything its process committed. */
  drained(service: ServiceName): Promise<void>;
  /** Rows of a query on the harness's database. */
  rows<T>(query: SQL): Promise<T[]>;
  /** Polls `done` every 50 ms until it holds; throws `what` when `ms` pass first. */
  until(done: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function openFaultHarness(name: string, caller: Caller, options: { busTimeoutMs?: number } = {}): Promise<FaultHarness> {
  const testDb = await createTestDatabase(inject("databaseUrl"));
  const namespace = testNamespace();
  const bus = await connectBus(inject("natsUrl"), `${name}-test`, namespace);
  bus.checks = { outputs: true, errors: true }; // services started here are held to their catalogue entries
  const database = await openDatabase({ url: testDb.url });
  const client = new BusClient(bus, options.busTimeoutMs ?? 1500);
  const env = { DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace };
  const running = new Map<string, { process: ChildProcess; env: Record<string, string> }>();

  const launch = async (service: ServiceName, serviceEnv: Record<string, string>, replica: number) => {
    const process = startServiceProcess(service, serviceEnv);
    running.set(`${service}#${replica}`, { process, env: serviceEnv });
    await untilHealthy(client, service, caller);
    return process;
  };

  const until = async (done: () => boolean | Promise<boolean>, ms: number, what: string) => {
    const deadline = Date.now() + ms;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await sleep(50);
    }
  };

  return {
    bus,
    client,
    database,
    env,
    start: (service, extraEnv = {}, replica = 0) => launch(service, { ...env, ...extraEnv }, replica),
    async killAndRestart(service, whileDown = 200, replica = 0) {
      const current = running.get(`${service}#${replica}`);
      if (!current) throw new Error(`${service} (replica ${replica}) was not started by this harness`);
      await killServiceProcess(current.process);
      await (typeof whileDown === "number" ? sleep(whileDown) : whileDown());
      await launch(service, current.env, replica);
    },
    drained: (service) => untilOutboxDrained(client, service, caller),
    rows: async <T>(query: SQL) => rowsOf<T>(await database.db.execute(query)),
    until,
    async close() {
      for (const { process } of running.values()) process.kill("SIGKILL");
      await deleteNamespaceStreams(bus, namespace).catch(() => undefined);
      await bus.close();
      await database.close();
      await testDb.drop();
    },
  };
}

/**
 * Writers that keep writing through a kill: `workers` loops call `write(worker, n)` and keep what
 * is acknowledged; a refusal (the service is down, or a retried key was stored before the kill)
 * is simply followed by the next write. Once `warmup` acknowledgements are in, `fault()` runs
 * (kill and restart), and the writers stop after `after` more acknowledgements, so every run
 * has writes on both sides of the fault.
 */
export async function writeThroughFault<T>(options: {
  workers: number;
  write: (worker: number, n: number) => Promise<T>;
  fault: () => Promise<void>;
  warmup?: number;
  after?: number;
  until: FaultHarness["until"];
}): Promise<{ acknowledged: T[]; beforeFault: number }> {
  const acknowledged: T[] = [];
  let writing = true;
  const workers = Array.from({ length: options.workers }, async (_, worker) => {
    for (let n = 0; writing; n++) {
      try {
        acknowledged.push(await options.write(worker, n));
      } catch {
        await sleep(20);
      }
    }
  });
  try {
    // A loaded machine may take seconds to answer the first writes: wait for them, not a fixed time.
    await options.until(() => acknowledged.length >= (options.warmup ?? 10), 30_000, "writes before the fault");
    const beforeFault = acknowledged.length;
    await options.fault();
    const afterFault = acknowledged.length;
    await options.until(() => acknowledged.length >= afterFault + (options.after ?? 20), 30_000, "writes after the fault");
    return { acknowledged, beforeFault };
  } finally {
    writing = false;
    await Promise.all(workers);
  }
}

/**
 * The exactly-once assertion: every acknowledged write is stored, nothing is stored twice, and
 * what was published (a stream, or a log another service appends to) holds each stored item
 * exactly once and nothing else.
 */
export function expectExactlyOnce(what: { acknowledged: readonly string[]; stored: readonly string[]; published: Record<string, readonly string[]> }): void {
  const stored = new Set(what.stored);
  expect(what.stored.length, "nothing is stored twice").toBe(stored.size);
  expect(what.acknowledged.filter((id) => !stored.has(id)), "acknowledged but not stored").toEqual([]);
  for (const [where, items] of Object.entries(what.published)) {
    const copies = new Map<string, number>();
    for (const id of items) copies.set(id, (copies.get(id) ?? 0) + 1);
    expect([...copies].filter(([, n]) => n > 1).map(([id, n]) => `${id} x${n}`), `${where}: published twice`).toEqual([]);
    expect(what.stored.filter((id) => !copies.has(id)), `${where}: stored but never published`).toEqual([]);
    expect([...copies.keys()].filter((id) => !stored.has(id)), `${where}: published but not stored`).toEqual([]);
  }
}

/** Polls a query until it returns at least `count` rows (an asynchronous consumer catching up), then returns them. */
export async function rowsWhenCaughtUp<T>(harness: FaultHarness, query: SQL, count: number, ms = 10_000): Promise<T[]> {
  let rows: T[] = [];
  await harness
    .until(async () => (rows = await harness.rows<T>(query)).length >= count, ms, "a consumer to catch up")
    .catch(() => undefined); // the assertion that follows says what is missing
  return rows;
}
