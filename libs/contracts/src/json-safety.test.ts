import { describe, expect, it } from "vitest";
import { findInexactNumber, findUnsafeJsonValue, numberLiteralIsExact, parseJsonStrict } from "./json-safety";
import { fitPage, LIMITS } from "./common";

describe("numberLiteralIsExact", () => {
  it.each(["0", "1", "-1", "1.5", "1.50", "15e-1", "1e2", "1E+2", "0.1", "123456789", "9007199254740991", "1e21", "5e-324", "0.0", "1.7976931348623157e308"])("%s reads back as written", (literal) => {
    expect(numberLiteralIsExact(literal)).toBe(true);
  });
  it.each(["1e309", "-1e309", "-0", "-0.0", "1e-400", "9007199254740993", "123456789012345678901234567890", "0.1000000000000000055511151231257827"])("%s does not", (literal) => {
    expect(numberLiteralIsExact(literal)).toBe(false);
  });
});

describe("findInexactNumber", () => {
  it("skips digits inside strings, escaped quotes included", () => {
    expect(findInexactNumber('{"a":"1e309 \\" 9007199254740993","b":[1,2.5,-3]}')).toBeNull();
  });
  it("finds the first inexact literal anywhere", () => {
    expect(findInexactNumber('{"a":[1,{"b":-0}]}')).toBe("-0");
  });
});

describe("findUnsafeJsonValue", () => {
  it("names the place of a NUL, in a value or a key", () => {
    expect(findUnsafeJsonValue({ a: ["ok", "x\u0000"] })).toEqual({ problem: "NUL_CHARACTER", path: "/a/1" });
    expect(findUnsafeJsonValue({ "k/\u0000": 1 })).toEqual({ problem: "NUL_CHARACTER", path: "/k~1\u0000" });
  });
  it("finds lone surrogates, non-finite numbers, -0 and depth past the limit", () => {
    expect(findUnsafeJsonValue({ s: "\ud800" })?.problem).toBe("LONE_SURROGATE");
    expect(findUnsafeJsonValue({ n: Infinity })?.problem).toBe("NUMBER_NOT_REPRESENTABLE");
    expect(findUnsafeJsonValue([-0])?.problem).toBe("NUMBER_NOT_REPRESENTABLE");
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findUnsafeJsonValue(deep)?.problem).toBe("JSON_TOO_DEEP");
  });
  it("accepts a well-formed document with emoji (surrogate pairs)", () => {
    expect(findUnsafeJsonValue({ text: "ok 😀", n: [0, 1.5, -2] })).toBeNull();
  });
});

describe("parseJsonStrict", () => {
  it("parses what is safe and refuses each class with its code", () => {
    expect(parseJsonStrict('{"a":[1,"b"]}')).toEqual({ a: [1, "b"] });
    expect(() => parseJsonStrict("{")).toThrow(expect.objectContaining({ code: "INVALID_JSON", status: 400 }));
    expect(() => parseJsonStrict('{"n":1e309}')).toThrow(expect.objectContaining({ code: "NUMBER_NOT_REPRESENTABLE" }));
    expect(() => parseJsonStrict('"\\u0000"')).toThrow(expect.objectContaining({ code: "NUL_CHARACTER" }));
    expect(() => parseJsonStrict("[".repeat(10_000) + "]".repeat(10_000))).toThrow(expect.objectContaining({ code: "JSON_TOO_DEEP" }));
  });
});

describe("fitPage", () => {
  it("keeps the longest prefix within the page limit, and always one item", () => {
    const item = "x".repeat(LIMITS.pageBytes / 4);
    expect(fitPage([item, item, item, item, item]).items).toHaveLength(3);
    expect(fitPage([item, item]).cut).toBe(false);
    const huge = "y".repeat(LIMITS.pageBytes * 2);
    expect(fitPage([huge, item])).toEqual({ items: [huge], cut: true });
  });
});
