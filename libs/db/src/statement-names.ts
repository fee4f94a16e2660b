import { createHash } from "node:crypto";

/**
 * Names for the statements a process runs again and again, so that each PostgreSQL connection
 * parses and plans them once (a named prepared statement) instead of on every call.
 *
 * drizzle sends its statements unnamed, and PostgreSQL parses and plans an unnamed statement
 * every time. Measured with pg_stat_statements (track_planning on) on task_claim_complete:
 * planning took about 750 µs of PostgreSQL time per task cycle against 400 µs of execution,
 * the task select alone 500 µs of planning per call. A named statement is planned once per
 * connection; after its fifth run PostgreSQL keeps a generic plan when that plan costs no more
 * than the custom ones did.
 *
 * Bounded, because each prepared statement is a cached plan in its connection's memory (20 KB
 * for a one-table update, 85 KB for a join with a subquery, measured on PostgreSQL 15): only a
 * text seen `after` times is named (a one-off statement keeps no plan), at most `maxNamed` texts
 * are named per process and `maxCounted` counted, and nameRepeatedStatements prepares at most
 * `PER_CONNECTION` of them on one connection; the pool retires a connection after an hour
 * (database.ts), so each connection's set follows what the process runs now.
 */
export class StatementNames {
  private readonly counts = new Map<string, number>();
  private readonly names = new Map<string, string>();

  constructor(
    private readonly limits: { after: number; maxNamed: number; maxCounted: number } = { after: 3, maxNamed: 1024, maxCounted: 4096 },
  ) {}

  /** The name to run `text` under, or undefined to run it unnamed this time. */
  nameOf(text: string): string | undefined {
    const named = this.names.get(text);
    if (named !== undefined || this.names.size >= this.limits.maxNamed) return named;
    const count = (this.counts.get(text) ?? 0) + 1;
    if (count < this.limits.after) {
      if (this.counts.size < this.limits.maxCounted || this.counts.has(text)) this.counts.set(text, count);
      return undefined;
    }
    this.counts.delete(text);
    const name = statementName(text, 0);
    this.names.set(text, name);
    return name;
  }

  /**
   * The connection holding `name` refused it because the table under it changed shape (a
   * migration added a column a `*` or `returning t.*` reads): the text is given a new name, so
   * every connection prepares it afresh on its next run. The call that failed stays failed; it
   * may have been inside a transaction, which cannot be retried from here.
   */
  renamed(name: string): void {
    for (const [text, current] of this.names) {
      if (current !== name) continue;
      const generation = Number(/_g(\d+)$/.exec(current)?.[1] ?? 0) + 1;
      this.names.set(text, statementName(text, generation));
      return;
    }
  }

  get namedCount(): number {
    return this.names.size;
  }
}

/** A name PostgreSQL takes (63 bytes at most), the same for the same text in every process. */
function statementName(text: string, generation: number): string {
  const digest = createHash("sha256").update(text).digest("hex").slice(0, 32);
  return generation ? `im_${digest}_g${generation}` : `im_${digest}`;
}

/** The part of a pg client this touches. */
interface QueryableClient {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  query: (...args: any[]) => any;
}

/** The most statements nameRepeatedStatements prepares on one connection (at most a few MB of plans). */
export const PER_CONNECTION = 64;

/** PostgreSQL's answer to a prepared statement whose result columns changed under it. */
const PLAN_CHANGED_SHAPE = "0A000";

/**
 * Whether a failed named statement leaves its name broken on this connection. pg (8.x) turns a
 * parameter it cannot serialise (a BigInt inside an object, a cycle) into an error thrown after
 * it sent Parse: it then closes the statement on the server, yet still records it as parsed when
 * ParseComplete arrives, so every later call under that name on this connection would fail with
 * "prepared statement does not exist" (26000). The pool discards a connection whose statement
 * failed (database.ts), but a client held across statements keeps it. Such an error has no
 * SQLSTATE; neither has a lost connection, which is discarded anyway. The text then runs unnamed
 * on this connection.
 */
function unusableAfter(error: { code?: unknown }): boolean {
  return typeof error.code !== "string";
}

/**
 * Runs the repeated parametrized statements of a pg client under StatementNames' names. Only
 * statements with parameters: those are what drizzle and the services send; transaction control
 * and migrations send none, and a text without parameters may hold several statements, which a
 * prepared statement cannot. A statement that already has a name, or a streaming one, passes
 * through untouched; so does one past the connection's PER_CONNECTION prepared statements.
 */
export function nameRepeatedStatements(client: QueryableClient, names: StatementNames, perConnection = PER_CONNECTION): void {
  const query = client.query.bind(client);
  // The names this connection was given: a name not among them is prepared only while there is room.
  const prepared = new Set<string>();
  // Names this connection must not use again (see unusableAfter).
  const lost = new Set<string>();
  const mayUse = (name: string): boolean => {
    if (lost.has(name)) return false;
    if (prepared.has(name)) return true;
    if (prepared.size >= perConnection) return false;
    prepared.add(name);
    return true;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  client.query = (...args: any[]) => {
    const first = args[0] as { text?: unknown; name?: unknown; values?: unknown; submit?: unknown } | string | undefined;
    const text = typeof first === "string" ? first : typeof first?.text === "string" && first.name === undefined && typeof first.submit !== "function" ? first.text : undefined;
    const values = Array.isArray(args[1]) ? args[1] : typeof first === "object" ? first?.values : undefined;
    const name = text !== undefined && Array.isArray(values) && values.length > 0 ? names.nameOf(text) : undefined;
    if (name === undefined || !mayUse(name)) return query(...args);
    args[0] = typeof first === "string" ? { text, name } : { ...first, name };
    const last = args.length - 1;
    const onError = (error: { code?: unknown; message?: unknown } | null | undefined) => {
      if (!error) return;
      if (error.code === PLAN_CHANGED_SHAPE && String(error.message).includes("cached plan must not change result type")) names.renamed(name);
      else if (unusableAfter(error)) lost.add(name);
    };
    if (typeof args[last] === "function") {
      const callback = args[last] as (error: unknown, result: unknown) => void;
      args[last] = (error: { code?: unknown; message?: unknown } | null, result: unknown) => {
        onError(error);
        callback(error, result);
      };
      return query(...args);
    }
    const pending = query(...args) as Promise<unknown>;
    pending.catch(onError);
    return pending;
  };
}
