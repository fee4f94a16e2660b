/**
 * Timestamps on the wire are ISO 8601 in UTC with an explicit +00:00 offset
 * (2026-11-22T06:53:03.123+00:00), the form the spec's clients parse everywhere.
 */
export function isoTimestamp(value: Date | string | number): string {
  const date = value instanceof Date ? value : new Date(value);
  return date.toISOString().replace("Z", "+00:00");
}

/** An injectable clock: every time-driven rule reads `now()` from one of these. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests move by hand, so time-driven rules run without sleeping. */
export class ManualClock implements Clock {
  private current: number;
  constructor(start: Date | string = "2026-01-01T00:00:00.000Z") {
    this.current = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(at: Date | string): void {
    this.current = new Date(at).getTime();
  }
}
