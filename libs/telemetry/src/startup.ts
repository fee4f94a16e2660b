/**
 * Start-up that ends in one sentence, not a stack trace. A misconfiguration (a variable that is
 * wrong, a dependency that does not answer where a variable says) throws a StartupError naming
 * the variable and the fix; runMain prints it on stderr and exits non-zero, so an operator reads
 * what to change and a supervisor sees the failure. Each dependency step is bounded in time
 * (NATS and PostgreSQL connects give up after a few seconds), so a start-up fails within 10 s.
 */
export class StartupError extends Error {
  constructor(
    /** The environment variable to look at. */
    readonly variable: string,
    message: string,
  ) {
    super(message);
    this.name = "StartupError";
  }
}

export const isStartupError = (error: unknown): error is StartupError =>
  error instanceof Error && error.name === "StartupError" && typeof (error as StartupError).variable === "string";

/** A URL as it may be shown: without its password. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
  }
}

/**
 * Runs a process's start-up. A StartupError becomes its sentence and exit code 2; anything else
 * that fails start-up is one line with its message and exit code 1. After start-up, a failure
 * that escaped every handler is logged and ends the process (exit 1) for its supervisor to
 * restart: it is a last resort that no request may reach (the fuzz test checks it never fires).
 */
export async function runMain(name: string, start: () => Promise<void>): Promise<void> {
  installLastResort(name);
  try {
    await start();
  } catch (error) {
    if (isStartupError(error)) {
      process.stderr.write(`${name} cannot start: ${error.variable}: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`${name} cannot start: ${(error as Error)?.message ?? String(error)}\n`);
    process.exit(1);
  }
}

/**
 * Logs and exits on an uncaught exception or unhandled rejection. In tests the runner plays this
 * part: vitest fails a run in which any error escapes, which is how the suites show no route
 * reaches it.
 */
function installLastResort(name: string): void {
  const fail = (kind: string) => (error: unknown) => {
    process.stderr.write(`${JSON.stringify({ level: 60, service: name, msg: `${kind}; the process stops`, err: String((error as Error)?.stack ?? error) })}\n`);
    process.exit(1);
  };
  process.once("uncaughtException", fail("uncaught exception"));
  process.once("unhandledRejection", fail("unhandled promise rejection"));
}
