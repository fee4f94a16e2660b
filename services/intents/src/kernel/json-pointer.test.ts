import { describe, expect, it } from "vitest";
import { formatPointer, parsePointer, PointerError } from "./json-pointer";

describe("parsePointer (RFC 6901)", () => {
  it("reads the empty string as the whole document", () => {
    expect(parsePointer("")).toEqual([]);
  });

  it("reads '/' as the member named by the empty string", () => {
    expect(parsePointer("/")).toEqual([""]);
  });

  it("splits reference tokens", () => {
    expect(parsePointer("/a/b/0")).toEqual(["a", "b", "0"]);
  });

  it("reads a path without a leading slash as if it had one", () => {
    expect(parsePointer("a/b")).toEqual(parsePointer("/a/b"));
    expect(parsePointer("research")).toEqual(["research"]);
  });

  it("unescapes ~1 to / and ~0 to ~", () => {
    expect(parsePointer("/a~1b")).toEqual(["a/b"]);
    expect(parsePointer("/m~0n")).toEqual(["m~n"]);
  });

  it("unescapes ~01 to the literal ~1, not to /", () => {
    expect(parsePointer("/~01")).toEqual(["~1"]);
    expect(parsePointer("/~10")).toEqual(["/0"]);
  });

  it.each(["/~2", "/a~", "/~", "/a~b", "x~3y"])("rejects the invalid escape in %j", (path) => {
    expect(() => parsePointer(path)).toThrow(PointerError);
  });
});

describe("formatPointer", () => {
  it("escapes ~ and / and round-trips through parsePointer", () => {
    const tokens = ["a/b", "m~n", "~1", "plain", ""];
    const pointer = formatPointer(tokens);
    expect(pointer).toBe("/a~1b/m~0n/~01/plain/");
    expect(parsePointer(pointer)).toEqual(tokens);
  });

  it("formats no tokens as the empty pointer", () => {
    expect(formatPointer([])).toBe("");
  });
});
