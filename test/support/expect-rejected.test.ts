import { IntentmeshError, type ErrorBody, type ErrorCode } from "@intentmesh/sdk";
import { describe, expect, it } from "vitest";
import { expectRejected } from "./e2e-helpers";

// The e2e tests assert refusals through expectRejected: it must fail whenever the refusal is not
// the one named, or a test would pass on a broken rule.
const refusal = (status: number, code: ErrorCode, body: ErrorBody = { code, message: "refused", details: { field: "x" } }) =>
  Promise.reject(new IntentmeshError(code, body.message, status, body, "intentsGet"));

describe("expectRejected", () => {
  it("answers the error of a refusal with the named status and code, its details readable", async () => {
    const error = await expectRejected(refusal(409, "VERSION_MISMATCH"), 409, "VERSION_MISMATCH");
    expect(error).toBeInstanceOf(IntentmeshError);
    expect(error.details).toEqual({ field: "x" });
  });

  it("fails on a success", async () => {
    await expect(expectRejected(Promise.resolve({ id: "1" }), 404, "INTENT_NOT_FOUND")).rejects.toThrow(/got a success/);
  });

  it("fails on another status or another code", async () => {
    await expect(expectRejected(refusal(409, "VERSION_MISMATCH"), 412, "VERSION_MISMATCH")).rejects.toThrow();
    await expect(expectRejected(refusal(409, "VERSION_MISMATCH"), 409, "INVALID_TRANSITION")).rejects.toThrow();
  });

  it("fails on an error body without a message or details, and on an error that is not the client's", async () => {
    await expect(expectRejected(refusal(400, "VALIDATION_FAILED", { code: "VALIDATION_FAILED", message: "", details: {} }), 400, "VALIDATION_FAILED")).rejects.toThrow();
    await expect(expectRejected(refusal(400, "VALIDATION_FAILED", { code: "VALIDATION_FAILED", message: "bad" }), 400, "VALIDATION_FAILED")).rejects.toThrow();
    await expect(expectRejected(Promise.reject(new Error("socket hang up")), 400, "VALIDATION_FAILED")).rejects.toThrow();
  });
});
