import type { Logger } from "pino";

/**
 * Stops a process in order on SIGTERM or SIGINT (Kubernetes sends SIGTERM): each step runs
 * once, a failing step is logged and the next still runs, then the process exits.
 */
export function stopOnSignals(logger: Logger, steps: (() => Promise<unknown>)[]): void {
  const shutdown = async (signal: string) => {
    logger.info({ signal }, "shutting down");
    for (const step of steps) await step().catch((err: unknown) => logger.warn({ err }, "a shutdown step failed"));
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
}
