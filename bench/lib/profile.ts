import fs from "node:fs";

/** The parts of a V8 .cpuprofile (from `node --cpu-prof`) this summary reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  /** What the summary covers: the whole profile, or one scenario's measured window. */
  label: string;
  /** Wall time the profile covers, and how much of it the main thread was not idle. */
  wallMs: number;
  busyMs: number;
  /**
   * The CPU the whole process used in the same window (every thread, from /proc), where known.
   * V8's sampler ticks on wall time: a main thread that is ready to run but waits for a core
   * still gets samples, in the call it was in (mostly a socket write that woke another process,
   * which then took the core). On a busy machine busyMs is therefore above the CPU used, and
   * the shares are of busy time, not of CPU.
   */
  processCpuMs?: number;
  /** Self time by where the code lives (package, node internals, this repo's libs and services, GC). */
  selfByArea: { area: string; ms: number; share: number }[];
  /** Time with at least one frame of the area on the stack: what a package costs with everything it calls. */
  inclusiveByArea: { area: string; ms: number; share: number }[];
  topSelf: { fn: string; area: string; ms: number; share: number }[];
}

const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

export function areaOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === "(garbage collector)") return "GC";
    if (functionName === "(program)") return "(program)";
    if (functionName === "(idle)") return "(idle)";
    return "native/builtin";
  }
  const pnpm = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pnpm) return pnpm[1]!;
  const plain = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (plain) return plain[1]!;
  if (url.startsWith("node:")) return "node internals";
  const repo = /\/(libs|services|bench)\/([^/]+)\//.exec(url);
  if (repo) return repo[1] === "libs" ? `@intentmesh/${repo[2]}` : `${repo[1]}/${repo[2]}`;
  return "other";
}

export function loadProfile(file: string): CpuProfile {
  return JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
}

/**
 * Self and inclusive time of a profile, optionally only of the samples taken within `window`
 * (microseconds of the monotonic clock, which V8 profiles share with process.hrtime).
 */
export function summarizeProfile(file: string, window?: { startUs: number; endUs: number }, top = 25, loaded?: CpuProfile): ProfileSummary {
  const profile = loaded ?? loadProfile(file);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  // A sample's duration is the delta to the next sample (the last one gets the mean).
  const from = window ? Math.max(window.startUs, profile.startTime) : profile.startTime;
  const to = window ? Math.min(window.endUs, profile.endTime) : profile.endTime;
  const total = Math.max(0, to - from);
  const mean = profile.samples.length ? (profile.endTime - profile.startTime) / profile.samples.length : 0;
  const selfUs = new Map<number, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < from || at > to) continue;
    const us = i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1]! : mean;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, us));
  }

  const areaOfNode = new Map<number, string>();
  for (const node of profile.nodes) areaOfNode.set(node.id, areaOf(node.callFrame.url, node.callFrame.functionName));

  let idleUs = 0;
  const selfArea = new Map<string, number>();
  const inclusiveArea = new Map<string, number>();
  const selfFn = new Map<string, { area: string; us: number }>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const name = node.callFrame.functionName;
    if (name === "(idle)") {
      idleUs += us;
      continue;
    }
    const area = areaOfNode.get(id)!;
    selfArea.set(area, (selfArea.get(area) ?? 0) + us);
    const key = SPECIAL.has(name) ? name : `${name || "(anonymous)"} ${shortUrl(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
    const entry = selfFn.get(key) ?? { area, us: 0 };
    entry.us += us;
    selfFn.set(key, entry);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const a = areaOfNode.get(at)!;
      // Everything runs under node's event loop and builtins: those say nothing on the stack.
      if (a === "(program)" || a === "(idle)" || a === "native/builtin" || a === "node internals") continue;
      seen.add(a);
    }
    for (const a of seen) inclusiveArea.set(a, (inclusiveArea.get(a) ?? 0) + us);
  }
  const busyUs = Math.max(1, total - idleUs);
  const rank = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, ms: Math.round(us / 1000), share: round(us / busyUs) }));
  return {
    file,
    label: "whole run",
    wallMs: Math.round(total / 1000),
    busyMs: Math.round(busyUs / 1000),
    selfByArea: rank(selfArea),
    inclusiveByArea: rank(inclusiveArea).slice(0, 20),
    topSelf: [...selfFn]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, top)
      .map(([fn, { area, us }]) => ({ fn, area, ms: Math.round(us / 1000), share: round(us / busyUs) })),
  };
}

export function formatProfile(summary: ProfileSummary, rows = 15): string {
  const pct = (share: number) => `${(share * 100).toFixed(1)}%`.padStart(6);
  const lines = [
    `${summary.label}: ${summary.wallMs} ms profiled, main thread busy ${summary.busyMs} ms (${((summary.busyMs / Math.max(1, summary.wallMs)) * 100).toFixed(0)}%)` +
      (summary.processCpuMs === undefined
        ? ""
        : `; the process used ${summary.processCpuMs} ms of CPU (all threads): busy time also counts waiting for a core, which lands on the call that woke another process`),
    "  self time by area (share of busy time):",
    ...summary.selfByArea.slice(0, rows).map((r) => `    ${pct(r.share)}  ${r.area}`),
    "  inclusive time by area (on the stack):",
    ...summary.inclusiveByArea.slice(0, rows).map((r) => `    ${pct(r.share)}  ${r.area}`),
    "  top functions by self time:",
    ...summary.topSelf.slice(0, rows).map((r) => `    ${pct(r.share)}  ${r.fn}  [${r.area}]`),
  ];
  return lines.join("\n");
}

function shortUrl(url: string): string {
  const pnpm = /node_modules\/\.pnpm\/[^/]+\/node_modules\/(.*)$/.exec(url);
  if (pnpm) return pnpm[1]!;
  return url.replace(/^file:\/\/.*?\/(libs|services|bench)\//, "$1/");
}

const round = (value: number) => Math.round(value * 1000) / 1000;
