/**
 * Human output by default (tables, relative times, colour only on a terminal), JSON with --json.
 * Colour follows the usual conventions: NO_COLOR turns it off, FORCE_COLOR on, --no-color off.
 */
export interface OutputOptions {
  json: boolean;
  color: boolean;
  /** "Now" for relative times (tests and recordings pin it). */
  now?: () => number;
  write?: (text: string) => void;
}

const CODES = { bold: [1, 22], dim: [2, 22], red: [31, 39], green: [32, 39], yellow: [33, 39], blue: [34, 39], magenta: [35, 39], cyan: [36, 39] } as const;
export type Style = keyof typeof CODES;

export function colorWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv, flag: boolean | undefined): boolean {
  if (flag === false) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return true;
  return Boolean(stream.isTTY) && env.TERM !== "dumb";
}

export class Output {
  readonly json: boolean;
  readonly color: boolean;
  private readonly now: () => number;
  private readonly out: (text: string) => void;

  constructor(options: OutputOptions) {
    this.json = options.json;
    this.color = options.color;
    this.now = options.now ?? Date.now;
    this.out = options.write ?? ((text) => void process.stdout.write(text));
  }

  style(text: string, ...styles: Style[]): string {
    if (!this.color) return text;
    return styles.reduce((acc, style) => `\u001b[${CODES[style][0]}m${acc}\u001b[${CODES[style][1]}m`, text);
  }

  line(text = ""): void {
    this.out(`${text}\n`);
  }

  /** The value as JSON: pretty for one document, one line per value for a stream (NDJSON). */
  data(value: unknown, streaming = false): void {
    this.out(`${streaming ? JSON.stringify(value) : JSON.stringify(value, null, 2)}\n`);
  }

  /** Aligned columns under upper-case headers; an empty list says so. */
  table<T>(rows: readonly T[], columns: readonly { header: string; value: (row: T) => string; style?: (row: T) => Style | undefined; max?: number }[], empty = "(none)"): void {
    if (!rows.length) return this.line(this.style(empty, "dim"));
    const cells = rows.map((row) => columns.map((column) => clip(column.value(row), column.max)));
    const widths = columns.map((column, i) => Math.max(column.header.length, ...cells.map((row) => width(row[i]!))));
    const pad = (text: string, i: number) => (i === columns.length - 1 ? text : text + " ".repeat(widths[i]! - width(text)));
    this.line(this.style(columns.map((column, i) => pad(column.header, i)).join("  "), "bold"));
    rows.forEach((row, r) => {
      this.line(
        columns
          .map((column, i) => {
            const style = column.style?.(row);
            const text = pad(cells[r]![i]!, i);
            return style ? this.style(text, style) : text;
          })
          .join("  ")
          .trimEnd(),
      );
    });
  }

  /** `label  value` lines, labels aligned. */
  fields(entries: readonly [string, string][]): void {
    const w = Math.max(...entries.map(([label]) => label.length));
    for (const [label, value] of entries) this.line(`${this.style(label.padEnd(w), "dim")}  ${value}`);
  }

  /** "12s ago", "3m ago", "in 2h"; the timestamp itself when unreadable. */
  ago(timestamp: string | null | undefined): string {
    if (!timestamp) return "-";
    const at = Date.parse(timestamp);
    if (!Number.isFinite(at)) return timestamp;
    return relative(at - this.now());
  }

  status(status: string): string {
    return this.style(status, statusStyle(status) ?? "bold");
  }
}

export function relative(deltaMs: number): string {
  const abs = Math.abs(deltaMs);
  if (abs < 5_000) return "just now";
  const units: [number, string][] = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "m"],
    [1_000, "s"],
  ];
  const [size, unit] = units.find(([ms]) => abs >= ms)!;
  const amount = `${Math.floor(abs / size)}${unit}`;
  return deltaMs < 0 ? `${amount} ago` : `in ${amount}`;
}

export function statusStyle(status: string): Style | undefined {
  switch (status) {
    case "active":
    case "running":
    case "approved":
    case "completed":
      return "green";
    case "suspended_awaiting_input":
    case "draining":
    case "pending":
    case "claimed":
    case "ready":
      return "yellow";
    case "blocked":
    case "failed":
    case "denied":
    case "unhealthy":
    case "dead":
      return "red";
    case "abandoned":
    case "cancelled":
    case "deregistered":
    case "draft":
      return "dim";
    default:
      return undefined;
  }
}

const width = (text: string) => [...text].length;
const clip = (text: string, max = 60) => (width(text) > max ? `${[...text].slice(0, max - 1).join("")}…` : text);

/** A JSON value in one line, short. */
export function brief(value: unknown, max = 80): string {
  if (value === undefined) return "";
  return clip(typeof value === "string" ? value : JSON.stringify(value), max);
}
