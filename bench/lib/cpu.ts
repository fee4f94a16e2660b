import fs from "node:fs";
import os from "node:os";

/**
 * CPU time of the processes in play, from /proc (Linux only; elsewhere every figure is 0).
 * A group is a named set of pids, or every process with a given command name (postgres,
 * nats-server), whose backends may come and go during a run.
 */
export type Group = { name: string; pids: () => number[] };

const TICKS = 100; // USER_HZ on Linux

function cpuTicks(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state): utime is field 14, stime field 15.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

export function pidsByCommand(command: string): number[] {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, "utf8").trim() === command) pids.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return pids;
}

function machineTicks(): { busy: number; total: number } {
  try {
    const line = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!;
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    const total = values.reduce((a, b) => a + b, 0);
    const idle = (values[3] ?? 0) + (values[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/**
 * How many times a process's threads went to sleep and were woken (the sum of
 * voluntary_ctxt_switches over /proc/<pid>/task/*): about one per message a process waits for and
 * gets. On a virtual machine each such wake-up costs the kernel tens of microseconds between the
 * writer and the sleeper, so wake-ups per request show how many hops a request makes.
 */
function wakeups(pid: number): number | undefined {
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let total = 0;
  for (const task of tasks) {
    try {
      const status = fs.readFileSync(`/proc/${pid}/task/${task}/status`, "utf8");
      const match = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status);
      if (match) total += Number(match[1]);
    } catch {
      /* the thread ended */
    }
  }
  return total;
}

export interface CpuReport {
  /** Cores used on average by each group over the window (1.0 = one core fully busy). */
  cores: Record<string, number>;
  /** Wake-ups of each group's threads over the window (see wakeups()). */
  wakeups: Record<string, number>;
  /** Share of the whole machine that was busy over the window, 0..1. */
  machineBusy: number;
  seconds: number;
}

export class CpuMeter {
  private start = new Map<string, Map<number, { ticks: number; wakeups: number }>>();
  private startMachine = machineTicks();
  private startTime = performance.now();

  constructor(private readonly groups: Group[]) {}

  begin(): void {
    this.start = new Map(this.groups.map((group) => [group.name, this.sample(group)]));
    this.startMachine = machineTicks();
    this.startTime = performance.now();
  }

  end(): CpuReport {
    const seconds = (performance.now() - this.startTime) / 1000;
    const cores: Record<string, number> = {};
    const woken: Record<string, number> = {};
    for (const group of this.groups) {
      const before = this.start.get(group.name) ?? new Map<number, { ticks: number; wakeups: number }>();
      let ticks = 0;
      let count = 0;
      for (const [pid, now] of this.sample(group)) {
        ticks += now.ticks - (before.get(pid)?.ticks ?? 0);
        count += now.wakeups - (before.get(pid)?.wakeups ?? 0);
      }
      cores[group.name] = round(ticks / TICKS / seconds, 2);
      woken[group.name] = count;
    }
    const machine = machineTicks();
    const total = machine.total - this.startMachine.total;
    return { cores, wakeups: woken, machineBusy: total > 0 ? round((machine.busy - this.startMachine.busy) / total, 2) : 0, seconds: round(seconds, 2) };
  }

  private sample(group: Group): Map<number, { ticks: number; wakeups: number }> {
    const out = new Map<number, { ticks: number; wakeups: number }>();
    for (const pid of group.pids()) {
      const ticks = cpuTicks(pid);
      if (ticks !== undefined) out.set(pid, { ticks, wakeups: wakeups(pid) ?? 0 });
    }
    return out;
  }
}

export const cpuCount = () => os.cpus().length;

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
