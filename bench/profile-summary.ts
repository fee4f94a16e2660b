/**
 * Summarises V8 CPU profiles (`node --cpu-prof`, or BENCH_PROFILE=1 runs of the harness):
 *   tsx bench/profile-summary.ts <file.cpuprofile> [startUs endUs] [rows]
 * prints self and inclusive time by area (package, node internals, this repo's code, GC) and
 * the top functions by self time. startUs/endUs limit it to a window of the monotonic clock.
 */
import { formatProfile, summarizeProfile } from "./lib/profile";

const [file, start, end, rows] = process.argv.slice(2);
if (!file) {
  console.error("usage: tsx bench/profile-summary.ts <file.cpuprofile> [startUs endUs] [rows]");
  process.exit(2);
}
const window = start && end ? { startUs: Number(start), endUs: Number(end) } : undefined;
console.log(formatProfile(summarizeProfile(file, window, 40), Number(rows ?? 25)));
