import { expect } from "vitest";
import pg from "pg";
import { openDatabase, type DatabaseHandle } from "@intentmesh/db";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { OperationRequest } from "../../../test/support/typed-api";
import { uniqueTag } from "../../../test/support/e2e-helpers";
import type { ChannelsService } from "../src/service";
import type { IntentsService } from "../../intents/src/service";

export type ChannelsHarness = ServiceHarness<{ channels: ChannelsService; stop(): Promise<void> }>;

/**
 * The channels service with what every channel request asks beside it: intents (the intent's ACL)
 * and the registry (X-Agent-ID bindings, role addressing); sweeps only when a test calls them.
 */
export const startChannelsHarness = (): Promise<ChannelsHarness> =>
  startServiceHarness(
    manifestServices({
      intents: QUIET.intents,
      registry: QUIET.registry,
      channels: QUIET.channels,
    }),
  );

export interface Agent {
  id: string;
  /** What a request acting as this agent carries: the agent key and X-Agent-ID. */
  as: Pick<OperationRequest, "key" | "headers">;
}

/** Registers an agent (with a role, when given) on the agent key. */
export async function registerAgent(harness: ChannelsHarness, prefix: string, role: string | null = null): Promise<Agent> {
  const id = uniqueTag(prefix);
  expect((await harness.api("agentsRegister", { key: "agent", body: { agent_id: id, ...(role ? { role_id: role } : {}) } })).status).toBe(201);
  return { id, as: { key: "agent", headers: { "X-Agent-ID": id } } };
}

/** The application_name of each counted service's pool: how a statement is told to come from it. */
const COUNTED = { channels: "im-counted-channels", intents: "im-counted-intents" } as const;
type Counted = keyof typeof COUNTED;
const recorded: Record<Counted, string[]> = { channels: [], intents: [] };

/**
 * Records the text of every statement a client of a counted pool sends (the pg client's query,
 * through which drizzle, named statements, BEGIN and COMMIT all pass). Installed once per test
 * file (each runs in a process of its own), before any counted pool connects.
 */
function recordStatements(): void {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown; __counted?: true };
  if (proto.__counted) return;
  const query = proto.query;
  proto.query = function (this: { connectionParameters?: { application_name?: string } }, ...args: unknown[]) {
    const app = this.connectionParameters?.application_name;
    const into = app === COUNTED.channels ? recorded.channels : app === COUNTED.intents ? recorded.intents : undefined;
    if (into) {
      const first = args[0] as string | { text?: unknown };
      into.push(typeof first === "string" ? first : String(first?.text ?? ""));
    }
    return query.apply(this, args);
  };
  proto.__counted = true;
}

export interface CountingHarness extends ServiceHarness<{ channels: ChannelsService; intents: IntentsService; stop(): Promise<void> }> {
  /** The statements each service sent since the last call (and forgets them). */
  takeStatements(): Record<Counted, string[]>;
}

/**
 * The channels harness with the intents and channels services each on a pool of its own, whose
 * statements are recorded: a test counts the work one request costs each of them, a number that
 * does not depend on the host's load (bench/ BENCH_STATEMENTS measures the same under load).
 */
export async function startCountingChannelsHarness(): Promise<CountingHarness> {
  recordStatements();
  const pools: DatabaseHandle[] = [];
  const harness = await startServiceHarness(async (connections) => {
    const counted = async (service: Counted) => {
      const url = new URL(connections.databaseUrl);
      url.searchParams.set("application_name", COUNTED[service]);
      const handle = await openDatabase({ url: url.toString(), poolSize: 5 });
      pools.push(handle);
      return handle;
    };
    // As startChannelsHarness, each counted service on its own pool of the same database.
    const intents = await manifestServices({ intents: QUIET.intents })({ ...connections, database: await counted("intents") });
    const registry = await manifestServices({ registry: QUIET.registry })(connections);
    const channels = await manifestServices({ channels: QUIET.channels })({ ...connections, database: await counted("channels") });
    return {
      channels: channels.channels,
      intents: intents.intents,
      stop: async () => {
        for (const running of [channels, registry, intents]) await running.stop();
        for (const pool of pools) await pool.close();
      },
    };
  });
  return {
    ...harness,
    takeStatements: () => {
      const taken = { channels: recorded.channels.splice(0), intents: recorded.intents.splice(0) };
      return taken;
    },
  };
}
