import { describe, expect, it } from "vitest";
import { AppError } from "@intentmesh/contracts";
import { etagOf, parseIfMatch } from "./http";
import { catchError } from "../../../test/support/errors";


describe("parseIfMatch", () => {
  it.each([
    ["3", 3],
    ['"3"', 3],
    ['W/"3"', 3],
    ['  W/"3"  ', 3],
    [' "3" ', 3],
    [" 3 ", 3],
    ["0", 0],
    ['"42"', 42],
    ["123456789", 123456789],
  ])("reads %j as %d", (header, version) => {
    expect(parseIfMatch(header)).toBe(version);
  });

  it.each([undefined, "", "   "])("reads %j as absent (null)", (header) => {
    expect(parseIfMatch(header)).toBeNull();
  });

  it.each(["abc", "3.5", '"-1"', "-1", '"3", "4"', 'W/"x"', "w/3x", '"3"x', "1e3", '"3', '3"', "W/3"])(
    "refuses %j with INVALID_IF_MATCH 400",
    (header) => {
      const error = catchError(() => parseIfMatch(header));
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe("INVALID_IF_MATCH");
      expect((error as AppError).status).toBe(400);
    },
  );

  it("round-trips the ETag it produces", () => {
    expect(etagOf(7)).toBe('"7"');
    expect(parseIfMatch(etagOf(7))).toBe(7);
  });
});
