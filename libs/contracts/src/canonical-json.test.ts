import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { canonicalJson, sameCanonicalJson } from "./canonical-json";

/** RFC 8785 as it was first written here (map, filter, join): the loops that replaced it must give the same text. */
function reference(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("not finite");
      return JSON.stringify(value);
    case "string":
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map(reference).join(",")}]`;
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record)
        .filter((key) => record[key] !== undefined)
        .sort();
      return `{${keys.map((key) => `${JSON.stringify(key)}:${reference(record[key])}`).join(",")}}`;
    }
    default:
      throw new TypeError(typeof value);
  }
}

describe("canonicalJson", () => {
  it("sorts keys by UTF-16 code units at every depth, skips undefined members, prints numbers and strings as JSON.stringify", () => {
    expect(canonicalJson({ b: 1, a: [true, null, { d: "x", c: -0 }], "\uE000": 1, "\uD83D\uDE00": 2, u: undefined })).toBe(
      '{"a":[true,null,{"c":0,"d":"x"}],"b":1,"\uD83D\uDE00":2,"\uE000":1}',
    );
    expect(canonicalJson([])).toBe("[]");
    expect(canonicalJson({})).toBe("{}");
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/not finite/);
  });

  it("gives the text of the reference implementation for any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(reference(value));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("sameCanonicalJson", () => {
  /** The definition: both have a canonical form, and it is the same text. */
  const sameByText = (a: unknown, b: unknown) => {
    try {
      return canonicalJson(a) === canonicalJson(b);
    } catch {
      return false;
    }
  };

  it("agrees with comparing canonical texts, for equal values, reordered keys and near misses", () => {
    // A value, the same value rebuilt with its keys in reverse order, and a value that differs a little.
    const reordered = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(reordered);
      if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reordered(v)]));
      return value;
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(sameCanonicalJson(a, reordered(a))).toBe(true);
        expect(sameCanonicalJson(a, b)).toBe(sameByText(a, b));
        expect(sameCanonicalJson({ p: a }, { p: a, q: 1 })).toBe(false);
        expect(sameCanonicalJson([a], [a, a])).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it("treats -0 as 0, skips undefined members as the canonical text does, and refuses what has no canonical form", () => {
    expect(sameCanonicalJson({ n: -0 }, { n: 0 })).toBe(true);
    expect(sameCanonicalJson({ a: 1, u: undefined }, { a: 1 })).toBe(true);
    expect(sameCanonicalJson({ a: "1" }, { a: 1 })).toBe(false);
    expect(sameCanonicalJson([1, 2], { 0: 1, 1: 2 })).toBe(false);
    expect(sameCanonicalJson({ n: Number.NaN }, { n: Number.NaN })).toBe(false);
    expect(sameCanonicalJson(null, {})).toBe(false);
  });
});
