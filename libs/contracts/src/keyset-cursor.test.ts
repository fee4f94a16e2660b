import { describe, expect, it } from "vitest";
import { decodeKeysetCursor, encodeKeysetCursor } from "./keyset-cursor";

describe("keyset cursor", () => {
  it("gives back the position it encoded", () => {
    const at = new Date("2026-01-02T03:04:05.678Z");
    const id = "6f1d7c1e-0a39-4c47-9d77-2c3e0d1b5a10";
    expect(decodeKeysetCursor(encodeKeysetCursor(at, id))).toEqual({ createdAt: at, id });
  });

  it("refuses with a 400 what the server did not issue", () => {
    for (const forged of ["", "abc", Buffer.from("not a date|6f1d7c1e-0a39-4c47-9d77-2c3e0d1b5a10").toString("base64url"), Buffer.from("2026-01-02T03:04:05.678Z|------------------------------------").toString("base64url")]) {
      expect(() => decodeKeysetCursor(forged)).toThrow(expect.objectContaining({ status: 400, code: "VALIDATION_FAILED" }));
    }
  });
});
