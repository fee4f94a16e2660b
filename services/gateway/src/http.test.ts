import { describe, expect, it } from "vitest";
import { AppError, appError } from "@intentmesh/contracts";
import { errorHandler, etagOf, parseIfMatch, RETRY_AFTER_SECONDS } from "./http";
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

describe("errorHandler's Retry-After", () => {
  const answer = (error: unknown) => {
    const headers: Record<string, string> = {};
    let status = 0;
    const res = {
      headersSent: false,
      set: (name: string, value: string) => void (headers[name] = value),
      get: () => "request-1",
      status: (code: number) => ((status = code), res),
      json: () => res,
    };
    const silent = { error: () => undefined } as unknown as Parameters<typeof errorHandler>[0];
    errorHandler(silent)(error, { method: "POST", path: "/x" } as never, res as never, () => undefined);
    return { status, headers };
  };

  it("is sent for a conflict the catalogue marks as resolving by itself, with the catalogue's seconds", () => {
    expect(answer(appError("DISPATCH_IN_PROGRESS", "being sent"))).toEqual({ status: 409, headers: { "Retry-After": "1" } });
  });

  it("is not sent for a conflict that does not resolve by waiting", () => {
    expect(answer(appError("VERSION_MISMATCH", "stale"))).toEqual({ status: 409, headers: {} });
  });

  it("is sent for a dependency outage (503)", () => {
    expect(answer(appError("SERVICE_UNAVAILABLE", "down")).headers["Retry-After"]).toBe(String(RETRY_AFTER_SECONDS));
  });
});

describe("errorHandler's log level", () => {
  const levelOf = (error: unknown) => {
    const seen: string[] = [];
    const logger = { error: () => void seen.push("error"), info: () => void seen.push("info") } as unknown as Parameters<typeof errorHandler>[0];
    const res = { headersSent: false, set: () => res, get: () => "request-1", status: () => res, json: () => res };
    errorHandler(logger)(error, { method: "POST", path: "/x" } as never, res as never, () => undefined);
    return seen;
  };

  it("logs an ask that timed out (504 RESPONSE_TIMEOUT, an outcome the caller chose) at info", () => {
    expect(levelOf(appError("RESPONSE_TIMEOUT", "no answer within 5 s"))).toEqual(["info"]);
  });

  it("logs every other 5xx at error, and a 4xx not at all", () => {
    expect(levelOf(appError("UPSTREAM_TIMEOUT", "slow"))).toEqual(["error"]);
    expect(levelOf(appError("SERVICE_UNAVAILABLE", "down"))).toEqual(["error"]);
    expect(levelOf(appError("VERSION_MISMATCH", "stale"))).toEqual([]);
  });
});
