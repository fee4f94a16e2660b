import { randomBytes } from "node:crypto";
import pg from "pg";
import { openDatabase, type DatabaseHandle } from "@intentmesh/db";
import type { BusClient } from "@intentmesh/bus";

/**
 * Counting what one command asks of PostgreSQL and of the bus, for the service-lane tests that
 * pin a saving (COMMON: "a test that would fail if the saving regressed"), never by timing.
 *
 * A counting database is a handle of its own on the test's database, its pool told apart by its
 * connection's application_name; every statement its connections send (BEGIN and COMMIT
 * included) is recorded while `count` runs. A test hands it to a handler in place of the
 * service's own (`{ ...service.ctx, db: counting.db, query: counting.query }`), so what the
 * service's consumers, relays and timers do meanwhile is not counted.
 */
export interface CountingDatabase extends DatabaseHandle {
  /** Runs `work` and answers what it returned and the statements this handle sent meanwhile, in order. */
  count<T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }>;
}

/** Recordings by application_name; a name is present only while its handle counts. */
const recording = new Map<string, string[]>();
let patched = false;

/** Every pg client's query passes here once; only the counting handles' connections are recorded. */
function recordStatements(): void {
  if (patched) return;
  patched = true;
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: { connectionParameters?: { application_name?: string } }, ...args: unknown[]) {
    const into = recording.get(this.connectionParameters?.application_name ?? "");
    if (into) {
      const first = args[0] as string | { text?: string };
      into.push(typeof first === "string" ? first : String(first?.text ?? ""));
    }
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
}

export async function openCountingDatabase(databaseUrl: string): Promise<CountingDatabase> {
  // Before the pool connects: the connections bind the query method they find.
  recordStatements();
  const name = `im-count-${randomBytes(6).toString("hex")}`;
  const url = new URL(databaseUrl);
  url.searchParams.set("application_name", name);
  const handle = await openDatabase({ url: url.toString(), poolSize: 2 });
  return {
    ...handle,
    count: async (work) => {
      const statements: string[] = [];
      recording.set(name, statements);
      try {
        return { result: await work(), statements };
      } finally {
        recording.delete(name);
      }
    },
  };
}

/** A bus client that records the subject of every request it sends before sending it. */
export function countingClient(client: BusClient): { client: BusClient; subjects: string[] } {
  const subjects: string[] = [];
  const counted = Object.create(client) as BusClient;
  counted.request = ((command: { subject: string }, ...rest: unknown[]) => {
    subjects.push(command.subject);
    return (client.request as (...args: unknown[]) => unknown).call(client, command, ...rest);
  }) as BusClient["request"];
  return { client: counted, subjects };
}

/** Statements by their first word (begin, select, update, insert, with, commit), lower case, in order. */
export const verbsOf = (statements: string[]): string[] => statements.map((text) => text.trim().split(/\s+/)[0]!.toLowerCase());
