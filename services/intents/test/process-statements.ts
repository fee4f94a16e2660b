import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { IntentsService } from "../src/service";

/**
 * Every statement any pg client of this test process sends while `statementsDuring` runs, for the
 * intents service-lane tests that pin a command's statements (task-statements, cost-statements).
 * Call it at module load, before the harness opens its pool: each connection binds query() when it
 * connects. The harness's consumers and timers run in this process too, so those tests stop the
 * outbox relay and start the service with its timers an hour apart (QUIET).
 */
export function recordProcessStatements() {
  const seen: string[] = [];
  let counting = false;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as { text?: unknown } | string;
    if (counting) seen.push(typeof first === "string" ? first : String(first?.text ?? ""));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return {
    /** The statements' texts, in order, that were sent while `run` ran. */
    async statementsDuring(run: () => Promise<unknown>): Promise<string[]> {
      seen.length = 0;
      counting = true;
      try {
        await run();
      } finally {
        counting = false;
      }
      return [...seen];
    },
    /** Puts pg's own query() back (afterAll). */
    restore() {
      pg.Client.prototype.query = query;
    },
  };
}

export type QuietIntentsHarness = ServiceHarness<{ intents: IntentsService; stop(): Promise<void> }>;

/**
 * For a test file that pins the statements of intents commands: records the process's statements
 * (installed at once, before the harness opens its pool) and, around the file's tests, an intents
 * service with its timers an hour apart and its outbox relay stopped (the relay's statements are
 * not the command's). `harness()` is the running one.
 */
export function recordedIntentsService() {
  const recorder = recordProcessStatements();
  let harness: QuietIntentsHarness | undefined;
  beforeAll(async () => {
    harness = await startServiceHarness(manifestServices({ intents: QUIET.intents }));
    await harness.service.intents.relay.stop();
  });
  afterAll(async () => {
    recorder.restore();
    await harness?.stop();
  });
  return {
    harness: (): QuietIntentsHarness => harness!,
    statementsDuring: recorder.statementsDuring,
  };
}
