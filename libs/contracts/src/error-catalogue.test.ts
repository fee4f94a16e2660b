import { describe, expect, it } from "vitest";
import { isErrorCode, listErrors, retryAfterSecondsOf } from "./error-catalogue";

describe("error catalogue", () => {
  it("lists every code with an HTTP error status and a title", () => {
    const all = listErrors();
    expect(all.length).toBeGreaterThan(60);
    for (const error of all) {
      expect(error.status, error.code).toBeGreaterThanOrEqual(400);
      expect(error.status, error.code).toBeLessThan(600);
      expect(error.title.length, error.code).toBeGreaterThan(0);
    }
    expect(isErrorCode("LEASE_HELD")).toBe(true);
    expect(isErrorCode("NO_SUCH_CODE")).toBe(false);
  });

  it("marks only conflicts that resolve by waiting with a Retry-After", () => {
    expect(retryAfterSecondsOf("DISPATCH_IN_PROGRESS")).toBe(1);
    expect(retryAfterSecondsOf("VERSION_MISMATCH")).toBeUndefined();
    expect(retryAfterSecondsOf("NO_SUCH_CODE")).toBeUndefined();
  });
});
