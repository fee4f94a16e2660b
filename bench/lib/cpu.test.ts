import { describe, expect, it } from "vitest";
import { CpuMeter } from "./cpu";

describe("CpuMeter", () => {
  it("counts the wake-ups of a group's threads: a process that sleeps and is woken 20 times shows at least 20", async () => {
    const meter = new CpuMeter([{ name: "self", pids: () => [process.pid] }]);
    meter.begin();
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 2));
    const report = meter.end();
    if (process.platform !== "linux") return expect(report.wakeups.self).toBe(0);
    expect(report.wakeups.self).toBeGreaterThanOrEqual(20);
    expect(report.cores.self).toBeGreaterThanOrEqual(0);
  });
});
