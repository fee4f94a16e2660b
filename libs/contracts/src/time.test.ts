import { describe, expect, it } from "vitest";
import { isoTimestamp, ManualClock, systemClock } from "./time";

describe("isoTimestamp", () => {
  it("formats a Date in UTC with an explicit +00:00 offset and milliseconds", () => {
    const text = isoTimestamp(new Date("2026-11-22T06:53:03.123Z"));
    expect(text).toBe("2026-11-22T06:53:03.123+00:00");
    expect(text.endsWith("+00:00")).toBe(true);
    expect(text).not.toContain("Z");
  });

  it("accepts a string with another offset and converts it to UTC", () => {
    expect(isoTimestamp("2026-11-22T08:53:03.123+02:00")).toBe("2026-11-22T06:53:03.123+00:00");
  });

  it("accepts epoch milliseconds", () => {
    expect(isoTimestamp(0)).toBe("1970-01-01T00:00:00.000+00:00");
  });

  it.each([new Date("2026-01-01T00:00:00.000Z"), new Date("2024-02-29T23:59:59.999Z"), new Date(1_700_000_000_001)])(
    "round-trips %s through Date",
    (date) => {
      const text = isoTimestamp(date);
      expect(text.endsWith("+00:00")).toBe(true);
      expect(new Date(text).getTime()).toBe(date.getTime());
      expect(isoTimestamp(text)).toBe(text);
    },
  );
});

describe("ManualClock", () => {
  it("starts at the given time and at 2026-01-01 by default", () => {
    expect(new ManualClock("2026-05-05T05:05:05.000Z").now().toISOString()).toBe("2026-05-05T05:05:05.000Z");
    expect(new ManualClock(new Date(1000)).now().getTime()).toBe(1000);
    expect(new ManualClock().now().toISOString()).toBe("2026-01-01T00:00:00.000Z");
  });

  it("stands still until advanced", () => {
    const clock = new ManualClock("2026-01-01T00:00:00.000Z");
    const a = clock.now().getTime();
    expect(clock.now().getTime()).toBe(a);
    clock.advance(1500);
    expect(clock.now().getTime()).toBe(a + 1500);
    clock.advance(500);
    expect(clock.now().toISOString()).toBe("2026-01-01T00:00:02.000Z");
  });

  it("moves to an absolute time with set, backwards too", () => {
    const clock = new ManualClock("2026-01-01T00:00:00.000Z");
    clock.set("2030-06-01T12:00:00.000Z");
    expect(clock.now().toISOString()).toBe("2030-06-01T12:00:00.000Z");
    clock.set(new Date("2020-01-01T00:00:00.000Z"));
    expect(clock.now().toISOString()).toBe("2020-01-01T00:00:00.000Z");
  });

  it("returns a fresh Date so callers cannot move the clock", () => {
    const clock = new ManualClock("2026-01-01T00:00:00.000Z");
    const d = clock.now();
    d.setFullYear(1999);
    expect(clock.now().toISOString()).toBe("2026-01-01T00:00:00.000Z");
    expect(clock.now()).not.toBe(clock.now());
  });
});

describe("systemClock", () => {
  it("reads the real time", () => {
    const before = Date.now();
    const t = systemClock.now().getTime();
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Date.now());
  });
});
