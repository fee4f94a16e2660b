import { describe, expect, it } from "vitest";
import { errorCatalogue } from "./error-catalogue";
import { appError, AppError, errors, isAppError, type WireError } from "./errors";

describe("AppError", () => {
  it("is an Error with code, the catalogue's status, details and extra", () => {
    const e = new AppError("LEASE_HELD", "it failed", { a: 1 }, { b: 2 });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("AppError");
    expect(e.message).toBe("it failed");
    expect(e.code).toBe("LEASE_HELD");
    expect(e.status).toBe(errorCatalogue.LEASE_HELD.status);
    expect(e.details).toEqual({ a: 1 });
    expect(e.extra).toEqual({ b: 2 });
    expect(isAppError(e)).toBe(true);
    expect(isAppError(new Error("x"))).toBe(false);
    expect(isAppError({ code: "X", status: 400 })).toBe(false);
  });

  it("defaults details and extra to empty objects", () => {
    const e = new AppError("BAD_REQUEST", "m");
    expect(e.details).toEqual({});
    expect(e.extra).toEqual({});
  });

  it("round-trips through toWire and fromWire, also through JSON", () => {
    const e = appError("VERSION_MISMATCH", "too old", { id: "i1", nested: { n: [1] } }, { current_version: 7 });
    const wire = JSON.parse(JSON.stringify(e.toWire())) as WireError;
    expect(wire).toEqual({
      code: "VERSION_MISMATCH",
      status: 409,
      message: "too old",
      details: { id: "i1", nested: { n: [1] } },
      extra: { current_version: 7 },
    });
    const back = AppError.fromWire(wire);
    expect(back).toBeInstanceOf(AppError);
    expect(back.code).toBe(e.code);
    expect(back.status).toBe(e.status);
    expect(back.message).toBe(e.message);
    expect(back.details).toEqual(e.details);
    expect(back.extra).toEqual(e.extra);
    expect(back.toWire()).toEqual(e.toWire());
  });

  it("fromWire fills missing details and extra with {}", () => {
    const back = AppError.fromWire({ code: "BAD_REQUEST", status: 400, message: "m" });
    expect(back.details).toEqual({});
    expect(back.extra).toEqual({});
  });

  it("fromWire turns a code this process does not know into 502 UPSTREAM_ERROR naming it", () => {
    const back = AppError.fromWire({ code: "FROM_A_NEWER_REPLICA", status: 418, message: "m", details: { a: 1 } });
    expect(back.code).toBe("UPSTREAM_ERROR");
    expect(back.status).toBe(502);
    expect(back.details).toEqual({ a: 1, upstream_code: "FROM_A_NEWER_REPLICA", upstream_status: 418 });
  });

  it("within keeps code, status and extra, prefixes the message and adds details", () => {
    const e = appError("VERSION_MISMATCH", "too old", { id: "i1" }, { current_version: 7 }).within("entries[2]: ", { item: 2 });
    expect(e.toWire()).toEqual({ code: "VERSION_MISMATCH", status: 409, message: "entries[2]: too old", details: { id: "i1", item: 2 }, extra: { current_version: 7 } });
  });

  it("toBody puts extra fields at the top level next to code, message and details", () => {
    const body = new AppError("INVALID_RESPONSE_VALUE", "pick one", { field: "value" }, { valid_choices: ["a", "b"] }).toBody();
    expect(body).toEqual({ code: "INVALID_RESPONSE_VALUE", message: "pick one", details: { field: "value" }, valid_choices: ["a", "b"] });
    expect(body).not.toHaveProperty("status");
    expect(body).not.toHaveProperty("extra");
  });

  it("toBody does not let extra override code, message or details", () => {
    const body = new AppError("BAD_REQUEST", "real message", { real: true }, { code: "FAKE", message: "fake", details: {} }).toBody();
    expect(body.code).toBe("BAD_REQUEST");
    expect(body.message).toBe("real message");
    expect(body.details).toEqual({ real: true });
  });
});

describe("errors constructors", () => {
  it("versionMismatch is 409 VERSION_MISMATCH with current_version at the top level of the body", () => {
    const e = errors.versionMismatch("intent", "abc", 5, 3);
    expect(e.code).toBe("VERSION_MISMATCH");
    expect(e.status).toBe(409);
    expect(e.extra).toEqual({ current_version: 5 });
    expect(e.details).toMatchObject({ current_version: 5, expected_version: 3 });
    const body = e.toBody();
    expect(body.current_version).toBe(5);
    expect(body.code).toBe("VERSION_MISMATCH");
    expect(AppError.fromWire(e.toWire()).toBody()).toEqual(body);
  });

  it("badIfMatch is 400 INVALID_IF_MATCH", () => {
    const e = errors.badIfMatch("abc");
    expect([e.code, e.status]).toEqual(["INVALID_IF_MATCH", 400]);
    expect(e.message).toContain('"abc"');
  });

  it("uses the statuses of spec section 7", () => {
    expect(errors.validation("bad").status).toBe(400);
    expect(errors.validation("bad").code).toBe("VALIDATION_FAILED");
    expect(errors.unauthorized().status).toBe(401);
    expect(errors.forbidden("no").status).toBe(403);
    const nf = errors.notFound("intent", "i1");
    expect([nf.code, nf.status]).toEqual(["INTENT_NOT_FOUND", 404]);
    expect(nf.details).toEqual({ resource: "intent", id: "i1" });
    expect(errors.preconditionRequired("intent").status).toBe(428);
    expect(errors.payloadTooLarge("1mb").status).toBe(413);
    expect(errors.internal().status).toBe(500);
  });
});
