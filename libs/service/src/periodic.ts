import { metrics } from "@intentmesh/telemetry";
/**
 * Runs a task every `intervalMs`, never two runs at once (a tick that finds the previous run
 * still going is skipped), and lets `stop` wait for the run in progress. The timer does not keep
 * the process alive.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly task: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.task()
        .catch(this.onError)
        .finally(() => (this.running = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}

/** A sweeper of a service: `sweep()` is one pass (tests call it directly); start/stop run it periodically. */
export abstract class Sweeper {
  private readonly periodic: Periodic;

  constructor(intervalMs: number, logger: { warn(obj: object, msg: string): void }, name: string) {
    this.periodic = new Periodic(() => this.measuredSweep(name), intervalMs, (err) => logger.warn({ err }, `${name} failed; next tick retries`));
  }

  /** One pass, counted and timed (intentmesh_sweeper_*). */
  private async measuredSweep(name: string): Promise<number> {
    const end = metrics.sweeperDuration.startTimer({ sweeper: name });
    try {
      const actions = await this.sweep();
      metrics.sweeperRuns.inc({ sweeper: name, outcome: "ok" });
      if (actions > 0) metrics.sweeperActions.inc({ sweeper: name }, actions);
      return actions;
    } catch (error) {
      metrics.sweeperRuns.inc({ sweeper: name, outcome: "failed" });
      throw error;
    } finally {
      end();
    }
  }

  abstract sweep(): Promise<number>;

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }
}
