import { afterEach, describe, expect, it, vi } from "vitest";
import { Periodic } from "./periodic";

afterEach(() => {
  vi.useRealTimers();
});

describe("Periodic", () => {
  it("runs the task each interval and never two runs at once", async () => {
    vi.useFakeTimers();
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let finish!: () => void;
    const task = () => {
      runs += 1;
      active += 1;
      maxActive = Math.max(maxActive, active);
      return new Promise<void>((resolve) => (finish = resolve)).finally(() => (active -= 1));
    };
    const periodic = new Periodic(task, 100, () => undefined);
    periodic.start();
    await vi.advanceTimersByTimeAsync(350); // ticks at 100, 200, 300: the first run is still going
    expect(runs).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toBe(2);
    expect(maxActive).toBe(1);
    finish();
    await periodic.stop();
  });

  it("reports a failed run and keeps going", async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    let runs = 0;
    const periodic = new Periodic(async () => {
      runs += 1;
      throw new Error(`run ${runs}`);
    }, 50, (err) => errors.push(err));
    periodic.start();
    await vi.advanceTimersByTimeAsync(120);
    await periodic.stop();
    expect(runs).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(["run 1", "run 2"]);
  });

  it("stop waits for the run in progress", async () => {
    vi.useFakeTimers();
    let done = false;
    const periodic = new Periodic(() => new Promise<void>((resolve) => setTimeout(() => ((done = true), resolve()), 500)), 10, () => undefined);
    periodic.start();
    await vi.advanceTimersByTimeAsync(10);
    const stopped = periodic.stop();
    await vi.advanceTimersByTimeAsync(500);
    await stopped;
    expect(done).toBe(true);
  });
});
